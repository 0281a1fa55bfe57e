/* SPDX-License-Identifier: MIT */
/* Measures how long anypoll_poll really waits for a given timeout when
 * nothing becomes ready: prints min / median / max of the elapsed time per
 * timeout, so docs/windows-design.md can state the accuracy seen.
 *   timeouts [ROUNDS]        (default 20 rounds per timeout) */
#include <stdio.h>
#include <stdlib.h>

#include "anypoll.h"

#ifdef _WIN32
#  include <fcntl.h>
#  include <io.h>
#  include <windows.h>
static double now_ms(void) {
  LARGE_INTEGER t, f;
  QueryPerformanceCounter(&t);
  QueryPerformanceFrequency(&f);
  return (double)t.QuadPart * 1e3 / (double)f.QuadPart;
}
static int make_pipe(int p[2]) { return _pipe(p, 4096, _O_BINARY); }
#else
#  include <time.h>
#  include <unistd.h>
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
static int make_pipe(int p[2]) { return pipe(p); }
#endif

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20;
  if (rounds < 1 || rounds > 1000)
    rounds = 20;
  int p[2];
  if (make_pipe(p) != 0)
    return 1;
  struct pollfd fd = { 0 };
  fd.fd = p[0];
  fd.events = POLLIN;
  const int timeouts[] = { 1, 2, 5, 10, 16, 50, 100 };
  double *t = malloc(sizeof *t * (size_t)rounds);
  if (t == NULL)
    return 1;
  printf("%-10s %10s %10s %10s %8s\n", "timeout", "min", "median", "max",
         "early");
  for (size_t k = 0; k < sizeof timeouts / sizeof timeouts[0]; k++) {
    int early = 0;
    for (int r = 0; r < rounds; r++) {
      double t0 = now_ms();
      if (anypoll_poll(&fd, 1, timeouts[k]) != 0)
        return 1;
      t[r] = now_ms() - t0;
      early += t[r] < timeouts[k];
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp);
    printf("%-7d ms %7.3f ms %7.3f ms %7.3f ms %8d\n", timeouts[k], t[0],
           t[rounds / 2], t[rounds - 1], early);
  }
  free(t);
  return 0;
}
