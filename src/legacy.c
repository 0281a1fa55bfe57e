/* SPDX-License-Identifier: MIT */
/* The two strategies anypoll replaces, kept only so that the benchmarks and
 * tests can compare against them: check every entry, and when nothing is
 * ready sleep 1 ms (git's and gnulib's compat poll since 2014) or yield the
 * CPU (before that: a busy wait), then check again. Never the default. */
#include "internal.h"

static int legacy_poll(struct pollfd *fds, anypoll_nfds_t nfds,
                       int timeout_ms, int yield) {
  long long start = anypoll__now_us();
  for (;;) {
    int n = anypoll__check_now(fds, nfds);
    if (n != 0 || timeout_ms == 0)
      return n;
    /* Strictly greater: both readings are truncated to the microsecond,
     * and a timeout must never end early. */
    if (timeout_ms > 0 &&
        anypoll__now_us() - start > (long long)timeout_ms * 1000)
      return 0;
    if (anypoll__nap(yield) != 0)
      return -1;
  }
}

ANYPOLL__INTERNAL
int anypoll__legacy_sleep1(struct pollfd *fds, anypoll_nfds_t nfds,
                           int timeout_ms) {
  return legacy_poll(fds, nfds, timeout_ms, 0);
}

ANYPOLL__INTERNAL
int anypoll__legacy_yield(struct pollfd *fds, anypoll_nfds_t nfds,
                          int timeout_ms) {
  return legacy_poll(fds, nfds, timeout_ms, 1);
}
