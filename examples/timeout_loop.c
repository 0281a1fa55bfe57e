/* SPDX-License-Identifier: MIT */
/* Wait for input with a deadline while doing periodic work: a prompt that
 * gives up after a while, printing a tick every 100 ms meanwhile. The
 * deadline is kept on a monotonic clock and each wait is only as long as
 * what remains, so early wake-ups (a tick, EINTR) never stretch the total.
 *
 *   timeout_loop MS     reads one line from stdin within MS milliseconds */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* clock_gettime, read under -std=c11 */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "anypoll.h"

#ifdef _WIN32
#  include <io.h>
#  include <windows.h>
#  define read_fd _read
static long long now_ms(void) { return (long long)GetTickCount64(); }
#else
#  include <unistd.h>
#  define read_fd read
static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
#endif

#define TICK_MS 100

int main(int argc, char **argv) {
  int limit_ms = argc > 1 ? atoi(argv[1]) : 3000;
  long long deadline = now_ms() + limit_ms;
  struct pollfd in = { 0 };
  in.fd = 0;
  in.events = POLLIN;

  for (;;) {
    long long left = deadline - now_ms();
    if (left <= 0) {
      printf("timed out after %d ms\n", limit_ms);
      return 2;
    }
    int n = anypoll_poll(&in, 1, left < TICK_MS ? (int)left : TICK_MS);
    if (n < 0 && errno == EINTR)
      continue; /* the deadline still holds */
    if (n < 0) {
      perror("anypoll_poll");
      return 1;
    }
    if (n == 0) {
      printf("tick\n"); /* the periodic work */
      fflush(stdout);
      continue;
    }
    /* Readable, or hung up (POLLHUP): read() tells which. */
    char line[256];
    int len = (int)read_fd(0, line, sizeof line);
    if (len <= 0) {
      printf("end of input\n");
      return 0;
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      len--;
    printf("got: %.*s\n", len, line);
    return 0;
  }
}
