/* SPDX-License-Identifier: MIT */
/* The watch set's front end: the argument checks every backend shares, and
 * the dispatch to the backend a set was made with (src/set.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "set.h"

struct anypoll_set {
  const struct anypoll__set_backend *backend;
  void *state;
};

/* The bits a caller may ask for. POLLERR and POLLHUP are reported whether
 * asked or not, so asking for them is harmless and accepted (epoll accepts
 * them too); POLLNVAL and anything else is a mistake. */
#define SET_EVENT_BITS                                                       \
  ((unsigned)(POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND |          \
              POLLWRNORM | POLLWRBAND | POLLERR | POLLHUP) |                  \
   ANYPOLL__SET_FLAGS)

static anypoll_set *set_new(const struct anypoll__set_backend *backend) {
  anypoll_set *set = malloc(sizeof *set);
  if (set == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  set->backend = backend;
  set->state = backend->create();
  if (set->state == NULL) {
    int saved = errno;
    free(set);
    errno = saved;
    return NULL;
  }
  return set;
}

/* Only the tests call it: in dist/anypoll.c, where internal functions are
 * static, a program never does. */
#if defined(__GNUC__)
__attribute__((unused))
#endif
anypoll_set *anypoll__set_new_named(const char *name) {
  if (name != NULL && strcmp(name, anypoll__set_poll_backend.name) == 0)
    return set_new(&anypoll__set_poll_backend);
  if (name != NULL && strcmp(name, anypoll__set_default_backend.name) == 0)
    return set_new(&anypoll__set_default_backend);
  errno = EINVAL;
  return NULL;
}

anypoll_set *anypoll_set_new(void) {
  return set_new(&anypoll__set_default_backend);
}

int anypoll_set_free(anypoll_set *set) {
  if (set == NULL) {
    errno = EINVAL;
    return -1;
  }
  int r = set->backend->destroy(set->state);
  int saved = errno;
  free(set);
  errno = saved;
  return r;
}

int anypoll__set_remaining_ms(int timeout_ms, long long deadline_us) {
  if (timeout_ms <= 0)
    return timeout_ms;
  long long left = deadline_us - anypoll__now_us();
  if (left <= 0)
    return 0;
  return (int)((left + 999) / 1000);
}

static int set_ctl(anypoll_set *set, int op, int fd, unsigned events,
                   void *data) {
  if (set == NULL || (events & ~SET_EVENT_BITS) != 0) {
    errno = EINVAL;
    return -1;
  }
  if (fd < 0) {
    errno = EBADF;
    return -1;
  }
  return set->backend->ctl(set->state, op, fd, events, data);
}

int anypoll_set_add(anypoll_set *set, int fd, unsigned events, void *data) {
  return set_ctl(set, ANYPOLL__SET_ADD, fd, events, data);
}

int anypoll_set_mod(anypoll_set *set, int fd, unsigned events, void *data) {
  return set_ctl(set, ANYPOLL__SET_MOD, fd, events, data);
}

int anypoll_set_del(anypoll_set *set, int fd) {
  return set_ctl(set, ANYPOLL__SET_DEL, fd, 0, NULL);
}

int anypoll_set_wait(anypoll_set *set, struct anypoll_event *out, int max,
                     int timeout_ms) {
  if (set == NULL || out == NULL || max <= 0) {
    errno = EINVAL;
    return -1;
  }
  return set->backend->wait(set->state, out, max, timeout_ms);
}
