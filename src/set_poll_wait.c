/* SPDX-License-Identifier: MIT */
/* The watch set's portable backend: the wait (set_poll.c has the set, its
 * table and ctl, and how the threads work together). Each wait takes a
 * waiter, polls the enabled registrations and the waiter's wake pipe with
 * anypoll_poll, and builds its array again whenever a change of the set
 * wakes it. */
#include "set_poll.h"

#define ALWAYS_BITS ((unsigned)(POLLERR | POLLHUP | POLLNVAL))

static int waiter_reserve(struct waiter *w, size_t n) {
  if (n <= w->cap)
    return 0;
  size_t cap = w->cap ? w->cap : 16;
  while (cap < n)
    cap *= 2;
  struct pollfd *fds = realloc(w->fds, cap * sizeof *fds);
  if (fds == NULL)
    return -1;
  w->fds = fds;
  unsigned long long *ids = realloc(w->ids, cap * sizeof *ids);
  if (ids == NULL)
    return -1;
  w->ids = ids;
  w->cap = cap;
  return 0;
}

/* Ends a waiter's anypoll_poll: a del waiting for it may go on, and the
 * wake-up byte, if one was written, is taken. Under the lock. */
static void leave_poll(struct pset *s, struct waiter *w) {
  w->in_poll = 0;
  cond_wake_all(&s->done);
  if (w->signalled) {
    drain_wake(w->rfd);
    w->signalled = 0;
  }
}

#ifdef _WIN32
static int poll_cancellable(struct pset *s, struct waiter *w,
                            anypoll_nfds_t m, int t, cancel_state cancel) {
  (void)s;
  (void)cancel;
  return anypoll_poll(w->fds, m, t);
}
#else
struct poll_ctx {
  struct pset *s;
  struct waiter *w;
};

/* A waiter cancelled in its anypoll_poll: it leaves the poll and gives
 * its waiter back, so that no del waits for it and no wait lacks it. */
static void poll_cancelled(void *arg) {
  struct poll_ctx *c = arg;
  lock_take(&c->s->lock);
  leave_poll(c->s, c->w);
  c->w->busy = 0;
  lock_give(&c->s->lock);
}

/* anypoll_poll, the one cancellation point of a wait. */
static int poll_cancellable(struct pset *s, struct waiter *w,
                            anypoll_nfds_t m, int t, cancel_state cancel) {
  struct poll_ctx c;
  int r, saved;
  c.s = s;
  c.w = w;
  pthread_cleanup_push(poll_cancelled, &c);
  cancel_restore(cancel);
  r = anypoll_poll(w->fds, m, t);
  saved = errno;
  cancel_off(&cancel);
  pthread_cleanup_pop(0);
  errno = saved;
  return r;
}
#endif

/* Reports the enabled own entries (see struct pset_entry) with POLLNVAL,
 * after the filled ones, up to max. Under the lock. */
static int fill_own(struct pset *s, struct anypoll_event *out, int filled,
                    int max) {
  for (size_t i = 0; i < s->count && filled < max; i++) {
    struct pset_entry *e = &s->e[i];
    if (!e->own || e->disabled)
      continue;
    out[filled].fd = e->fd;
    out[filled].events = POLLNVAL;
    out[filled].data = e->data;
    filled++;
    if (e->oneshot)
      e->disabled = 1;
  }
  return filled;
}

static int set_poll_wait(struct pset *s, struct anypoll_event *out, int max,
                         int timeout_ms, cancel_state cancel) {
  long long deadline =
      timeout_ms > 0 ? anypoll__now_us() + (long long)timeout_ms * 1000 : 0;
  lock_take(&s->lock);
  struct waiter *w = anypoll__pset_waiter_get(s);
  if (w == NULL) {
    lock_give(&s->lock);
    return -1;
  }
  int result;
  for (;;) {
    size_t n = s->count;
    if (waiter_reserve(w, n + 1) != 0) {
      errno = ENOMEM;
      result = -1;
      break;
    }
    /* The enabled entries, starting where the last wait's reports ended,
     * so that when more are ready than max, every one gets its turn. */
    w->fds[0].fd = w->rfd;
    w->fds[0].events = POLLIN;
    size_t m = 1;
    for (size_t i = 0; i < n; i++) {
      const struct pset_entry *e = &s->e[(s->rot + i) % n];
      if (e->disabled || e->own)
        continue;
      w->fds[m].fd = e->fd;
      w->fds[m].events = (short)e->events;
      w->ids[m] = e->id;
      m++;
    }
    w->in_poll = 1;
    w->epoch = s->epoch;
    /* Own entries are ready (POLLNVAL): only look. */
    int t = s->nown > 0 ? 0 : anypoll__set_remaining_ms(timeout_ms, deadline);
    lock_give(&s->lock);
    int r = poll_cancellable(s, w, (anypoll_nfds_t)m, t, cancel);
    int poll_errno = errno;
    lock_take(&s->lock);
    leave_poll(s, w);
    if (r < 0) {
      errno = poll_errno;
      result = -1;
      break;
    }
    int filled = 0;
    size_t last = 0;
    for (size_t k = 1; k < m && r > 0 && filled < max; k++) {
      unsigned revents = (unsigned short)w->fds[k].revents;
      size_t pos;
      if (revents == 0)
        continue;
      /* Deleted, added again, or (one-shot) reported by another waiter
       * since the array was built, or its number taken by our pipe since:
       * not this wait's to report. */
      if (!anypoll__pset_find(s, w->fds[k].fd, &pos) ||
          s->e[pos].id != w->ids[k] || s->e[pos].disabled || s->e[pos].own)
        continue;
      struct pset_entry *e = &s->e[pos];
      /* A mod since then may have narrowed the events. */
      revents &= e->events | ALWAYS_BITS;
      if (revents == 0)
        continue;
      out[filled].fd = e->fd;
      out[filled].events = revents;
      out[filled].data = e->data;
      filled++;
      if (e->oneshot)
        e->disabled = 1;
      last = pos;
    }
    if (filled > 0)
      s->rot = last + 1;
    if (s->nown > 0)
      filled = fill_own(s, out, filled, max);
    if (filled > 0) {
      result = filled;
      break;
    }
    if (timeout_ms == 0 ||
        (timeout_ms > 0 && anypoll__now_us() >= deadline)) {
      result = 0;
      break;
    }
  }
  w->busy = 0;
  lock_give(&s->lock);
  return result;
}

int anypoll__set_poll_wait(void *state, struct anypoll_event *out, int max,
                           int timeout_ms) {
  cancel_state cancel;
  cancel_off(&cancel);
  int r = set_poll_wait(state, out, max, timeout_ms, cancel);
  return cancel_restore_result(cancel, r);
}
