/* SPDX-License-Identifier: MIT */
/* The watch set on Linux: a thin layer over epoll, level-triggered, with
 * ANYPOLL_ONESHOT as EPOLLONESHOT; this file makes the set and keeps its
 * always-ready entries' count, set_epoll_ctl.c changes it, set_epoll_wait.c
 * waits. On POSIX systems without epoll (or built with
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

ANYPOLL__INTERNAL const struct anypoll__set_backend
    anypoll__set_default_backend = { "epoll", epoll_create_set,
                                     epoll_destroy_set, anypoll__eset_ctl,
                                     anypoll__eset_wait };

#else /* !ANYPOLL_HAVE_EPOLL */

/* No epoll: the portable backend is the default. */
ANYPOLL__INTERNAL const struct anypoll__set_backend
    anypoll__set_default_backend = { "poll", anypoll__set_poll_create,
                                     anypoll__set_poll_destroy,
                                     anypoll__set_poll_ctl,
                                     anypoll__set_poll_wait };

#endif /* ANYPOLL_HAVE_EPOLL */
