/* SPDX-License-Identifier: MIT */
/* The shared front end: argument checks common to every backend, and the
 * dispatch from enum anypoll_backend to the platform's implementation. */
#include <errno.h>
#include <string.h>

#include "internal.h"

static const char *const backend_names[] = {
  "default", "poll", "select", "event", "sleep1", "yield"
};
#define BACKEND_COUNT ((int)(sizeof backend_names / sizeof backend_names[0]))

/* The historical strategies are the same code on every platform
 * (src/legacy.c); the platform's table gives the others. */
static anypoll__poll_fn *backend_fn(int backend) {
  switch (backend) {
  case ANYPOLL_BACKEND_SLEEP1:
    return anypoll__legacy_sleep1;
  case ANYPOLL_BACKEND_YIELD:
    return anypoll__legacy_yield;
  default:
    return anypoll__backend(backend);
  }
}

const char *anypoll_backend_name(int backend) {
  if (backend < 0 || backend >= BACKEND_COUNT)
    return NULL;
  return backend_names[backend];
}

int anypoll_backend_from_name(const char *name) {
  if (name != NULL) {
    for (int i = 0; i < BACKEND_COUNT; i++)
      if (strcmp(name, backend_names[i]) == 0 && backend_fn(i) != NULL)
        return i;
  }
  errno = EINVAL;
  return -1;
}

const char *anypoll_version(void) {
  return ANYPOLL_VERSION_STRING;
}

int anypoll_poll_with(int backend, struct pollfd *fds, anypoll_nfds_t nfds,
                      int timeout_ms) {
  anypoll__poll_fn *fn = backend_fn(backend);
  if (fn == NULL) {
    errno = EINVAL;
    return -1;
  }
  /* POSIX leaves NULL with nfds > 0 undefined; Linux reports EFAULT, and a
   * portable library should too rather than crash. */
  if ((fds == NULL && nfds > 0) || !anypoll__fds_accessible(fds, nfds)) {
    errno = EFAULT;
    return -1;
  }
  /* A call that succeeds leaves errno as it found it. The backends meet
   * failures on the way to a success (a closed descriptor is found by a
   * lookup that fails with EBADF, then reported as POLLNVAL; a probe may
   * meet EAGAIN), and a program may test or keep errno across a call that
   * returned a count. Restored here, once, for every backend. */
  int saved = errno;
  int n = fn(fds, nfds, timeout_ms);
  if (n >= 0)
    errno = saved;
  return n;
}

int anypoll_poll(struct pollfd *fds, anypoll_nfds_t nfds, int timeout_ms) {
  return anypoll_poll_with(ANYPOLL_BACKEND_DEFAULT, fds, nfds, timeout_ms);
}

int anypoll__spawn_args_ok(const char *file, char *const argv[],
                           const int stdio[3], const int *pipes,
                           const int *proc) {
  int ok = file != NULL && argv != NULL && stdio != NULL && pipes != NULL &&
           proc != NULL;
  for (int i = 0; ok && i < 3; i++)
    ok = stdio[i] >= ANYPOLL_STDIO_PIPE;
  if (!ok) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}
