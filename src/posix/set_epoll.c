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
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
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

/* The most events one epoll_wait returns (the kernel's EP_MAX_EVENTS). */
#define KERNEL_MAX_EVENTS ((size_t)INT_MAX / sizeof(struct epoll_event))

struct slot {
  int fd;            /* -1: free */
  unsigned events;   /* without ANYPOLL_ONESHOT */
  int oneshot;
  int always;        /* refused by epoll (EPERM): always ready */
  int disabled;      /* always-ready and one-shot, already reported */
  int gone;          /* always-ready, its number found closed or reused */
  dev_t dev;         /* always-ready: the file the number named */
  ino_t ino;
  uint32_t gen;      /* bumped when the slot is freed */
  void *data;
  size_t next_free;
};

struct eset {
  int epfd;
  /* An eventfd in the epoll set, level-triggered, readable exactly while
   * ready_always > 0: a level, not an edge, so that every thread blocked
   * in epoll_wait wakes for an always-ready entry (the kernel passes a
   * level on from waiter to waiter; one edge wakes one). Made with the
   * set, never later, so that it cannot take the number of a descriptor
   * the program closed before its del, whose late del would then remove
   * it from the epoll set. */
  int wakefd;
  pthread_mutex_t lock;
  struct slot *slots;
  size_t nslots, free_head; /* free list through next_free; nslots: none */
  size_t nlive;             /* slots in use */
  size_t *index; /* index[fd]: slot + 1, or 0 */
  size_t index_cap;
  size_t *always; /* the slots of always-ready entries */
  size_t nalways, always_cap;
  size_t rot;     /* the slot a wait with always-ready entries starts at */
  /* Always-ready entries that a wait would report now (always_ready()).
   * Changed under the lock, read without it by a wait choosing how to
   * wait; the compiler's atomic built-ins rather than _Atomic, which C99
   * hosts of the one-file release do not accept. */
  size_t ready_always;
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
  struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_ID };
  s->wakefd = -1;
  s->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (s->epfd < 0 ||
      (s->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
      epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wakefd, &ev) != 0)
    goto fail;
  if (pthread_mutex_init(&s->lock, NULL) != 0) {
    errno = EAGAIN;
    goto fail;
  }
  return s;
fail:;
  int saved = errno;
  if (s->wakefd >= 0)
    close(s->wakefd);
  if (s->epfd >= 0)
    close(s->epfd);
  free(s);
  errno = saved;
  return NULL;
}

static int epoll_destroy_set(void *state) {
  struct eset *s = state;
  close(s->epfd);
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

/* A free slot, and room in the index for fd, which is open (so below the
 * descriptor limit). Under the lock. */
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
  if (s->nalways == s->always_cap) {
    /* Room for one more always-ready entry, before the kernel is asked:
     * after it answers, nothing may fail. */
    size_t cap = s->always_cap ? s->always_cap * 2 : 8;
    size_t *a = realloc(s->always, cap * sizeof *a);
    if (a == NULL)
      return -1;
    s->always = a;
    s->always_cap = cap;
  }
  *slot = s->free_head;
  return 0;
}

static void remove_always(struct eset *s, size_t slot) {
  for (size_t i = 0; i < s->nalways; i++) {
    if (s->always[i] == slot) {
      s->always[i] = s->always[--s->nalways];
      break;
    }
  }
}

/* Whether a wait would report this always-ready entry: enabled, its
 * number still naming its file, and asked for a bit such a descriptor
 * has. One asked for nothing of these (events 0, POLLPRI alone) is never
 * ready, and must not keep the waits from sleeping. */
static int always_ready(const struct slot *sl) {
  return sl->always && !sl->disabled && !sl->gone &&
         (sl->events & ALWAYS_READY_BITS) != 0;
}

/* Counts an entry becoming ready (now) or not (!now), and keeps the
 * eventfd readable exactly while the count is above 0. Under the lock. */
static void ready_change(struct eset *s, int was, int now) {
  size_t n = s->ready_always;
  uint64_t v = 1;
  if (was == now)
    return;
  __atomic_store_n(&s->ready_always, now ? n + 1 : n - 1, __ATOMIC_RELAXED);
  /* Neither can fail: the counter is 0 or 1, and the eventfd is ours. */
  if (now && n == 0)
    (void)!write(s->wakefd, &v, sizeof v);
  else if (!now && n == 1)
    (void)!read(s->wakefd, &v, sizeof v);
}

/* Whether an always-ready entry's number still names the file it was
 * registered with: 0, EBADF (closed), or ENOENT (reused by another file,
 * which the set does not hold, as epoll would not). */
static int always_same_file(const struct slot *sl) {
  struct stat st;
  if (fstat(sl->fd, &st) != 0)
    return EBADF;
  return st.st_dev == sl->dev && st.st_ino == sl->ino ? 0 : ENOENT;
}

/* add: registers fd in a free slot. 0 or an errno value. Under the lock. */
static int eset_add(struct eset *s, int fd, struct epoll_event *ev,
                    size_t *slotp) {
  size_t slot;
  struct stat st;
  int always = 0;
  /* Open, before anything is allocated for it: a number far above every
   * open one (2^24, INT_MAX) would otherwise grow the index to its size
   * for the kernel's EBADF. */
  if (fcntl(fd, F_GETFD) < 0)
    return EBADF;
  if (eset_reserve(s, fd, &slot) != 0)
    return ENOMEM;
  ev->data.u64 = slot_id(s, slot);
  if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, ev) != 0) {
    if (errno == EEXIST) {
      /* Ours, though the table has no entry: closed before its del while
       * a dup kept the file open (the kernel kept the registration), and
       * the same file is back under this number. Take it over. */
      if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, ev) != 0)
        return errno;
    } else if (errno != EPERM) {
      return errno == ENOSPC ? ENOMEM : errno;
    } else if (fstat(fd, &st) != 0) {
      return errno;
    } else {
      always = 1;
    }
  }
  struct slot *sl = &s->slots[slot];
  s->free_head = sl->next_free;
  sl->fd = fd;
  sl->always = always;
  sl->disabled = sl->gone = 0;
  sl->events = 0;
  if (always) {
    sl->dev = st.st_dev;
    sl->ino = st.st_ino;
    s->always[s->nalways++] = slot;
  }
  s->index[fd] = slot + 1;
  s->nlive++;
  *slotp = slot;
  return 0;
}

static int epoll_ctl_set(void *state, int op, int fd, unsigned events,
                         void *data) {
  struct eset *s = state;
  struct epoll_event ev;
  size_t slot = 0;
  int err = 0, cancel;
  /* Not a cancellation point: a thread cancelled inside would leave the
   * lock held (write() and read() on the eventfd are cancellation
   * points). A pending cancellation acts after the call. */
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  memset(&ev, 0, sizeof ev);
  ev.events = (events & ~ANYPOLL_ONESHOT) |
              (events & ANYPOLL_ONESHOT ? EPOLLONESHOT : 0);
  pthread_mutex_lock(&s->lock);
  int found = eset_find(s, fd, &slot);
  /* The kernel's answer comes under the lock too, so that the table and
   * the epoll set change together. */
  if (op == ANYPOLL__SET_ADD) {
    err = found ? EEXIST : eset_add(s, fd, &ev, &slot);
  } else if (!found) {
    err = fcntl(fd, F_GETFD) < 0 ? EBADF : ENOENT;
  } else if (op == ANYPOLL__SET_MOD) {
    struct slot *sl = &s->slots[slot];
    ev.data.u64 = slot_id(s, slot);
    if (sl->always)
      err = always_same_file(sl);
    else if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev) != 0)
      err = errno;
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
        ready_change(s, always_ready(sl), 0);
        remove_always(s, slot);
      }
      s->index[fd] = 0;
      sl->fd = -1;
      sl->gen++;
      sl->next_free = s->free_head;
      s->free_head = slot;
      s->nlive--;
    }
  }
  if (err == 0 && op != ANYPOLL__SET_DEL) {
    struct slot *sl = &s->slots[slot];
    int was = always_ready(sl);
    sl->events = events & ~ANYPOLL_ONESHOT;
    sl->oneshot = (events & ANYPOLL_ONESHOT) != 0;
    sl->disabled = 0;
    sl->gone = 0;
    sl->data = data;
    ready_change(s, was, always_ready(sl));
  }
  pthread_mutex_unlock(&s->lock);
  pthread_setcancelstate(cancel, NULL);
  if (err != 0) {
    errno = err;
    return -1;
  }
  return 0;
}

/* The slot an epoll event stands for, and the bits to report: 0 for the
 * eventfd's, for a slot deleted (or deleted and reused) since, and for
 * one whose events a mod has narrowed since. Under the lock. */
static unsigned kernel_bits(const struct eset *s, const struct epoll_event *e,
                            size_t *slot) {
  uint64_t id = e->data.u64;
  *slot = (uint32_t)id;
  if (id == WAKE_ID || *slot >= s->nslots || s->slots[*slot].fd < 0 ||
      s->slots[*slot].gen != (uint32_t)(id >> 32))
    return 0;
  return e->events & (s->slots[*slot].events | POLLERR | POLLHUP);
}

static void put(struct anypoll_event *o, const struct slot *sl,
                unsigned bits) {
  o->fd = sl->fd;
  o->events = bits;
  o->data = sl->data;
}

/* A wait without always-ready entries: the kernel's events, in the
 * kernel's order, which rotates (each level-triggered event it returns
 * goes to the back of its ready list). Under the lock. */
static int fill_kernel(struct eset *s, const struct epoll_event *ev, int k,
                       struct anypoll_event *out) {
  int filled = 0;
  for (int i = 0; i < k; i++) {
    size_t slot;
    unsigned bits = kernel_bits(s, &ev[i], &slot);
    if (bits != 0)
      put(&out[filled++], &s->slots[slot], bits);
  }
  return filled;
}

/* A ready entry of a wait with always-ready entries, and its place in
 * slot order counted from the rotation point. */
struct pick {
  size_t key, slot;
  unsigned bits;
};

static int pick_order(const void *a, const void *b) {
  size_t x = ((const struct pick *)a)->key, y = ((const struct pick *)b)->key;
  return x < y ? -1 : x > y;
}

/* A wait with always-ready entries: every ready entry of both kinds (the
 * kernel gave all of its own), in slot order from the rotation point, the
 * first max reported; so with a steady set of ready entries each is
 * reported within ceil(ready / max) waits, whatever its kind. A one-shot
 * kernel event left out is re-armed: the kernel disabled it when it
 * returned it. pick has room for k + nalways. Under the lock. */
static int fill_rotated(struct eset *s, const struct epoll_event *ev, int k,
                        struct anypoll_event *out, int max,
                        struct pick *pick) {
  size_t np = 0, n = s->nslots, r = s->rot % (n ? n : 1);
  for (int i = 0; i < k; i++) {
    size_t slot;
    unsigned bits = kernel_bits(s, &ev[i], &slot);
    if (bits != 0) {
      pick[np].slot = slot;
      pick[np++].bits = bits;
    }
  }
  for (size_t i = 0; i < s->nalways; i++) {
    struct slot *sl = &s->slots[s->always[i]];
    if (!always_ready(sl))
      continue;
    if (always_same_file(sl) != 0) {
      /* Closed before its del, or its number reused: no longer reported,
       * as epoll drops a closed entry. The del still removes it. */
      sl->gone = 1;
      ready_change(s, 1, 0);
      continue;
    }
    pick[np].slot = s->always[i];
    pick[np++].bits = sl->events & ALWAYS_READY_BITS;
  }
  for (size_t i = 0; i < np; i++)
    pick[i].key = pick[i].slot >= r ? pick[i].slot - r : pick[i].slot + n - r;
  qsort(pick, np, sizeof *pick, pick_order);
  int filled = 0;
  for (size_t i = 0; i < np; i++) {
    struct slot *sl = &s->slots[pick[i].slot];
    if (filled < max) {
      put(&out[filled++], sl, pick[i].bits);
      s->rot = pick[i].slot + 1;
      if (sl->always && sl->oneshot) {
        sl->disabled = 1;
        ready_change(s, 1, 0);
      }
    } else if (!sl->always && sl->oneshot) {
      struct epoll_event e;
      memset(&e, 0, sizeof e);
      e.events = sl->events | EPOLLONESHOT;
      e.data.u64 = slot_id(s, pick[i].slot);
      /* Fails only for a number closed since: nothing to re-arm. */
      (void)epoll_ctl(s->epfd, EPOLL_CTL_MOD, sl->fd, &e);
    }
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

/* A wait's buffers: on its stack up to STACK_EVENTS, else on the heap,
 * freed on return and by a cancellation in epoll_wait. */
struct bufs {
  struct epoll_event stack_ev[STACK_EVENTS];
  struct pick stack_pick[STACK_EVENTS];
  struct epoll_event *ev;
  struct pick *pick;
  size_t ev_cap, pick_cap;
};

static void bufs_free(void *arg) {
  struct bufs *b = arg;
  if (b->ev != b->stack_ev)
    free(b->ev);
  if (b->pick != b->stack_pick)
    free(b->pick);
}

static int bufs_grow(void **p, size_t *cap, size_t n, size_t size,
                     void *stack) {
  if (n <= *cap)
    return 0;
  void *q = realloc(*p == stack ? NULL : *p, n * size);
  if (q == NULL)
    return -1;
  *p = q;
  *cap = n;
  return 0;
}

/* One epoll_wait, the only cancellation point of a wait: a thread
 * cancelled in it leaves nothing held, and its buffers are freed. */
static int kernel_wait(struct eset *s, struct bufs *b, size_t n, int t,
                       int cancel) {
  int k;
  pthread_cleanup_push(bufs_free, b);
  pthread_setcancelstate(cancel, NULL);
  k = epoll_wait(s->epfd, b->ev, (int)n, t);
  int saved = errno;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  errno = saved;
  pthread_cleanup_pop(0);
  return k;
}

static int epoll_wait_set(void *state, struct anypoll_event *out, int max,
                          int timeout_ms) {
  struct eset *s = state;
  struct bufs b;
  int cancel, filled;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  b.ev = b.stack_ev;
  b.pick = b.stack_pick;
  b.ev_cap = b.pick_cap = STACK_EVENTS;
  long long deadline =
      timeout_ms > 0 ? anypoll__now_us() + (long long)timeout_ms * 1000 : 0;
  for (;;) {
    /* Always-ready entries ready: they are ready now, so the kernel is
     * only looked at, and for all of its ready events, to rotate over
     * both kinds at once. Else up to max of the kernel's, never more
     * than it can hold (the registered ones and the eventfd), so that a
     * huge max costs no memory and is never refused. */
    int gather = __atomic_load_n(&s->ready_always, __ATOMIC_RELAXED) > 0;
    pthread_mutex_lock(&s->lock);
    size_t n = s->nlive - s->nalways + 1;
    pthread_mutex_unlock(&s->lock);
    if (!gather && n > (size_t)max)
      n = (size_t)max;
    if (n > KERNEL_MAX_EVENTS)
      n = KERNEL_MAX_EVENTS;
    if (bufs_grow((void **)&b.ev, &b.ev_cap, n, sizeof *b.ev, b.stack_ev)) {
      errno = ENOMEM;
      filled = -1;
      break;
    }
    int t = gather ? 0 : eset_remaining_ms(timeout_ms, deadline);
    int k = kernel_wait(s, &b, n, t, cancel);
    if (k < 0) {
      filled = -1;
      break;
    }
    int woken = 0;
    for (int i = 0; i < k; i++)
      woken |= b.ev[i].data.u64 == WAKE_ID;
    pthread_mutex_lock(&s->lock);
    if (!gather && !woken) {
      filled = fill_kernel(s, b.ev, k, out);
    } else if (bufs_grow((void **)&b.pick, &b.pick_cap,
                         (size_t)k + s->nalways, sizeof *b.pick,
                         b.stack_pick) != 0) {
      errno = ENOMEM;
      filled = -1;
    } else {
      filled = fill_rotated(s, b.ev, k, out, max, b.pick);
    }
    pthread_mutex_unlock(&s->lock);
    if (filled != 0 || timeout_ms == 0 ||
        (timeout_ms > 0 && anypoll__now_us() >= deadline))
      break;
  }
  bufs_free(&b);
  pthread_setcancelstate(cancel, NULL);
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
