/* SPDX-License-Identifier: MIT */
/* The watch set's wait against raw epoll_wait, on Linux, side by side.
 * Two threads pass one byte back and forth over a pair of pipes; each
 * waits for it before reading it, with the strategy under test:
 *   epoll  epoll_wait on an epoll set of its own (the floor),
 *   set    anypoll_set_wait on an anypoll_set of its own.
 * Each waiter's set also holds --idle idle pipes. Reports the median
 * round trip of each strategy and the ratio set / epoll.
 *
 *   setwait [--trips 2000] [--reps 41] [--idle 0] [--csv FILE]
 *
 * Every repetition runs one phase per strategy, the order alternating, and
 * the figure is the median over the repetitions (bench/common.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common.h"

#define MAX_REPS 101

enum { EPOLL, SET, STRATEGIES };
static const char *const names[STRATEGIES] = { "epoll", "set" };

struct side {
  int strategy, trips, idle, in, out, first;
  int *idle_fds; /* idle pipes: read ends, and write ends after them */
};

static void side_main(void *arg) {
  struct side *s = arg;
  int ep = -1;
  anypoll_set *set = NULL;
  if (s->strategy == EPOLL) {
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
      bench_die("epoll_create1");
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
    if (epoll_ctl(ep, EPOLL_CTL_ADD, s->in, &ev) != 0)
      bench_die("epoll_ctl");
    for (int i = 0; i < s->idle; i++) {
      ev.data.u64 = (uint64_t)i + 1;
      if (epoll_ctl(ep, EPOLL_CTL_ADD, s->idle_fds[i], &ev) != 0)
        bench_die("epoll_ctl");
    }
  } else {
    set = anypoll_set_new();
    if (set == NULL || anypoll_set_add(set, s->in, POLLIN, s) != 0)
      bench_die("anypoll_set_add");
    for (int i = 0; i < s->idle; i++)
      if (anypoll_set_add(set, s->idle_fds[i], POLLIN, NULL) != 0)
        bench_die("anypoll_set_add");
  }
  unsigned char b = 'x';
  if (s->first && bench_write(s->out, &b, 1) != 1)
    bench_die("write");
  for (int i = 0; i < s->trips; i++) {
    if (s->strategy == EPOLL) {
      struct epoll_event ev[8];
      if (epoll_wait(ep, ev, 8, -1) != 1)
        bench_die("epoll_wait");
    } else {
      struct anypoll_event ev[8];
      if (anypoll_set_wait(set, ev, 8, -1) != 1)
        bench_die("anypoll_set_wait");
    }
    if (bench_read(s->in, &b, 1) != 1)
      bench_die("read");
    /* The first side's last read ends the phase; the other answers every
     * byte it gets. */
    if (s->first && i == s->trips - 1)
      break;
    if (bench_write(s->out, &b, 1) != 1)
      bench_die("write");
  }
  if (set != NULL)
    anypoll_set_free(set);
  if (ep >= 0)
    bench_close(ep);
}

/* One phase: the seconds per round trip. */
static double phase(int strategy, int trips, int idle, int *a, int *b,
                    int *idle_a, int *idle_b) {
  struct side first = { strategy, trips, idle, a[0], b[1], 1, idle_a };
  struct side second = { strategy, trips, idle, b[0], a[1], 0, idle_b };
  double t0 = bench_now();
  struct bench_thread *t = bench_thread_start(side_main, &second);
  side_main(&first);
  double t1 = bench_now();
  bench_thread_join(t);
  return (t1 - t0) / trips;
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int trips = (int)bench_arg_num(argc, argv, "--trips", 2000);
  int reps = (int)bench_arg_num(argc, argv, "--reps", 41);
  int idle = (int)bench_arg_num(argc, argv, "--idle", 0);
  if (reps < 1 || reps > MAX_REPS || trips < 1 || idle < 0)
    bench_die("bad arguments");
  bench_raise_nofile(4 * (long)idle + 64);
  bench_csv_open(bench_arg(argc, argv, "--csv", NULL));
  int a[2], b[2];
  bench_pipe(a, 4096);
  bench_pipe(b, 4096);
  int *idle_a = malloc(sizeof(int) * (size_t)(2 * idle + 1));
  int *idle_b = malloc(sizeof(int) * (size_t)(2 * idle + 1));
  if (idle_a == NULL || idle_b == NULL)
    bench_die("malloc");
  for (int i = 0; i < idle; i++) {
    int p[2];
    bench_pipe(p, 4096);
    idle_a[i] = p[0];
    idle_a[idle + i] = p[1];
    bench_pipe(p, 4096);
    idle_b[i] = p[0];
    idle_b[idle + i] = p[1];
  }
  /* One untimed phase of each first: threads, sets and caches warm. */
  for (int s = 0; s < STRATEGIES; s++)
    phase(s, trips / 10 + 1, idle, a, b, idle_a, idle_b);
  double v[STRATEGIES][MAX_REPS];
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < STRATEGIES; k++) {
      int s = (r + k) % STRATEGIES;
      v[s][r] = phase(s, trips, idle, a, b, idle_a, idle_b);
    }
  }
  double med[STRATEGIES];
  for (int s = 0; s < STRATEGIES; s++)
    med[s] = bench_median(v[s], reps);
  printf("setwait: %d round trips x %d reps, %d idle pipes per set\n", trips,
         reps, idle);
  for (int s = 0; s < STRATEGIES; s++) {
    double ratio = med[s] / med[EPOLL];
    printf("  %-6s %8.2f us per round trip  %5.3fx epoll\n", names[s],
           med[s] * 1e6, ratio);
    bench_csv_row("setwait", names[s], idle, "roundtrip_us", med[s] * 1e6,
                  ratio, reps);
  }
  bench_csv_close();
  for (int i = 0; i < 2 * idle; i++) {
    bench_close(idle_a[i]);
    bench_close(idle_b[i]);
  }
  free(idle_a);
  free(idle_b);
  bench_close(a[0]);
  bench_close(a[1]);
  bench_close(b[0]);
  bench_close(b[1]);
  return 0;
}
