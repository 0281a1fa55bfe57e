/* SPDX-License-Identifier: MIT */
/* Scenario 3: the cost of waiting. An infinite wait on 64 idle descriptors
 * (32 pipe read ends, 31 TCP sockets and a terminal: a pseudo-terminal on
 * Linux, the console under Wine; where there is no terminal, a 32nd
 * socket takes its place and the output says so) that a thread ends after
 * a fixed time by writing one byte into the first pipe. Reports the CPU
 * time the waiting process used per second of waiting (and, under Wine,
 * the wineserver's), which for a wait that truly sleeps is close to 0:
 * over the whole wait, and "parked" (from a quarter of the way in until the
 * end, leaving out the set-up and tear-down of the wait, which are given
 * separately in ms per wait).
 *
 *   idle [--pipes 32] [--sockets 32] [--console 1] [--ms 2000] [--reps 3]
 *        [--strategies all] [--csv FILE]
 *
 * --console 1 replaces one of the sockets by the terminal.
 *
 * `blocking` is a plain read on the first pipe: the floor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAX_FDS 1024
#define MAX_REPS 32

/* The thread that ends the wait also samples the CPU clocks a quarter of
 * the way in and just before it writes, so that the steady cost of being
 * parked is told apart from the cost of entering and leaving the wait
 * (arming and disarming 64 wake-up sources is not free). */
struct ender {
  int fd;
  int ms;
  double t_mid, c_mid, s_mid, t_end, c_end, s_end, c_probe, s_probe;
};

static void end_wait(void *arg) {
  struct ender *e = arg;
  int first = e->ms / 4;
  bench_sleep_ms(first);
  /* Reading the clocks costs CPU itself (under Wine, several /proc files
   * opened through the wineserver): read them twice, and take the
   * difference as the cost of one reading, to be subtracted. */
  double c = bench_cpu_fine(), sv = bench_server_cpu();
  e->t_mid = bench_now();
  e->c_mid = bench_cpu_fine();
  e->s_mid = bench_server_cpu();
  e->c_probe = e->c_mid - c;
  e->s_probe = e->s_mid - sv;
  bench_sleep_ms(e->ms - first);
  e->t_end = bench_now();
  e->c_end = bench_cpu_fine();
  e->s_end = bench_server_cpu();
  if (bench_write(e->fd, "x", 1) != 1)
    bench_die("write");
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  int npipes = (int)bench_arg_num(argc, argv, "--pipes", 32);
  int nsocks = (int)bench_arg_num(argc, argv, "--sockets", 32);
  int ms = (int)bench_arg_num(argc, argv, "--ms", 2000);
  int reps = (int)bench_arg_num(argc, argv, "--reps", 3);
  int want_console = (int)bench_arg_num(argc, argv, "--console", 1);
  bench_csv_open(bench_arg(argc, argv, "--csv", NULL));
  if (npipes < 1 || npipes + nsocks > MAX_FDS || reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "idle: need 1 <= pipes, pipes + sockets <= %d, "
                    "reps 1..%d\n", MAX_FDS, MAX_REPS);
    return 2;
  }
  struct bench_strategy st[BENCH_MAX_STRATEGIES];
  /* "all" here also takes the watch set, which this program supports. */
  const char *list = bench_arg(argc, argv, "--strategies", "all");
  int ns = bench_strategies(strcmp(list, "all") == 0 ? BENCH_ALL ",set" : list,
                            st);

  static int pw[MAX_FDS];
  static struct pollfd fds[MAX_FDS];
  int n = 0;
  for (int i = 0; i < npipes; i++) {
    int p[2];
    bench_pipe(p, 4096);
    pw[i] = p[1];
    fds[n].fd = p[0];
    fds[n].events = POLLIN;
    n++;
  }
  int console = want_console && nsocks > 0 ? bench_console() : -1;
  if (console >= 0) {
    nsocks--;
    fds[n].fd = console;
    fds[n].events = POLLIN;
    n++;
  }
  int port;
  int l = bench_tcp_listen(&port);
  static int peers[MAX_FDS];
  for (int i = 0; i < nsocks; i++) {
    peers[i] = bench_tcp_connect(port);
    fds[n].fd = bench_tcp_accept(l);
    fds[n].events = POLLIN;
    n++;
  }

  static double cpu[BENCH_MAX_STRATEGIES][MAX_REPS];
  static double srv[BENCH_MAX_STRATEGIES][MAX_REPS];
  static double steady[BENCH_MAX_STRATEGIES][MAX_REPS];
  static double ssteady[BENCH_MAX_STRATEGIES][MAX_REPS];
  static double edges[BENCH_MAX_STRATEGIES][MAX_REPS];
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < ns; k++) {
      int i = (k + r) % ns;
      struct ender e;
      memset(&e, 0, sizeof e);
      e.fd = pw[0];
      e.ms = ms;
      /* The set is registered before the clock starts and deleted after
       * it stops: what is measured is the wait on a set already made. */
      anypoll_set *set =
          st[i].backend == BENCH_SET ? bench_set_open(fds, n) : NULL;
      double t0 = bench_now(), c0 = bench_cpu_fine(), s0 = bench_server_cpu();
      struct bench_thread *t = bench_thread_start(end_wait, &e);
      int got = set != NULL ? bench_set_wait(set, fds, n)
                            : bench_wait(&st[i], fds, n);
      if (st[i].backend != BENCH_BLOCKING &&
          (got != 1 || fds[0].revents != POLLIN)) {
        fprintf(stderr, "idle: %s returned %d, revents %#x\n", st[i].name,
                got, fds[0].revents);
        return 2;
      }
      char c;
      if (bench_read(fds[0].fd, &c, 1) != 1)
        bench_die("read");
      double wall = bench_now() - t0;
      double c1 = bench_cpu_fine(), s1 = bench_server_cpu();
      bench_thread_join(t);
      if (set != NULL)
        bench_set_close(set, fds, n);
      cpu[i][r] = (c1 - c0) * 1e3 / wall;
      srv[i][r] = s0 < 0 || s1 < 0 ? NAN : (s1 - s0) * 1e3 / wall;
      double mid = e.t_end - e.t_mid;
      steady[i][r] = (e.c_end - e.c_mid - e.c_probe) * 1e3 / mid;
      ssteady[i][r] = s0 < 0 ? NAN : (e.s_end - e.s_mid - e.s_probe) * 1e3 / mid;
      /* What the whole wait cost beyond being parked for all of it. */
      edges[i][r] = (c1 - c0) * 1e3 - steady[i][r] * wall;
    }
  }

  printf("%s s3: infinite wait on %d pipes + %d sockets + %s, ended after "
         "%d ms, %d reps (medians)\n", BENCH_PLATFORM, npipes, nsocks,
         console >= 0 ? "1 terminal" : "no terminal (none available)", ms,
         reps);
  printf("%-9s %12s %12s %14s %12s %12s\n", "strategy", "CPU ms/s", "parked",
         "enter+leave", "server ms/s", "srv parked");
  printf("%-9s %12s %12s %14s %12s %12s\n", "", "(whole)", "ms/s", "ms",
         "(whole)", "ms/s");
  for (int i = 0; i < ns; i++) {
    double c = bench_median(cpu[i], reps);
    double s = isnan(srv[i][0]) ? NAN : bench_median(srv[i], reps);
    double p = bench_median(steady[i], reps);
    double sp = isnan(ssteady[i][0]) ? NAN : bench_median(ssteady[i], reps);
    double ed = bench_median(edges[i], reps);
    printf("%-9s %12.3f %12.3f %14.2f %12.3f %12.3f\n", st[i].name, c, p, ed,
           s, sp);
    bench_csv_row("s3", st[i].name, n, "cpu_ms_per_s", c, NAN, reps);
    bench_csv_row("s3", st[i].name, n, "parked_cpu_ms_per_s", p, NAN, reps);
    bench_csv_row("s3", st[i].name, n, "enter_leave_cpu_ms", ed, NAN, reps);
    bench_csv_row("s3", st[i].name, n, "server_cpu_ms_per_s", s, NAN, reps);
    bench_csv_row("s3", st[i].name, n, "server_parked_ms_per_s", sp, NAN,
                  reps);
    bench_csv_row("s3", st[i].name, n, "terminals", console >= 0, NAN, reps);
  }
  if (bench_skipped()[0])
    printf("skipped (not in this build): %s\n", bench_skipped());
  bench_csv_close();
  for (int i = 0; i < nsocks; i++)
    bench_sock_close(peers[i]);
  return 0;
}
