/* SPDX-License-Identifier: MIT */
/* The watch set on Linux: ctl, which keeps the slot table, the index by
 * descriptor, the always-ready table and the epoll set in step
 * (set_epoll.c has the rest). */
#include "set_epoll.h"

#if ANYPOLL_HAVE_EPOLL

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

ANYPOLL__INTERNAL int anypoll__eset_ctl(void *state, int op, int fd,
                                        unsigned events, void *data) {
  struct eset *s = state;
  struct epoll_event ev;
  size_t slot = 0;
  int err = 0, cancel;
  /* Not a cancellation point: a thread cancelled inside would leave the
   * lock held (write() and read() on the eventfd are cancellation
   * points). A pending cancellation acts after the call. */
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  memset(&ev, 0, sizeof ev);
  ev.events = (events & ~ANYPOLL__SET_FLAGS) |
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
    sl->events = events & ~ANYPOLL__SET_FLAGS;
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

#endif /* ANYPOLL_HAVE_EPOLL */
