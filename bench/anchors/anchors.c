/* SPDX-License-Identifier: MIT */
/* The anchors benchmark: a one-byte ping-pong per transport, the echo side
 * a plain blocking thread, the other side waiting with each library under
 * test, side by side in one process:
 *   blocking  a plain blocking read, no wait at all (the floor);
 *   poll      anypoll_poll, then the read;
 *   set       anypoll_set_wait on a set holding the descriptor, then the read;
 *   epoll     (Linux) raw epoll_wait, then the read (these rows:
 *             bench/anchors/anypoll_rows.c);
 *   libuv, wepoll: bench/anchors/uv.c and wepoll_rows.c, built only when
 *             their sources are given (bench/anchors/run LIBUV=dir WEPOLL=dir).
 * Transports: pipe (synchronous: _pipe() on Windows), apipe (Windows: an
 * overlapped pipe, anypoll_pipe for anypoll's rows and uv_pipe for libuv),
 * tcp (loopback).
 *
 *   anchors [--transports pipe,apipe,tcp] [--trips 2000] [--reps 5]
 *           [--rows NAME,...] [--csv FILE]
 *
 * Each repetition runs every row once (--trips round trips, after 20 not
 * counted), in an order that rotates between repetitions; a row's figure is
 * its median time per round trip, and its ratio the median over the
 * repetitions of its time over the blocking read's of the same transport in
 * the same repetition (bench/common.h: only side-by-side ratios mean
 * anything on a shared machine). Beside the time, the CPU time per round
 * trip of the process (all its threads) and, under Wine, of its wineserver
 * (bench/anchors/run names it), with its ratio: the work a wait costs,
 * which a loaded machine does not blur as it blurs the time. Then, from
 * Linux's schedstat (process and wineserver), the time per round trip its
 * threads spent runnable but waiting for a CPU ("queued": what the load
 * added; a row whose time is mostly that was measured on a busy machine,
 * not on its own), and the times a thread was put on a CPU per round trip
 * ("switches": every hand-off from one thread to another, which is what a
 * wait costs under Wine beyond its requests). --rows keeps
 * only the rows whose name begins with one of the names given (e.g.
 * --rows blocking,libuv), for tracing one at a time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anchors.h"
#include "common.h"

#define MAX_ROWS 24
#define MAX_REPS 32
#define WARMUP 20

static const char *const transport_names[ANCHOR_TRANSPORTS] = {
  "pipe", "apipe", "tcp"
};

/* Without a library's sources its rows are not built (the run says so). */
#ifndef ANCHORS_LIBUV
int anchors_libuv_rows(struct anchor_row *out) {
  (void)out;
  return 0;
}
#endif
#ifndef ANCHORS_WEPOLL
int anchors_wepoll_rows(struct anchor_row *out) {
  (void)out;
  return 0;
}
#endif

/* ---- The driver -------------------------------------------------------- */

static int row_wanted(const char *list, const char *name) {
  if (list == NULL)
    return 1;
  for (const char *p = list; *p != 0;) {
    size_t len = strcspn(p, ",");
    if (len > 0 && strncmp(name, p, len) == 0)
      return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

static int wanted(const char *list, const char *name) {
  size_t len = strlen(name);
  for (const char *p = list; (p = strstr(p, name)) != NULL; p += len)
    if ((p == list || p[-1] == ',') && (p[len] == 0 || p[len] == ','))
      return 1;
  return 0;
}

/* CPU seconds of the process (every thread: the echo's, the libraries'
 * helpers') and, under Wine, of its wineserver when bench/anchors/run
 * names it: on a loaded machine the time of a round trip is mostly time
 * spent waiting for a CPU, the work it costs is not. */
static double cpu_now(void) {
  double server = bench_server_cpu();
  return bench_cpu_fine() + (server > 0 ? server : 0);
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
#ifdef _WIN32
  const char *list = bench_arg(argc, argv, "--transports", "pipe,apipe,tcp");
#else
  const char *list = bench_arg(argc, argv, "--transports", "pipe,tcp");
#endif
  int trips = (int)bench_arg_num(argc, argv, "--trips", 2000);
  int reps = (int)bench_arg_num(argc, argv, "--reps", 5);
  const char *only = bench_arg(argc, argv, "--rows", NULL);
  bench_csv_open(bench_arg(argc, argv, "--csv", NULL));
  if (reps < 1 || reps > MAX_REPS || trips < 1)
    return 2;

  /* Every transport's rows, anypoll's first: the blocking read heads each. */
  static struct anchor_row all[MAX_ROWS];
  int nall = 0;
  for (int t = 0; t < ANCHOR_TRANSPORTS; t++)
    nall += anchors_anypoll_rows(t, all + nall);
  nall += anchors_libuv_rows(all + nall);
  nall += anchors_wepoll_rows(all + nall);
  struct anchor_row rows[MAX_ROWS];
  int n = 0;
  for (int t = 0; t < ANCHOR_TRANSPORTS; t++)
    if (wanted(list, transport_names[t]))
      for (int i = 0; i < nall; i++)
        if (all[i].transport == t && row_wanted(only, all[i].name))
          rows[n++] = all[i];
  if (n == 0)
    return 2;

  void *ctx[MAX_ROWS];
  int base[MAX_ROWS]; /* the blocking row of the same transport */
  for (int i = 0; i < n; i++) {
    ctx[i] = rows[i].open(rows[i].transport);
    base[i] = i;
    while (base[i] > 0 && rows[base[i] - 1].transport == rows[i].transport)
      base[i]--;
  }
  static double us[MAX_ROWS][MAX_REPS], cpu[MAX_ROWS][MAX_REPS];
  static double queued[MAX_ROWS][MAX_REPS], switches[MAX_ROWS][MAX_REPS];
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < n; k++) {
      int i = (k + r) % n;
      for (int w = 0; w < WARMUP; w++)
        rows[i].trip(ctx[i]);
      double q0 = 0, s0 = 0, q1 = 0, s1 = 0;
      int sched = bench_sched(&q0, &s0) == 0;
      double c0 = cpu_now(), t0 = bench_now();
      for (int w = 0; w < trips; w++)
        rows[i].trip(ctx[i]);
      us[i][r] = (bench_now() - t0) * 1e6 / trips;
      cpu[i][r] = (cpu_now() - c0) * 1e6 / trips;
      sched = sched && bench_sched(&q1, &s1) == 0;
      queued[i][r] = sched ? (q1 - q0) * 1e6 / trips : -1;
      switches[i][r] = sched ? (s1 - s0) / trips : -1;
    }

  printf("%s anchors: one-byte ping-pong, blocking echo thread, %d "
         "interleaved reps of %d round trips (medians)\n", BENCH_PLATFORM,
         reps, trips);
  printf("%-9s %-20s %8s %7s %9s %7s %8s %8s\n", "transport", "row",
         "us/trip", "x block", "cpu us", "x block", "queued", "switches");
  for (int i = 0; i < n; i++) {
    double v[MAX_REPS], x[MAX_REPS], c[MAX_REPS], cx[MAX_REPS];
    double q[MAX_REPS], sw[MAX_REPS];
    for (int r = 0; r < reps; r++) {
      q[r] = queued[i][r];
      sw[r] = switches[i][r];
      v[r] = us[i][r];
      x[r] = us[i][r] / us[base[i]][r];
      c[r] = cpu[i][r];
      cx[r] = cpu[i][r] / cpu[base[i]][r];
    }
    double mv = bench_median(v, reps), mx = bench_median(x, reps);
    double mc = bench_median(c, reps), mcx = bench_median(cx, reps);
    double mq = bench_median(q, reps), msw = bench_median(sw, reps);
    const char *tn = transport_names[rows[i].transport];
    printf("%-9s %-20s %8.1f %7.2f %9.1f %7.2f %8.1f %8.2f\n", tn,
           rows[i].name, mv, mx, mc, mcx, mq, msw);
    char scenario[32];
    snprintf(scenario, sizeof scenario, "anchors-%s", tn);
    bench_csv_row(scenario, rows[i].name, 1, "us_per_trip", mv, mx, reps);
    bench_csv_row(scenario, rows[i].name, 1, "cpu_us_per_trip", mc, mcx, reps);
    if (mq >= 0) {
      bench_csv_row(scenario, rows[i].name, 1, "queued_us_per_trip", mq, NAN,
                    reps);
      bench_csv_row(scenario, rows[i].name, 1, "switches_per_trip", msw, NAN,
                    reps);
    }
  }
#ifndef ANCHORS_LIBUV
  printf("libuv: not built in (bench/anchors/run LIBUV=dir)\n");
#endif
#if defined(_WIN32) && !defined(ANCHORS_WEPOLL)
  printf("wepoll: not built in (bench/anchors/run WEPOLL=dir)\n");
#endif
  bench_csv_close();
  fflush(stdout);
  /* The echo threads and the libraries' loops are not taken down: the
   * process ends with them. */
  _Exit(0);
}
