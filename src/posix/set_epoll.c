/* SPDX-License-Identifier: MIT */
/* The watch set on Linux: a thin layer over epoll, level-triggered, with
 * ANYPOLL_ONESHOT as EPOLLONESHOT. On POSIX systems without epoll the
 * default set backend is the portable one (src/set_poll.c), chosen below.
 *
 * What the layer adds to epoll:
 * - Descriptors epoll refuses with EPERM (regular files, /dev/null and
 *   other devices without a poll method) are kept in a table of their own
 *   and reported ready by every wait, with the bits poll() reports for
 *   them; we are a poll library.
 * - epoll's data carries a slot number and a generation, looked up under
 *   the set's lock, never a pointer: a del in another thread between
 *   epoll_wait and the look-up leaves a stale number, which is recognised
 *   and dropped, instead of a pointer to freed memory.
 * - The bits reported are those poll() reports: epoll's EPOLL* values are
 *   the POLL* values on Linux (checked below), and the kernel computes both
 *   from the same poll method, masked by the events asked for plus EPOLLERR
 *   and EPOLLHUP. Only the bits asked for (POLLIN, POLLPRI, POLLOUT and
 *   their RD/WR variants) are passed, so EPOLLRDHUP and EPOLLEXCLUSIVE,
 *   which poll() lacks, are never asked for nor reported. */
#include "posix.h"
#include "../set.h"

#ifndef ANYPOLL_HAVE_EPOLL
#  ifdef __linux__
#    define ANYPOLL_HAVE_EPOLL 1
#  else
#    define ANYPOLL_HAVE_EPOLL 0
#  endif
#endif

#if ANYPOLL_HAVE_EPOLL

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Compile-time checks in a form C99 accepts too (the one-file releases
 * are built by hosts with -std=c99 -pedantic): an array of size -1 does
 * not compile. */
typedef char anypoll__epoll_bits_are_poll_bits
    [(EPOLLIN == POLLIN && EPOLLPRI == POLLPRI && EPOLLOUT == POLLOUT &&
      EPOLLERR == POLLERR && EPOLLHUP == POLLHUP &&
      EPOLLRDNORM == POLLRDNORM && EPOLLRDBAND == POLLRDBAND &&
      EPOLLWRNORM == POLLWRNORM && EPOLLWRBAND == POLLWRBAND)
         ? 1
         : -1];
typedef char anypoll__epoll_oneshot_outside_poll_bits
    [(EPOLLONESHOT & (POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND |
                      POLLWRNORM | POLLWRBAND | POLLERR | POLLHUP)) == 0
         ? 1
         : -1];

/* What poll() reports for a descriptor without a poll method (the
 * kernel's DEFAULT_POLLMASK), before the mask by the events asked for. */
#define ALWAYS_READY_BITS (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM)

/* The epoll data of the wake-up eventfd: no slot has this number. */
#define WAKE_ID UINT64_MAX

struct slot {
  int fd;            /* -1: free */
  unsigned events;   /* without ANYPOLL_ONESHOT */
  int oneshot;
  int always;        /* refused by epoll (EPERM): always ready */
  int disabled;      /* always-ready and one-shot, already reported */
  uint32_t gen;      /* bumped when the slot is freed */
  void *data;
  size_t next_free;
};

struct eset {
  int epfd;
  int wakefd; /* an eventfd, made for the first always-ready entry */
  pthread_mutex_t lock;
  struct slot *slots;
  size_t nslots, free_head; /* free list through next_free; nslots: none */
  size_t *index; /* index[fd]: slot + 1, or 0 */
  size_t index_cap;
  size_t *always; /* the slots of always-ready entries */
  size_t nalways, always_cap;
  size_t always_rot;
  /* Enabled always-ready entries: a wait with any does not block. Changed
   * under the lock, read without it by a wait deciding whether to block;
   * accessed with the compiler's atomic built-ins rather than _Atomic, which
   * C99 hosts of the one-file release do not accept. */
  size_t always_enabled;
  unsigned parity;
};

static uint64_t slot_id(const struct eset *s, size_t i) {
  return (uint64_t)s->slots[i].gen << 32 | (uint32_t)i;
}

static void *epoll_create_set(void) {
  struct eset *s = calloc(1, sizeof *s);
  if (s == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  s->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (s->epfd < 0) {
    int saved = errno;
    free(s);
    errno = saved;
    return NULL;
  }
  if (pthread_mutex_init(&s->lock, NULL) != 0) {
    close(s->epfd);
    free(s);
    errno = EAGAIN;
    return NULL;
  }
  s->wakefd = -1;
  s->free_head = 0;
  return s;
}

static int epoll_destroy_set(void *state) {
  struct eset *s = state;
  close(s->epfd);
  if (s->wakefd >= 0)
    close(s->wakefd);
  pthread_mutex_destroy(&s->lock);
  free(s->slots);
  free(s->index);
  free(s->always);
  free(s);
  return 0;
}

static int eset_find(const struct eset *s, int fd, size_t *slot) {
  if ((size_t)fd >= s->index_cap || s->index[fd] == 0)
    return 0;
  *slot = s->index[fd] - 1;
  return 1;
}

/* A free slot, and room in the index for fd. Under the lock. */
static int eset_reserve(struct eset *s, int fd, size_t *slot) {
  if ((size_t)fd >= s->index_cap) {
    size_t cap = s->index_cap ? s->index_cap : 64;
    while (cap <= (size_t)fd)
      cap *= 2;
    size_t *index = realloc(s->index, cap * sizeof *index);
    if (index == NULL)
      return -1;
    memset(index + s->index_cap, 0, (cap - s->index_cap) * sizeof *index);
    s->index = index;
    s->index_cap = cap;
  }
  if (s->free_head == s->nslots) {
    size_t n = s->nslots ? s->nslots * 2 : 16;
    if (n > UINT32_MAX)
      return -1;
    struct slot *slots = realloc(s->slots, n * sizeof *slots);
    if (slots == NULL)
      return -1;
    for (size_t i = s->nslots; i < n; i++) {
      slots[i].fd = -1;
      slots[i].gen = 0;
      slots[i].next_free = i + 1;
    }
    s->slots = slots;
    s->free_head = s->nslots;
    s->nslots = n;
    /* The last new slot's next_free is n: "none" in the grown table. */
  }
  *slot = s->free_head;
  return 0;
}

static int add_always(struct eset *s, size_t slot) {
  if (s->wakefd < 0) {
    /* Made on first need: most sets never hold an always-ready entry. */
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
      return -1;
    /* Edge-triggered and never read: each write is one edge, which wakes
     * a waiter blocked in epoll_wait so that it sees the new entry. */
    struct epoll_event ev = { .events = EPOLLIN | EPOLLET,
                              .data.u64 = WAKE_ID };
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      int saved = errno;
      close(fd);
      errno = saved;
      return -1;
    }
    s->wakefd = fd;
  }
  if (s->nalways == s->always_cap) {
    size_t cap = s->always_cap ? s->always_cap * 2 : 8;
    size_t *a = realloc(s->always, cap * sizeof *a);
    if (a == NULL) {
      errno = ENOMEM;
      return -1;
    }
    s->always = a;
    s->always_cap = cap;
  }
  s->always[s->nalways++] = slot;
  return 0;
}

static void remove_always(struct eset *s, size_t slot) {
  for (size_t i = 0; i < s->nalways; i++) {
    if (s->always[i] == slot) {
      s->always[i] = s->always[--s->nalways];
      break;
    }
  }
  if (s->always_rot >= s->nalways)
    s->always_rot = 0;
}

/* Wakes a waiter blocked in epoll_wait to report an always-ready entry. */
static void eset_wake(struct eset *s) {
  uint64_t one = 1;
  /* Cannot fail short of a counter at 2^64 - 2, which takes centuries. */
  (void)!write(s->wakefd, &one, sizeof one);
}

static int epoll_ctl_set(void *state, int op, int fd, unsigned events,
                         void *data) {
  struct eset *s = state;
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  /* ANYPOLL_UNSHARED concerns Windows' pipes only (its bit is
   * EPOLLEXCLUSIVE's, which must not reach the kernel). */
  ev.events = (events & ~(ANYPOLL_ONESHOT | ANYPOLL_UNSHARED)) |
              (events & ANYPOLL_ONESHOT ? EPOLLONESHOT : 0);
  size_t slot;
  int err = 0;
  pthread_mutex_lock(&s->lock);
  int found = eset_find(s, fd, &slot);
  /* The kernel's answer comes under the lock too, so that the table and
   * the epoll set change together. */
  if (op == ANYPOLL__SET_ADD) {
    if (found) {
      err = EEXIST;
    } else if (eset_reserve(s, fd, &slot) != 0) {
      err = ENOMEM;
    } else {
      struct slot *sl = &s->slots[slot];
      ev.data.u64 = slot_id(s, slot);
      int always = 0;
      if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        if (errno != EPERM)
          err = errno == ENOSPC ? ENOMEM : errno;
        else if (add_always(s, slot) != 0)
          err = errno;
        else
          always = 1;
      }
      if (err == 0) {
        s->free_head = sl->next_free;
        sl->fd = fd;
        sl->always = always;
        s->index[fd] = slot + 1;
      }
    }
  } else if (!found) {
    err = fcntl(fd, F_GETFD) < 0 ? EBADF : ENOENT;
  } else if (op == ANYPOLL__SET_MOD) {
    struct slot *sl = &s->slots[slot];
    ev.data.u64 = slot_id(s, slot);
    if (!sl->always && epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev) != 0)
      err = errno;
    else if (sl->always && fcntl(fd, F_GETFD) < 0)
      err = EBADF;
  } else {
    struct slot *sl = &s->slots[slot];
    /* EBADF or ENOENT: the descriptor was closed (and perhaps its number
     * reused) before its del. The kernel dropped the registration with the
     * last descriptor of the open file; the entry goes now. */
    if (!sl->always && epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, &ev) != 0 &&
        errno != EBADF && errno != ENOENT)
      err = errno;
    if (err == 0) {
      if (sl->always) {
        if (!sl->disabled)
          __atomic_fetch_sub(&s->always_enabled, 1, __ATOMIC_RELAXED);
        remove_always(s, slot);
      }
      s->index[fd] = 0;
      sl->fd = -1;
      sl->gen++;
      sl->next_free = s->free_head;
      s->free_head = slot;
    }
  }
  if (err == 0 && op != ANYPOLL__SET_DEL) {
    struct slot *sl = &s->slots[slot];
    int was_enabled = op == ANYPOLL__SET_MOD && sl->always && !sl->disabled;
    sl->events = events & ~(ANYPOLL_ONESHOT | ANYPOLL_UNSHARED);
    sl->oneshot = (events & ANYPOLL_ONESHOT) != 0;
    sl->disabled = 0;
    sl->data = data;
    if (sl->always && !was_enabled) {
      __atomic_fetch_add(&s->always_enabled, 1, __ATOMIC_RELAXED);
      eset_wake(s);
    }
  }
  pthread_mutex_unlock(&s->lock);
  if (err != 0) {
    errno = err;
    return -1;
  }
  return 0;
}

/* Appends the enabled always-ready entries to out, from the rotation
 * point on, up to max in all. Under the lock. */
static int fill_always(struct eset *s, struct anypoll_event *out, int filled,
                       int max) {
  size_t n = s->nalways, last = 0;
  int took = 0;
  for (size_t i = 0; i < n && filled < max; i++) {
    size_t at = (s->always_rot + i) % n;
    struct slot *sl = &s->slots[s->always[at]];
    if (sl->disabled)
      continue;
    unsigned bits = sl->events & ALWAYS_READY_BITS;
    if (bits == 0)
      continue;
    out[filled].fd = sl->fd;
    out[filled].events = bits;
    out[filled].data = sl->data;
    filled++;
    took = 1;
    last = at;
    if (sl->oneshot) {
      sl->disabled = 1;
      __atomic_fetch_sub(&s->always_enabled, 1, __ATOMIC_RELAXED);
    }
  }
  if (took)
    s->always_rot = (last + 1) % n;
  return filled;
}

/* Translates epoll's events into out, dropping those of slots deleted (or
 * deleted and reused) since. Under the lock. */
static int fill_kernel(struct eset *s, const struct epoll_event *ev, int k,
                       struct anypoll_event *out, int filled) {
  for (int i = 0; i < k; i++) {
    uint64_t id = ev[i].data.u64;
    if (id == WAKE_ID)
      continue;
    size_t slot = (uint32_t)id;
    if (slot >= s->nslots || s->slots[slot].fd < 0 ||
        s->slots[slot].gen != (uint32_t)(id >> 32))
      continue;
    const struct slot *sl = &s->slots[slot];
    /* A mod since the kernel queued the event may have narrowed it. */
    unsigned bits = ev[i].events & (sl->events | POLLERR | POLLHUP);
    if (bits == 0)
      continue;
    out[filled].fd = sl->fd;
    out[filled].events = bits;
    out[filled].data = sl->data;
    filled++;
  }
  return filled;
}

static int eset_remaining_ms(int timeout_ms, long long deadline_us) {
  if (timeout_ms <= 0)
    return timeout_ms;
  long long left = deadline_us - anypoll__now_us();
  if (left <= 0)
    return 0;
  return (int)((left + 999) / 1000);
}

#define STACK_EVENTS 64

static int epoll_wait_set(void *state, struct anypoll_event *out, int max,
                          int timeout_ms) {
  struct eset *s = state;
  struct epoll_event stack_ev[STACK_EVENTS];
  struct epoll_event *ev = stack_ev;
  if (max > STACK_EVENTS) {
    ev = malloc((size_t)max * sizeof *ev);
    if (ev == NULL) {
      errno = ENOMEM;
      return -1;
    }
  }
  long long deadline =
      timeout_ms > 0 ? anypoll__now_us() + (long long)timeout_ms * 1000 : 0;
  int filled;
  for (;;) {
    filled = 0;
    int always_done = 0;
    int t = eset_remaining_ms(timeout_ms, deadline);
    if (__atomic_load_n(&s->always_enabled, __ATOMIC_RELAXED) > 0) {
      /* Always-ready entries are ready now: look at the kernel's without
       * waiting. With both kinds ready, every other wait lets the always
       * ready ones go first, so that neither kind can starve the other. */
      t = 0;
      if (__atomic_fetch_add(&s->parity, 1, __ATOMIC_RELAXED) & 1) {
        pthread_mutex_lock(&s->lock);
        filled = fill_always(s, out, 0, max);
        pthread_mutex_unlock(&s->lock);
        always_done = 1;
      }
    }
    int k = 0;
    if (filled < max) {
      k = epoll_wait(s->epfd, ev, max - filled, t);
      if (k < 0) {
        if (filled > 0)
          break; /* report what the always-ready entries gave */
        filled = -1;
        break;
      }
    }
    pthread_mutex_lock(&s->lock);
    filled = fill_kernel(s, ev, k, out, filled);
    if (!always_done && filled < max &&
        __atomic_load_n(&s->always_enabled, __ATOMIC_RELAXED) > 0)
      filled = fill_always(s, out, filled, max);
    pthread_mutex_unlock(&s->lock);
    if (filled > 0 || timeout_ms == 0 ||
        (timeout_ms > 0 && anypoll__now_us() >= deadline))
      break;
  }
  if (ev != stack_ev)
    free(ev);
  return filled;
}

ANYPOLL__INTERNAL const struct anypoll__set_backend
    anypoll__set_default_backend = { "epoll", epoll_create_set,
                                     epoll_destroy_set, epoll_ctl_set,
                                     epoll_wait_set };

#else /* !ANYPOLL_HAVE_EPOLL */

/* No epoll: the portable backend is the default. */
ANYPOLL__INTERNAL const struct anypoll__set_backend
    anypoll__set_default_backend = { "poll", anypoll__set_poll_create,
                                     anypoll__set_poll_destroy,
                                     anypoll__set_poll_ctl,
                                     anypoll__set_poll_wait };

#endif /* ANYPOLL_HAVE_EPOLL */
