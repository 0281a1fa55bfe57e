/* SPDX-License-Identifier: MIT */
/* Time per woken wait on a watch set, against a blocking read, side by
 * side in one run, natively and under Wine.
 *
 * A thread echoes each byte it reads (a blocking read) from one pipe to
 * another. The main thread writes a byte, waits for the echo with the
 * strategy under test, and reads it:
 *   blocking  a plain blocking read (the floor),
 *   set-N     anypoll_set_wait on a set holding N idle pipes and the echo
 *             pipe's read end, then the read.
 * Each N is a block: its set and idle pipes are made and registered once,
 * before its timing (the registering time is reported apart), then
 * blocking and set-N phases alternate. "x set-1" compares blocks made
 * one after the other, the ratio to blocking phases moments apart.
 *
 * A round trip holds two wake-ups: the echo thread's (always a blocking
 * read) and the main thread's (the strategy). Hence, besides the round
 * trip and its ratio to blocking's, the table estimates the woken wait's
 * own ratio to a blocking read: (2 * rt / rt_blocking) - 1, which assumes
 * the two blocking wake-ups of a blocking round trip cost the same.
 *
 *   setwake [--n 1,64,1000] [--trips 2000] [--reps 15]
 *           [--pipe sync|sync-inherit|anypoll] [--csv FILE]
 *
 * --pipe sync: every pipe is a C runtime _pipe (on Windows a synchronous
 * pipe: the set parks a pooled helper thread in a zero-byte read on each).
 * --pipe sync-inherit: the same, inheritable (as _pipe makes them without
 * _O_NOINHERIT; on Windows the set then parks no read on them and peeks
 * at each every 16 ms instead, as another process may share them).
 * --pipe anypoll: every pipe comes from anypoll_pipe, the pipe the set can
 * wait on with no helper thread where the platform allows. This program
 * uses the public API only, so that the same source measures whatever
 * anypoll_pipe is in the build it is linked with. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#ifdef _WIN32
#  include <fcntl.h>
#  include <io.h>
#endif

#define MAX_REPS 101
#define MAX_N 8
#define QUIT 0xFF

static int use_anypoll_pipe;
static int inherit_pipes;

static void make_pipe(int fds[2]) {
  if (use_anypoll_pipe) {
    if (anypoll_pipe(fds) != 0)
      bench_die("anypoll_pipe");
  } else if (inherit_pipes) {
#ifdef _WIN32
    if (_pipe(fds, 4096, _O_BINARY) != 0)
      bench_die("_pipe");
#else
    bench_pipe(fds, 4096); /* the rule is Windows' alone */
#endif
  } else {
    bench_pipe(fds, 4096);
  }
}

/* The one place where this program reads and writes its pipes. An
 * anypoll_pipe end is read and written with anypoll_read/anypoll_write (on
 * Windows its read end is opened for overlapped I/O, which the C runtime's
 * _read does not support); a _pipe with the C runtime, so that its figures
 * carry no cost of ours. */
static long pipe_read(int fd, void *buf, size_t len) {
  if (use_anypoll_pipe)
    return anypoll_read(fd, buf, (unsigned)len);
  return bench_read(fd, buf, len);
}
static long pipe_write(int fd, const void *buf, size_t len) {
  if (use_anypoll_pipe)
    return anypoll_write(fd, buf, (unsigned)len);
  return bench_write(fd, buf, len);
}

struct echo_arg {
  int in, out;
};

static void echo_thread(void *p) {
  struct echo_arg *a = p;
  unsigned char b;
  while (pipe_read(a->in, &b, 1) == 1 && b != QUIT)
    if (pipe_write(a->out, &b, 1) != 1)
      break;
}

/* One phase: seconds per round trip. set is NULL for blocking. */
static double phase(anypoll_set *set, int to, int from, int trips) {
  unsigned char b = 'p', got;
  struct anypoll_event ev[4];
  double t0 = bench_now();
  for (int i = 0; i < trips; i++) {
    if (pipe_write(to, &b, 1) != 1)
      bench_die("write");
    if (set != NULL) {
      int r = anypoll_set_wait(set, ev, 4, -1);
      if (r != 1 || ev[0].fd != from || ev[0].events != POLLIN) {
        fprintf(stderr, "setwake: wait returned %d (fd %d, events %#x)\n", r,
                r > 0 ? ev[0].fd : -1, r > 0 ? ev[0].events : 0);
        exit(2);
      }
    }
    if (pipe_read(from, &got, 1) != 1)
      bench_die("read");
  }
  return (bench_now() - t0) / trips;
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  long ns_list[MAX_N];
  int nn = 0;
  {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", bench_arg(argc, argv, "--n", "1,64,1000"));
    for (char *tok = strtok(buf, ","); tok != NULL && nn < MAX_N;
         tok = strtok(NULL, ","))
      ns_list[nn++] = atol(tok);
  }
  int trips = (int)bench_arg_num(argc, argv, "--trips", 2000);
  int reps = (int)bench_arg_num(argc, argv, "--reps", 15);
  const char *kind = bench_arg(argc, argv, "--pipe", "sync");
  use_anypoll_pipe = strcmp(kind, "anypoll") == 0;
  inherit_pipes = strcmp(kind, "sync-inherit") == 0;
  if (!use_anypoll_pipe && !inherit_pipes && strcmp(kind, "sync") != 0) {
    fprintf(stderr, "setwake: --pipe sync, sync-inherit or anypoll\n");
    return 2;
  }
  if (reps < 1 || reps > MAX_REPS || trips < 1 || nn < 1)
    bench_die("bad arguments");
  long most = 0;
  for (int j = 0; j < nn; j++)
    most = ns_list[j] > most ? ns_list[j] : most;
  bench_raise_nofile(2 * most + 64);
  bench_csv_open(bench_arg(argc, argv, "--csv", NULL));

  int *idle = malloc(sizeof(int) * (size_t)(2 * most + 1));
  if (idle == NULL)
    bench_die("malloc");

  /* One block per N: its idle pipes are opened and registered (timed
   * apart), then blocking and set-N alternate, each repetition's pair run
   * moments apart; then the block's pipes leave the set and are closed.
   * Each set has idle pipes of its own, and only one set exists at a time:
   * the C runtime's 2048 descriptors hold 1000 pipes with both ends, not
   * 1065, and a pipe watched by two sets is a different case. The echo
   * pipes and thread are the block's own too: a pipe that was in an
   * earlier set is also a different case under Wine, which cannot end an
   * anypoll_pipe read end's association with the first set's port, so the
   * next set waits on it through a thread-pool wait (set_anypipe.c);
   * sharing them made every block after the first about
   * 1.45x slower whatever its N. */
  static double v[MAX_N][2][MAX_REPS];
  double reg_s[MAX_N], first_s[MAX_N];
  for (int j = 0; j < nn; j++) {
    long n = ns_list[j];
    int to[2], from[2];
    make_pipe(to);
    make_pipe(from);
    struct echo_arg ea = { to[0], from[1] };
    struct bench_thread *echo = bench_thread_start(echo_thread, &ea);
    for (long i = 0; i < n; i++) {
      int p[2];
      make_pipe(p);
      idle[i] = p[0];
      idle[n + i] = p[1];
    }
    double t0 = bench_now();
    anypoll_set *set = anypoll_set_new();
    if (set == NULL)
      bench_die("anypoll_set_new");
    for (long i = 0; i < n; i++)
      if (anypoll_set_add(set, idle[i], POLLIN, NULL) != 0)
        bench_die("anypoll_set_add");
    if (anypoll_set_add(set, from[0], POLLIN, NULL) != 0)
      bench_die("anypoll_set_add");
    reg_s[j] = bench_now() - t0;
    /* One round trip before the timing: on Windows the helpers of the
     * synchronous pipes may still be starting when the adds return, and
     * the first wake-up waits for them; registration's cost, shown apart. */
    {
      unsigned char b = 'p';
      struct anypoll_event ev;
      t0 = bench_now();
      if (pipe_write(to[1], &b, 1) != 1 || anypoll_set_wait(set, &ev, 1, -1) != 1 ||
          pipe_read(from[0], &b, 1) != 1)
        bench_die("first round trip");
      first_s[j] = bench_now() - t0;
    }
    for (int r = -1; r < reps; r++) { /* r = -1: untimed warm-up */
      for (int k = 0; k < 2; k++) {
        int s = (k + (r < 0 ? 0 : r)) % 2; /* 0 blocking, 1 set */
        double t = phase(s ? set : NULL, to[1], from[0],
                         r < 0 ? trips / 10 + 1 : trips);
        if (r >= 0)
          v[j][s][r] = t;
      }
    }
    if (anypoll_set_del(set, from[0]) != 0)
      bench_die("anypoll_set_del");
    for (long i = 0; i < n; i++)
      if (anypoll_set_del(set, idle[i]) != 0)
        bench_die("anypoll_set_del");
    anypoll_set_free(set);
    for (long i = 0; i < 2 * n; i++)
      bench_close(idle[i]);
    unsigned char q = QUIT;
    if (pipe_write(to[1], &q, 1) != 1)
      bench_die("write");
    bench_thread_join(echo);
    bench_close(to[0]);
    bench_close(to[1]);
    bench_close(from[0]);
    bench_close(from[1]);
  }

  printf("%s setwake: %s pipes, %d round trips x %d reps (medians)\n",
         BENCH_PLATFORM,
         use_anypoll_pipe ? "anypoll_pipe"
         : inherit_pipes  ? "inheritable _pipe"
                          : "_pipe",
         trips,
         reps);
  printf("%-10s %12s %12s %9s %13s %9s %10s %10s\n", "strategy", "blocking",
         "set", "x block", "wait x block", "x set-1", "register", "1st trip");
  printf("%-10s %12s %12s %9s %13s %9s %10s %10s\n", "", "rt us", "rt us", "",
         "(estimate)", "", "s", "s");
  double set1 = NAN;
  for (int j = 0; j < nn; j++) {
    double x[MAX_REPS];
    for (int r = 0; r < reps; r++)
      x[r] = v[j][1][r] / v[j][0][r]; /* paired: phases moments apart */
    double ratio = bench_median(x, reps);
    double mb = bench_median(v[j][0], reps), ms = bench_median(v[j][1], reps);
    if (j == 0)
      set1 = ms;
    double wait_x = 2 * ratio - 1;
    char name[32];
    snprintf(name, sizeof name, "set-%ld", ns_list[j]);
    printf("%-10s %12.2f %12.2f %9.3f %13.3f %9.3f %10.3f %10.3f\n", name,
           mb * 1e6, ms * 1e6, ratio, wait_x, ms / set1, reg_s[j], first_s[j]);
    const char *scen = use_anypoll_pipe ? "setwake-anypoll"
                       : inherit_pipes  ? "setwake-sync-inherit"
                                        : "setwake-sync";
    bench_csv_row(scen, "blocking", ns_list[j], "roundtrip_us", mb * 1e6, 1,
                  reps);
    bench_csv_row(scen, "set", ns_list[j], "roundtrip_us", ms * 1e6, ratio,
                  reps);
    bench_csv_row(scen, "set", ns_list[j], "wait_x_block", wait_x, NAN, reps);
    bench_csv_row(scen, "set", ns_list[j], "x_set_first_n", ms / set1, NAN,
                  reps);
    bench_csv_row(scen, "set", ns_list[j], "register_s", reg_s[j], NAN, 1);
    bench_csv_row(scen, "set", ns_list[j], "first_roundtrip_s", first_s[j],
                  NAN, 1);
  }
  free(idle);
  bench_csv_close();
  return 0;
}
