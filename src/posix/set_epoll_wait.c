/* SPDX-License-Identifier: MIT */
/* The watch set on Linux: the wait (set_epoll.c has the rest). */
#include "set_epoll.h"

#if ANYPOLL_HAVE_EPOLL

/* The slot an epoll event stands for, and the bits to report: 0 for the
 * eventfd's, for a slot deleted (or deleted and reused) since, and for
 * one whose events a mod has narrowed since. Under the lock. */
static unsigned eset_kernel_bits(const struct eset *s,
                                 const struct epoll_event *e,
                                 size_t *slot) {
  uint64_t id = e->data.u64;
  *slot = (uint32_t)id;
  if (id == WAKE_ID || *slot >= s->nslots || s->slots[*slot].fd < 0 ||
      s->slots[*slot].gen != (uint32_t)(id >> 32))
    return 0;
  return e->events & (s->slots[*slot].events | POLLERR | POLLHUP);
}

static void eset_put(struct anypoll_event *o, const struct slot *sl,
                     unsigned bits) {
  o->fd = sl->fd;
  o->events = bits;
  o->data = sl->data;
}

/* A wait without always-ready entries: the kernel's events, in the
 * kernel's order, which rotates (each level-triggered event it returns
 * goes to the back of its ready list). Under the lock. */
static int eset_fill_kernel(struct eset *s, const struct epoll_event *ev,
                            int k, struct anypoll_event *out) {
  int filled = 0;
  for (int i = 0; i < k; i++) {
    size_t slot;
    unsigned bits = eset_kernel_bits(s, &ev[i], &slot);
    if (bits != 0)
      eset_put(&out[filled++], &s->slots[slot], bits);
  }
  return filled;
}

/* A ready entry of a wait with always-ready entries, and its place in
 * slot order counted from the rotation point. */
struct eset_pick {
  size_t key, slot;
  unsigned bits;
};

static int eset_pick_order(const void *a, const void *b) {
  size_t x = ((const struct eset_pick *)a)->key;
  size_t y = ((const struct eset_pick *)b)->key;
  return x < y ? -1 : x > y;
}

/* A wait with always-ready entries: every ready entry of both kinds (the
 * kernel gave all of its own), in slot order from the rotation point, the
 * first max reported; so with a steady set of ready entries each is
 * reported within ceil(ready / max) waits, whatever its kind. A one-shot
 * kernel event left out is re-armed: the kernel disabled it when it
 * returned it. pick has room for k + nalways. Under the lock. */
static int eset_fill_rotated(struct eset *s, const struct epoll_event *ev,
                             int k, struct anypoll_event *out, int max,
                             struct eset_pick *pick) {
  size_t np = 0, n = s->nslots, r = s->rot % (n ? n : 1);
  for (int i = 0; i < k; i++) {
    size_t slot;
    unsigned bits = eset_kernel_bits(s, &ev[i], &slot);
    if (bits != 0) {
      pick[np].slot = slot;
      pick[np++].bits = bits;
    }
  }
  for (size_t i = 0; i < s->nalways; i++) {
    struct slot *sl = &s->slots[s->always[i]];
    if (!anypoll__eset_always_ready(sl))
      continue;
    if (anypoll__eset_same_file(sl) != 0) {
      /* Closed before its del, or its number reused: no longer reported,
       * as epoll drops a closed entry. The del still removes it. */
      sl->gone = 1;
      anypoll__eset_ready_change(s, 1, 0);
      continue;
    }
    pick[np].slot = s->always[i];
    pick[np++].bits = sl->events & ALWAYS_READY_BITS;
  }
  for (size_t i = 0; i < np; i++)
    pick[i].key = pick[i].slot >= r ? pick[i].slot - r : pick[i].slot + n - r;
  qsort(pick, np, sizeof *pick, eset_pick_order);
  int filled = 0;
  for (size_t i = 0; i < np; i++) {
    struct slot *sl = &s->slots[pick[i].slot];
    if (filled < max) {
      eset_put(&out[filled++], sl, pick[i].bits);
      s->rot = pick[i].slot + 1;
      if (sl->always && sl->oneshot) {
        sl->disabled = 1;
        anypoll__eset_ready_change(s, 1, 0);
      }
    } else if (!sl->always && sl->oneshot) {
      struct epoll_event e;
      memset(&e, 0, sizeof e);
      e.events = sl->events | EPOLLONESHOT;
      e.data.u64 = anypoll__eset_slot_id(s, pick[i].slot);
      /* Fails only for a number closed since: nothing to re-arm. */
      (void)epoll_ctl(s->epfd, EPOLL_CTL_MOD, sl->fd, &e);
    }
  }
  return filled;
}

#define ESET_STACK_EVENTS 64

/* A wait's buffers: on its stack up to ESET_STACK_EVENTS, else on the heap,
 * freed on return and by a cancellation in epoll_wait. */
struct eset_bufs {
  struct epoll_event stack_ev[ESET_STACK_EVENTS];
  struct eset_pick stack_pick[ESET_STACK_EVENTS];
  struct epoll_event *ev;
  struct eset_pick *pick;
  size_t ev_cap, pick_cap;
};

static void eset_bufs_free(void *arg) {
  struct eset_bufs *b = arg;
  if (b->ev != b->stack_ev)
    free(b->ev);
  if (b->pick != b->stack_pick)
    free(b->pick);
}

static int eset_bufs_grow(void **p, size_t *cap, size_t n, size_t size,
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
static int eset_kernel_wait(struct eset *s, struct eset_bufs *b, size_t n,
                            int t, int cancel) {
  int k;
  pthread_cleanup_push(eset_bufs_free, b);
  pthread_setcancelstate(cancel, NULL);
  k = epoll_wait(s->epfd, b->ev, (int)n, t);
  int saved = errno;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  errno = saved;
  pthread_cleanup_pop(0);
  return k;
}

ANYPOLL__INTERNAL int anypoll__eset_wait(void *state,
                                         struct anypoll_event *out, int max,
                                         int timeout_ms) {
  struct eset *s = state;
  struct eset_bufs b;
  int cancel, filled;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  b.ev = b.stack_ev;
  b.pick = b.stack_pick;
  b.ev_cap = b.pick_cap = ESET_STACK_EVENTS;
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
    if (eset_bufs_grow((void **)&b.ev, &b.ev_cap, n, sizeof *b.ev,
                       b.stack_ev)) {
      errno = ENOMEM;
      filled = -1;
      break;
    }
    int t = gather ? 0 : anypoll__set_remaining_ms(timeout_ms, deadline);
    int k = eset_kernel_wait(s, &b, n, t, cancel);
    if (k < 0) {
      filled = -1;
      break;
    }
    int woken = 0;
    for (int i = 0; i < k; i++)
      woken |= b.ev[i].data.u64 == WAKE_ID;
    pthread_mutex_lock(&s->lock);
    if (!gather && !woken) {
      filled = eset_fill_kernel(s, b.ev, k, out);
    } else if (eset_bufs_grow((void **)&b.pick, &b.pick_cap,
                              (size_t)k + s->nalways, sizeof *b.pick,
                              b.stack_pick) != 0) {
      errno = ENOMEM;
      filled = -1;
    } else {
      filled = eset_fill_rotated(s, b.ev, k, out, max, b.pick);
    }
    pthread_mutex_unlock(&s->lock);
    if (filled != 0 || timeout_ms == 0 ||
        (timeout_ms > 0 && anypoll__now_us() >= deadline))
      break;
  }
  eset_bufs_free(&b);
  pthread_setcancelstate(cancel, NULL);
  return filled;
}

#endif /* ANYPOLL_HAVE_EPOLL */
