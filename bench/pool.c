/* SPDX-License-Identifier: MIT */
/* The helper-thread pool's idle lifetime, Windows only.
 *
 *   pool [--pipes 32] [--interval-ms 3000] [--lifetime-ms 1000]
 *        [--rounds 6] [--wait-ms 20]
 *
 * A program that waits now and then on idle pipes: every --interval-ms it
 * makes one anypoll_poll on --pipes idle pipes with a --wait-ms timeout
 * (every read end gets a helper thread parked in a zero-byte read, and all
 * are cancelled when the timeout ends the call). The pool keeps an idle
 * helper for --lifetime-ms (the library's anypoll__pool_idle_ms, set here):
 * with an interval longer than the lifetime, every call creates its helpers
 * anew. A 30 s interval against the library's 10 s lifetime is scaled down
 * by 10: 3 s against 1 s; the pool's behaviour depends only on which of the
 * two is longer.
 *
 * Per call: threads created (a Toolhelp snapshot before and after), the
 * CPU of the process and of the wineserver spent entering and leaving the
 * call (its --wait-ms asleep costs none), from /proc schedstat (bench/run's
 * BENCH_SELF_PID and BENCH_SERVER_PID), and the wall time. The first call
 * is left out (it always creates). Medians over the rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>
#include <tlhelp32.h>

#include "common.h"

/* The library's pool lifetime (src/win32/pool.c), an internal name the
 * static library exports to its own tests and benchmarks. */
extern volatile LONG anypoll__pool_idle_ms;

#define MAX_PIPES 64
#define MAX_ROUNDS 64

static int thread_count(void) {
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  if (snap == INVALID_HANDLE_VALUE)
    return -1;
  THREADENTRY32 te;
  te.dwSize = sizeof te;
  int n = 0;
  DWORD self = GetCurrentProcessId();
  if (Thread32First(snap, &te)) {
    do {
      n += te.th32OwnerProcessID == self;
    } while (Thread32Next(snap, &te));
  }
  CloseHandle(snap);
  return n;
}

/* Threads created during a call: the count after it minus before it (no
 * helper exits during a call: the previous ones expire in the interval). */
int main(int argc, char **argv) {
  bench_init(argc, argv);
  int pipes = (int)bench_arg_num(argc, argv, "--pipes", 32);
  int interval = (int)bench_arg_num(argc, argv, "--interval-ms", 3000);
  int lifetime = (int)bench_arg_num(argc, argv, "--lifetime-ms", 1000);
  int rounds = (int)bench_arg_num(argc, argv, "--rounds", 6);
  int wait_ms = (int)bench_arg_num(argc, argv, "--wait-ms", 20);
  if (pipes < 1 || pipes > MAX_PIPES || rounds < 2 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "pool: 1..%d pipes, 2..%d rounds\n", MAX_PIPES,
            MAX_ROUNDS);
    return 2;
  }
  anypoll__pool_idle_ms = lifetime;

  struct pollfd fds[MAX_PIPES];
  long long writers[MAX_PIPES];
  for (int i = 0; i < pipes; i++) {
    fds[i].fd = bench_pipe_reader(&writers[i]);
    if ((int)fds[i].fd < 0)
      bench_die("pipe");
    fds[i].events = POLLIN;
  }
  double created[MAX_ROUNDS], cpu[MAX_ROUNDS], server[MAX_ROUNDS],
      wall[MAX_ROUNDS];
  int n = 0;
  for (int r = 0; r < rounds; r++) {
    if (r > 0)
      bench_sleep_ms(interval);
    int t0 = thread_count();
    double c0 = bench_cpu_fine(), s0 = bench_server_cpu(), w0 = bench_now();
    int got = anypoll_poll(fds, (anypoll_nfds_t)pipes, wait_ms);
    double w1 = bench_now(), c1 = bench_cpu_fine(), s1 = bench_server_cpu();
    int t1 = thread_count();
    if (got != 0)
      bench_die("anypoll_poll");
    printf("round %d: %d threads created, process CPU %.2f ms, server CPU "
           "%.2f ms, wall %.2f ms\n",
           r, t1 - t0, (c1 - c0) * 1e3, s0 >= 0 ? (s1 - s0) * 1e3 : -1,
           (w1 - w0) * 1e3);
    if (r == 0)
      continue; /* the first call creates the helpers in any case */
    created[n] = t1 - t0;
    cpu[n] = (c1 - c0) * 1e3;
    server[n] = s0 >= 0 ? (s1 - s0) * 1e3 : -1;
    wall[n] = (w1 - w0) * 1e3 - wait_ms;
    n++;
  }
  double mc = bench_median(created, n), mcpu = bench_median(cpu, n),
         ms = bench_median(server, n), mw = bench_median(wall, n);
  printf("pipes %d, interval %d ms, lifetime %d ms: per call (median of %d) "
         "%.0f threads created, process CPU %.2f ms, wineserver CPU %.2f ms, "
         "wall beyond the timeout %.2f ms\n",
         pipes, interval, lifetime, n, mc, mcpu, ms, mw);
  for (int i = 0; i < pipes; i++) {
    bench_close((int)fds[i].fd);
    bench_writer_close(writers[i]);
  }
  return 0;
}
