/* SPDX-License-Identifier: MIT */
/* The POSIX backend table and the primitives the historical strategies use. */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "posix.h"

anypoll__poll_fn *anypoll__backend(int backend) {
  switch (backend) {
  case ANYPOLL_BACKEND_DEFAULT:
#if defined(ANYPOLL_DEFAULT_SELECT) && ANYPOLL_DEFAULT_SELECT
    return anypoll__posix_select;
#else
    return anypoll__posix_poll;
#endif
  case ANYPOLL_BACKEND_SELECT:
    return anypoll__posix_select;
  case ANYPOLL_BACKEND_POLL:
  case ANYPOLL_BACKEND_EVENT:
    return anypoll__posix_poll;
  default:
    return NULL;
  }
}

int anypoll__check_now(struct pollfd *fds, anypoll_nfds_t nfds) {
  /* A build that chose select() did so because poll() is not to be
   * trusted there; the historical loops follow that choice. */
  return anypoll__backend(ANYPOLL_BACKEND_DEFAULT)(fds, nfds, 0);
}

int anypoll__nap(int yield) {
  if (yield) {
    sched_yield();
    return 0;
  }
  struct timespec ts = { 0, 1000000 };
  return nanosleep(&ts, NULL) == 0 ? 0 : -1;
}

long long anypoll__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int anypoll__fds_accessible(const struct pollfd *fds, anypoll_nfds_t nfds) {
  (void)fds, (void)nfds;
  return 1;
}
