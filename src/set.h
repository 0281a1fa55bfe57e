/* SPDX-License-Identifier: MIT */
/* The contract between the watch set's front end (src/set.c) and its
 * backends (epoll on Linux, the portable one on anypoll_poll, the I/O
 * completion port on Windows). Nothing declared here is exported. */
#ifndef ANYPOLL_SET_H
#define ANYPOLL_SET_H

#include "internal.h"

enum { ANYPOLL__SET_ADD = 1, ANYPOLL__SET_MOD = 2, ANYPOLL__SET_DEL = 3 };

/* The bits of events that are not poll bits: what a backend strips before
 * it keeps or hands on the events (ANYPOLL_UNSHARED and _ASSOCIATE mean
 * something to the Windows set only; the first is EPOLLEXCLUSIVE's bit). */
#define ANYPOLL__SET_FLAGS                                                   \
  (ANYPOLL_ONESHOT | ANYPOLL_UNSHARED | ANYPOLL_ASSOCIATE)

/* One backend. The front end has already checked every argument that does
 * not need the set's contents: set non-NULL, events within the accepted
 * bits, out non-NULL and max > 0 for wait, fd >= 0. The backend owns the
 * rest: EEXIST, ENOENT, EBADF, resources, and leaving the set unchanged on
 * every error. Every function may be called from any thread, concurrently
 * with a wait on the same set (ctl then takes effect in that wait). */
struct anypoll__set_backend {
  const char *name;
  /* A new, empty set's state, or NULL with errno. */
  void *(*create)(void);
  /* Frees the state and everything registered. 0, or -1 with errno. */
  int (*destroy)(void *state);
  /* op is one of ANYPOLL__SET_*; events and data are unused for DEL. */
  int (*ctl)(void *state, int op, int fd, unsigned events, void *data);
  /* Fills at most max entries; the count, 0 on timeout, or -1 and errno. */
  int (*wait)(void *state, struct anypoll_event *out, int max,
              int timeout_ms);
};

/* The platform's default backend, and the portable one built on
 * anypoll_poll (src/set_poll.c), which exists everywhere. */
ANYPOLL__INTERNAL_DATA const struct anypoll__set_backend
    anypoll__set_default_backend;
ANYPOLL__INTERNAL_DATA const struct anypoll__set_backend
    anypoll__set_poll_backend;

/* The portable backend's functions, for a platform whose default set
 * backend is the portable one (POSIX without epoll; Windows until its
 * completion-port backend): its anypoll__set_default_backend is built from
 * these. */
ANYPOLL__INTERNAL void *anypoll__set_poll_create(void);
ANYPOLL__INTERNAL int anypoll__set_poll_destroy(void *state);
ANYPOLL__INTERNAL int anypoll__set_poll_ctl(void *state, int op, int fd,
                                            unsigned events, void *data);
ANYPOLL__INTERNAL int anypoll__set_poll_wait(void *state,
                                             struct anypoll_event *out,
                                             int max, int timeout_ms);

/* The timeout for a backend's next system wait inside a set wait of
 * timeout_ms that ends at deadline_us (anypoll__now_us's clock): what is
 * left, rounded up so that the wait never ends early; 0 once the deadline
 * has passed, and timeout_ms itself when it is 0 or negative (no deadline).
 * src/set.c; the epoll and the portable backends share it. */
ANYPOLL__INTERNAL
int anypoll__set_remaining_ms(int timeout_ms, long long deadline_us);

/* anypoll_set_new through the named backend ("poll", or the default's
 * name); for the tests, which run every set case once per backend.
 * NULL with errno EINVAL for an unknown name. */
ANYPOLL__INTERNAL
anypoll_set *anypoll__set_new_named(const char *name);

#endif /* ANYPOLL_SET_H */
