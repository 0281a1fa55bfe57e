/* The platform-independent part of the test harness. */
#include "test.h"

int tp_backend = ANYPOLL_BACKEND_DEFAULT;

void tp_fail(const char *file, int line, const char *what, long long a,
             long long b, int show) {
  if (show)
    fprintf(stderr, "%s:%d: assertion failed: %s (%lld vs %lld)\n", file,
            line, what, a, b);
  else
    fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, what);
  fflush(stderr);
  exit(1);
}

int tp_poll(struct pollfd *fds, anypoll_nfds_t nfds, int timeout_ms) {
  return anypoll_poll_with(tp_backend, fds, nfds, timeout_ms);
}

void tp_pfd(struct pollfd *p, int fd, short events) {
  p->fd = fd;
  p->events = events;
  p->revents = (short)0x5a5a; /* must be overwritten */
}
