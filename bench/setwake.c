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
 * The sets and their idle pipes are registered once, before any timing;
 * the echo pipe joins a set just before its phase and leaves it after
 * (outside the timed part), so that only one set watches it at a time.
 *
 * A round trip holds two wake-ups: the echo thread's (always a blocking
 * read) and the main thread's (the strategy). Hence, besides the round
 * trip and its ratio to blocking's, the table estimates the woken wait's
 * own ratio to a blocking read: (2 * rt / rt_blocking) - 1, which assumes
 * the two blocking wake-ups of a blocking round trip cost the same.
 *
 *   setwake [--n 1,64,1000] [--trips 2000] [--reps 15]
 *           [--pipe sync|anypoll] [--csv FILE]
 *
 * --pipe sync: every pipe is a C runtime _pipe (on Windows a synchronous
 * pipe: the set parks a pooled helper thread in a zero-byte read on each).
 * --pipe anypoll: every pipe comes from anypoll_pipe, the pipe the set can
 * wait on with no helper thread where the platform allows. This program
 * uses the public API only, so that the same source measures whatever
 * anypoll_pipe is in the build it is linked with. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAX_REPS 101
#define MAX_N 8
#define QUIT 0xFF

static int use_anypoll_pipe;

static void make_pipe(int fds[2]) {
  if (use_anypoll_pipe) {
    if (anypoll_pipe(fds) != 0)
      bench_die("anypoll_pipe");
  } else {
    bench_pipe(fds, 4096);
  }
}

/* The one place where this program reads and writes its pipes. Today
 * both kinds are read with the C runtime (_read and _write on Windows),
 * which anypoll_pipe's ends support. Should the header gain calls of its
 * own for reading and writing an anypoll_pipe end, this is where the
 * anypoll variant switches to them. */
static long pipe_read(int fd, void *buf, size_t len) {
  return bench_read(fd, buf, len);
}
static long pipe_write(int fd, const void *buf, size_t len) {
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
  if (!use_anypoll_pipe && strcmp(kind, "sync") != 0) {
    fprintf(stderr, "setwake: --pipe sync or anypoll\n");
    return 2;
  }
  if (reps < 1 || reps > MAX_REPS || trips < 1 || nn < 1)
    bench_die("bad arguments");
  long most = 0;
  for (int j = 0; j < nn; j++)
    most = ns_list[j] > most ? ns_list[j] : most;
  bench_raise_nofile(2 * most + 64);
  bench_csv_open(bench_arg(argc, argv, "--csv", NULL));

  int to[2], from[2];
  make_pipe(to);
  make_pipe(from);
  /* The idle pipes, shared by the sets: set-N holds the first N (a pipe in
   * several sets costs nothing while it stays idle). */
  int *idle = malloc(sizeof(int) * (size_t)(2 * most + 1));
  if (idle == NULL)
    bench_die("malloc");
  for (long i = 0; i < most; i++) {
    int p[2];
    make_pipe(p);
    idle[i] = p[0];
    idle[most + i] = p[1];
  }
  anypoll_set *sets[MAX_N];
  double reg_s[MAX_N];
  for (int j = 0; j < nn; j++) {
    double t0 = bench_now();
    sets[j] = anypoll_set_new();
    if (sets[j] == NULL)
      bench_die("anypoll_set_new");
    for (long i = 0; i < ns_list[j]; i++)
      if (anypoll_set_add(sets[j], idle[i], POLLIN, NULL) != 0)
        bench_die("anypoll_set_add");
    reg_s[j] = bench_now() - t0;
  }
  struct echo_arg ea = { to[0], from[1] };
  struct bench_thread *echo = bench_thread_start(echo_thread, &ea);

  /* Strategy 0 is blocking, 1 + j is set-N for ns_list[j]. */
  int ns = nn + 1;
  static double v[MAX_N + 1][MAX_REPS];
  for (int r = -1; r < reps; r++) { /* r = -1: untimed warm-up */
    for (int k = 0; k < ns; k++) {
      int s = (k + (r < 0 ? 0 : r)) % ns;
      anypoll_set *set = s == 0 ? NULL : sets[s - 1];
      if (set != NULL && anypoll_set_add(set, from[0], POLLIN, NULL) != 0)
        bench_die("anypoll_set_add");
      double t = phase(set, to[1], from[0], r < 0 ? trips / 10 + 1 : trips);
      if (set != NULL && anypoll_set_del(set, from[0]) != 0)
        bench_die("anypoll_set_del");
      if (r >= 0)
        v[s][r] = t;
    }
  }
  double med[MAX_N + 1], ratio[MAX_N + 1];
  for (int s = 0; s < ns; s++) {
    double x[MAX_REPS];
    for (int r = 0; r < reps; r++)
      x[r] = v[s][r] / v[0][r]; /* paired: phases moments apart */
    ratio[s] = bench_median(x, reps);
    med[s] = bench_median(v[s], reps);
  }
  printf("%s setwake: %s pipes, %d round trips x %d reps (medians)\n",
         BENCH_PLATFORM, use_anypoll_pipe ? "anypoll_pipe" : "_pipe", trips,
         reps);
  printf("%-10s %12s %9s %13s %9s %14s\n", "strategy", "round trip", "x block",
         "wait x block", "x set-1", "register");
  printf("%-10s %12s %9s %13s %9s %14s\n", "", "us", "", "(estimate)", "",
         "s");
  for (int s = 0; s < ns; s++) {
    char name[32];
    if (s == 0)
      snprintf(name, sizeof name, "blocking");
    else
      snprintf(name, sizeof name, "set-%ld", ns_list[s - 1]);
    double wait_x = 2 * ratio[s] - 1;
    double x1 = s > 0 ? med[s] / med[1] : NAN;
    printf("%-10s %12.2f %9.3f %13.3f %9.3f %14.3f\n", name, med[s] * 1e6,
           ratio[s], wait_x, x1, s > 0 ? reg_s[s - 1] : NAN);
    long param = s == 0 ? 0 : ns_list[s - 1];
    const char *scen = use_anypoll_pipe ? "setwake-anypoll" : "setwake-sync";
    const char *strat = s == 0 ? "blocking" : "set";
    bench_csv_row(scen, strat, param, "roundtrip_us", med[s] * 1e6, ratio[s],
                  reps);
    bench_csv_row(scen, strat, param, "wait_x_block", wait_x, NAN, reps);
    if (s > 0)
      bench_csv_row(scen, strat, param, "register_s", reg_s[s - 1], NAN, 1);
  }
  unsigned char q = QUIT;
  if (pipe_write(to[1], &q, 1) != 1)
    bench_die("write");
  bench_thread_join(echo);
  for (int j = 0; j < nn; j++) {
    for (long i = 0; i < ns_list[j]; i++)
      if (anypoll_set_del(sets[j], idle[i]) != 0)
        bench_die("anypoll_set_del");
    anypoll_set_free(sets[j]);
  }
  for (long i = 0; i < 2 * most; i++)
    bench_close(idle[i]);
  free(idle);
  bench_close(to[0]);
  bench_close(to[1]);
  bench_close(from[0]);
  bench_close(from[1]);
  bench_csv_close();
  return 0;
}
