/* SPDX-License-Identifier: MIT */
/* Scenario 5: the ready fast path and scale.
 *
 * For each N: (a) calls per second of a poll on N pipes that all hold data
 * (every call must return N with POLLIN on each), and (b) round trips per
 * second of a ping-pong with an echo thread over one active pipe pair,
 * waited on together with N idle pipes (every call must return 1 with
 * POLLIN on the active pipe only). `blocking` in (b) is a plain blocking
 * read on the active pipe; (a) has no blocking counterpart.
 *
 *   scale [--n 1,64,1024,4096] [--ms 300] [--reps 3] [--strategies all]
 *         [--csv FILE]
 *
 * Large N is measured, not assumed: when a call fails or returns a wrong
 * result, the row says so. When the platform cannot open N pipes (msvcrt
 * holds about 2040 descriptors), the N entries repeat the pipes that could
 * be opened, and the output says how many are distinct. On
 * Linux RLIMIT_NOFILE is raised as far as the hard limit allows. A phase
 * runs for --ms or one call, whichever is longer, but never starts a call
 * after 20 * --ms. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAX_REPS 16
#define MAX_N 16
#define QUIT 0xFF

struct echo_arg {
  int in, out;
};

static void echo_thread(void *p) {
  struct echo_arg *a = p;
  unsigned char b;
  while (bench_read(a->in, &b, 1) == 1 && b != QUIT)
    if (bench_write(a->out, &b, 1) != 1)
      break;
}

/* Result of one phase: a rate, or a failure described in `why`. */
struct phase {
  double rate;
  const char *why;
};

static struct phase ready_phase(const struct bench_strategy *s,
                                struct pollfd *fds, int n, double seconds) {
  struct phase ph = { 0, NULL };
  double start = bench_now(), t = start;
  long calls = 0;
  while (calls == 0 || (t - start < seconds)) {
    int r = anypoll_poll_with(s->backend, fds, (anypoll_nfds_t)n, -1);
    if (r != n) {
      ph.why = r < 0 ? strerror(errno) : "wrong count";
      return ph;
    }
    for (int i = 0; i < n; i++)
      if (fds[i].revents != POLLIN) {
        ph.why = "wrong revents";
        return ph;
      }
    calls++;
    t = bench_now();
  }
  ph.rate = calls / (t - start);
  return ph;
}

/* set: the watch set over sfds[0..sn) (the distinct idle pipes, then the
 * active one), registered beforehand; NULL for the other strategies. */
static struct phase active_phase(const struct bench_strategy *s,
                                 struct pollfd *fds, int n, int to,
                                 double seconds, anypoll_set *set,
                                 struct pollfd *sfds, int sn) {
  struct phase ph = { 0, NULL };
  struct pollfd *act = &fds[n]; /* the active pipe, after the N idle ones */
  double start = bench_now(), t = start;
  long trips = 0;
  unsigned char b = 'p', got;
  while (trips == 0 || (t - start < seconds)) {
    if (bench_write(to, &b, 1) != 1)
      bench_die("write");
    if (set != NULL) {
      int r = bench_set_wait(set, sfds, sn);
      if (r != 1 || sfds[sn - 1].revents != POLLIN) {
        ph.why = "wrong result";
        bench_read(act->fd, &got, 1);
        return ph;
      }
    } else if (s->backend != BENCH_BLOCKING) {
      int r = anypoll_poll_with(s->backend, fds, (anypoll_nfds_t)n + 1, -1);
      if (r != 1 || act->revents != POLLIN) {
        ph.why = r < 0 ? strerror(errno) : "wrong result";
        /* The echo is still to be read so that the next phase starts in
         * step. */
        bench_read(act->fd, &got, 1);
        return ph;
      }
    }
    if (bench_read(act->fd, &got, 1) != 1)
      bench_die("read");
    trips++;
    t = bench_now();
  }
  ph.rate = trips / (t - start);
  return ph;
}

static int parse_ns(const char *list, long *out) {
  int k = 0;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *tok = strtok(buf, ","); tok != NULL && k < MAX_N;
       tok = strtok(NULL, ","))
    out[k++] = atol(tok);
  return k;
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  long ns_list[MAX_N];
  int nn = parse_ns(bench_arg(argc, argv, "--n", "1,64,1024,4096"), ns_list);
  double seconds = bench_arg_num(argc, argv, "--ms", 300) / 1e3;
  int reps = (int)bench_arg_num(argc, argv, "--reps", 3);
  bench_csv_open(bench_arg(argc, argv, "--csv", NULL));
  if (reps < 1 || reps > MAX_REPS)
    return 2;
  struct bench_strategy st[BENCH_MAX_STRATEGIES];
  /* "all" here also takes the watch set (the active phase only). */
  const char *list = bench_arg(argc, argv, "--strategies", "all");
  int ns = bench_strategies(strcmp(list, "all") == 0 ? BENCH_ALL ",set" : list,
                            st);
  long most = 0;
  for (int j = 0; j < nn; j++)
    most = ns_list[j] > most ? ns_list[j] : most;
  long limit = bench_raise_nofile(2 * most + 64);

  int to[2], from[2];
  bench_pipe(to, 4096);
  bench_pipe(from, 4096);
  struct echo_arg ea = { to[0], from[1] };
  struct bench_thread *echo = bench_thread_start(echo_thread, &ea);

  printf("%s s5: ready fast path and N idle + 1 active, %d reps of %.0f ms "
         "(medians; descriptor limit %ld)\n", BENCH_PLATFORM, reps,
         seconds * 1e3, limit);
  printf("%6s %-9s %14s %12s %14s %10s\n", "N", "strategy", "ready calls/s",
         "ns per fd", "round trips/s", "x block");
  for (int j = 0; j < nn; j++) {
    int n = (int)ns_list[j];
    struct pollfd *fds = calloc((size_t)n + 1, sizeof *fds);
    long long *writers = calloc((size_t)n, sizeof *writers);
    if (fds == NULL || writers == NULL)
      bench_die("calloc");
    int opened = 0;
    const char *open_error = NULL;
    for (; opened < n; opened++) {
      int fd = bench_pipe_reader(&writers[opened]);
      if (fd < 0) {
        open_error = strerror(errno);
        break;
      }
      fds[opened].fd = fd;
      fds[opened].events = POLLIN;
    }
    if (open_error != NULL && opened > 0) {
      /* The platform holds fewer descriptors than N (msvcrt: about 2040):
       * the call still gets N entries, the pipes repeated in turn, which
       * poll() allows and which is what a program with more entries than
       * descriptors would pass. The row says how many are distinct. */
      printf("%6d %-9s %d entries over %d distinct pipes (%s after %d)\n", n,
             "all", n, opened, open_error, opened);
      for (int i = opened; i < n; i++)
        fds[i] = fds[i % opened];
      for (int i = 0; i < ns; i++)
        bench_csv_row("s5-active", st[i].name, n, "distinct_fds", opened, NAN,
                      0);
    }
    if (open_error != NULL && opened == 0) {
      printf("%6d %-9s cannot open %d pipes: %s after %d (a limit of the "
             "platform or C runtime, before any poll)\n", n, "all", n,
             open_error, opened);
      for (int i = 0; i < ns; i++) {
        bench_csv_row("s5-ready", st[i].name, n, "open_failed_at", opened,
                      NAN, 0);
        bench_csv_row("s5-active", st[i].name, n, "open_failed_at", opened,
                      NAN, 0);
      }
    } else {
      static struct phase ready[BENCH_MAX_STRATEGIES][MAX_REPS];
      static struct phase active[BENCH_MAX_STRATEGIES][MAX_REPS];
      int distinct = open_error != NULL ? opened : n;
      for (int i = 0; i < distinct; i++)
        if (bench_writer_write(writers[i], "d", 1) != 1)
          bench_die("fill");
      for (int r = 0; r < reps; r++)
        for (int k = 0; k < ns; k++) {
          int i = (k + r) % ns;
          struct phase none = { NAN, NULL };
          /* The set's column is the active phase: its ready path is
           * anypoll_set_wait's business, not a poll of N entries. */
          ready[i][r] = st[i].backend == BENCH_BLOCKING ||
                                st[i].backend == BENCH_SET
                            ? none
                            : ready_phase(&st[i], fds, n, seconds);
        }
      char c;
      for (int i = 0; i < distinct; i++)
        if (bench_read(fds[i].fd, &c, 1) != 1)
          bench_die("drain");
      fds[n].fd = from[0];
      fds[n].events = POLLIN;
      /* The set holds each distinct pipe once (a second add of the same
       * descriptor is EEXIST) and is registered once for all repetitions,
       * outside the timed phases, as a program registers at start-up. */
      anypoll_set *set = NULL;
      struct pollfd *sfds = NULL;
      int sn = distinct + 1;
      double reg_s = NAN;
      for (int i = 0; i < ns; i++)
        if (st[i].backend == BENCH_SET) {
          sfds = calloc((size_t)sn, sizeof *sfds);
          if (sfds == NULL)
            bench_die("calloc");
          memcpy(sfds, fds, (size_t)distinct * sizeof *sfds);
          sfds[distinct] = fds[n];
          double t0 = bench_now();
          set = bench_set_open(sfds, sn);
          reg_s = bench_now() - t0;
          /* One round trip before the timing: on Windows the set's helpers
           * for synchronous pipes may still be starting after the adds
           * return, and the first wake-up waits for them (seconds for 2000
           * under Wine); it is registration's cost, reported apart. */
          unsigned char b = 'p';
          t0 = bench_now();
          if (bench_write(to[1], &b, 1) != 1 || bench_set_wait(set, sfds, sn) != 1 ||
              bench_read(from[0], &b, 1) != 1)
            bench_die("first round trip");
          double first_s = bench_now() - t0;
          printf("%6d %-9s registered %d descriptors in %.3f s, first round "
                 "trip %.3f s\n", n, "set", sn, reg_s, first_s);
          bench_csv_row("s5-active", "set", n, "register_s", reg_s, NAN, 1);
          bench_csv_row("s5-active", "set", n, "first_roundtrip_s", first_s,
                        NAN, 1);
        }
      for (int r = 0; r < reps; r++)
        for (int k = 0; k < ns; k++) {
          int i = (k + r) % ns;
          active[i][r] = active_phase(&st[i], fds, n, to[1], seconds,
                                      st[i].backend == BENCH_SET ? set : NULL,
                                      sfds, sn);
        }
      if (set != NULL)
        bench_set_close(set, sfds, sn);
      free(sfds);
      int blocking = -1;
      for (int i = 0; i < ns; i++)
        if (st[i].backend == BENCH_BLOCKING)
          blocking = i;
      for (int i = 0; i < ns; i++) {
        double rr[MAX_REPS], ar[MAX_REPS], x[MAX_REPS];
        const char *why_r = NULL, *why_a = NULL;
        for (int r = 0; r < reps; r++) {
          rr[r] = ready[i][r].rate;
          ar[r] = active[i][r].rate;
          x[r] = blocking >= 0 && !active[blocking][r].why
                     ? active[blocking][r].rate / active[i][r].rate
                     : NAN;
          why_r = ready[i][r].why ? ready[i][r].why : why_r;
          why_a = active[i][r].why ? active[i][r].why : why_a;
        }
        double mr = bench_median(rr, reps), ma = bench_median(ar, reps);
        double mx = bench_median(x, reps);
        char rbuf[64], abuf[64];
        if (why_r)
          snprintf(rbuf, sizeof rbuf, "FAILED: %s", why_r);
        else
          snprintf(rbuf, sizeof rbuf, "%14.0f %12.1f", mr, 1e9 / mr / n);
        if (why_a)
          snprintf(abuf, sizeof abuf, "FAILED: %s", why_a);
        else
          snprintf(abuf, sizeof abuf, "%14.1f %10.2f", ma, mx);
        printf("%6d %-9s %27s %25s\n", n, st[i].name,
               isnan(mr) && !why_r ? "-" : rbuf, abuf);
        if (why_r)
          bench_csv_row("s5-ready", st[i].name, n, "failed", NAN, NAN, reps);
        else if (!isnan(mr))
          bench_csv_row("s5-ready", st[i].name, n, "calls_per_s", mr, NAN,
                        reps);
        if (why_a)
          bench_csv_row("s5-active", st[i].name, n, "failed", NAN, NAN, reps);
        else
          bench_csv_row("s5-active", st[i].name, n, "round_trips_per_s", ma,
                        mx, reps);
      }
    }
    for (int i = 0; i < opened; i++) {
      bench_close(fds[i].fd);
      bench_writer_close(writers[i]);
    }
    free(fds);
    free(writers);
  }
  unsigned char q = QUIT;
  if (bench_write(to[1], &q, 1) != 1)
    bench_die("write");
  bench_thread_join(echo);
  if (bench_skipped()[0])
    printf("skipped (not in this build): %s\n", bench_skipped());
  bench_csv_close();
  return 0;
}
