/* SPDX-License-Identifier: MIT */
/* The watch set on Linux: a thin layer over epoll, level-triggered, with
 * ANYPOLL_ONESHOT as EPOLLONESHOT; this file makes the set and changes it,
 * set_epoll_wait.c waits. On POSIX systems without epoll (or built with
 * -DANYPOLL_HAVE_EPOLL=0, which keeps the portable backend testable on
 * Linux) the default set backend is the portable one (src/set_poll.c),
 * chosen below.
 *
 * What the layer adds to epoll:
 * - Descriptors epoll refuses with EPERM (regular files, /dev/null and
 *   other devices without a poll method) are kept in a table of their own
 *   and reported ready by every wait, with the bits poll() reports for
 *   them; we are a poll library. Such an entry is ready only when it asks
 *   for a bit these descriptors have (POLLIN, POLLOUT and their RD/WR
 *   forms), and only while its number still names the file it was
 *   registered with (dev and inode, checked at each report): a closed one
 *   is no longer reported, as epoll drops a closed entry.
 * - A level-triggered eventfd in the epoll set, readable exactly while
 *   such an entry is ready, so that every waiter wakes for it.
 * - With such entries ready, one rotation over both kinds, in slot order
 *   (set_epoll_wait.c).
 * - epoll's data carries a slot number and a generation, looked up under
 *   the set's lock, never a pointer: a del in another thread between
 *   epoll_wait and the look-up leaves a stale number, which is recognised
 *   and dropped, instead of a pointer to freed memory.
 * - The bits reported are those poll() reports: epoll's EPOLL* values are
 *   the POLL* values on Linux (checked in set_epoll.h), and the kernel
 *   computes both from the same poll method, masked by the events asked
 *   for plus EPOLLERR and EPOLLHUP. Only the bits asked for (POLLIN,
 *   POLLPRI, POLLOUT and their RD/WR variants) are passed, so EPOLLRDHUP
 *   and EPOLLEXCLUSIVE, which poll() lacks, are never asked for nor
 *   reported.
 * - Thread cancellation: ctl is no cancellation point, and a wait is
 *   cancelled only inside epoll_wait, where it holds nothing. */
#include "set_epoll.h"

#if ANYPOLL_HAVE_EPOLL

ANYPOLL__INTERNAL uint64_t anypoll__eset_slot_id(const struct eset *s,
                                                 size_t i) {
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
ANYPOLL__INTERNAL int anypoll__eset_always_ready(const struct slot *sl) {
  return sl->always && !sl->disabled && !sl->gone &&
         (sl->events & ALWAYS_READY_BITS) != 0;
}

/* Counts an entry becoming ready (now) or not (!now), and keeps the
 * eventfd readable exactly while the count is above 0. Under the lock. */
ANYPOLL__INTERNAL void anypoll__eset_ready_change(struct eset *s, int was,
                                                  int now) {
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
ANYPOLL__INTERNAL int anypoll__eset_same_file(const struct slot *sl) {
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
  /* The set's own: the kernel refuses the epoll descriptor (EINVAL), and
   * the eventfd is registered already under WAKE_ID, so the EEXIST path
   * below would take it over and report it as the program's. */
  if (fd == s->epfd || fd == s->wakefd)
    return EINVAL;
  if (eset_reserve(s, fd, &slot) != 0)
    return ENOMEM;
  ev->data.u64 = anypoll__eset_slot_id(s, slot);
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
  /* ANYPOLL_UNSHARED concerns Windows' pipes only (its bit is
   * EPOLLEXCLUSIVE's, which must not reach the kernel). */
  ev.events = (events & ~(ANYPOLL_ONESHOT | ANYPOLL_UNSHARED)) |
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
    ev.data.u64 = anypoll__eset_slot_id(s, slot);
    if (sl->always)
      err = anypoll__eset_same_file(sl);
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
        anypoll__eset_ready_change(s, anypoll__eset_always_ready(sl), 0);
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
    int was = anypoll__eset_always_ready(sl);
    sl->events = events & ~(ANYPOLL_ONESHOT | ANYPOLL_UNSHARED);
    sl->oneshot = (events & ANYPOLL_ONESHOT) != 0;
    sl->disabled = 0;
    sl->gone = 0;
    sl->data = data;
    anypoll__eset_ready_change(s, was, anypoll__eset_always_ready(sl));
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
ANYPOLL__INTERNAL const struct anypoll__set_backend
    anypoll__set_default_backend = { "epoll", epoll_create_set,
                                     epoll_destroy_set, epoll_ctl_set,
                                     anypoll__eset_wait };

#else /* !ANYPOLL_HAVE_EPOLL */

/* No epoll: the portable backend is the default. */
ANYPOLL__INTERNAL const struct anypoll__set_backend
    anypoll__set_default_backend = { "poll", anypoll__set_poll_create,
                                     anypoll__set_poll_destroy,
                                     anypoll__set_poll_ctl,
                                     anypoll__set_poll_wait };

#endif /* ANYPOLL_HAVE_EPOLL */