/* SPDX-License-Identifier: MIT */
/* The watch set's portable backend: a table of registrations, each wait an
 * anypoll_poll over the enabled ones plus a wake-up pipe of the waiting
 * thread's own. It runs wherever anypoll_poll does: it is the default set
 * backend on POSIX systems without epoll, and the one the tests select as
 * "poll" everywhere. Its wait costs O(registered), as anypoll_poll's does.
 *
 * Threads. Every waiter has a pipe of its own (kept in the set for the next
 * wait), in its pollfd array beside the registrations. add, mod and del
 * write one byte to each waiter that is inside anypoll_poll, so the waiter
 * returns and builds its array again: a change takes effect in a running
 * wait. A pipe per waiter rather than one per set, because with one pipe
 * the first waiter to drain it would hide the byte from the others (a
 * lost wake-up), and leaving it undrained would make them spin.
 *
 * del is synchronous: it returns only once no waiter is still inside an
 * anypoll_poll that was given the descriptor. After it the set never
 * touches the descriptor again, so the program may close it at once; on
 * Windows no helper read of anypoll_poll is left pending on it to hold up
 * the program's own CloseHandle.
 *
 * This file has the set, its table and ctl; set_poll_wait.c the wait. */
#include "set_poll.h"

/* Whether fd is an open descriptor, as anypoll_poll sees it: one check
 * without waiting. 1, 0, or -1 and errno. */
static int fd_is_open(int fd) {
  struct pollfd p;
  p.fd = fd;
  p.events = 0;
  p.revents = 0;
  if (anypoll_poll(&p, 1, 0) < 0)
    return -1;
  return (p.revents & POLLNVAL) == 0;
}

int anypoll__pset_find(const struct pset *s, int fd, size_t *pos) {
  if ((size_t)fd >= s->index_cap || s->index[fd] == 0)
    return 0;
  *pos = s->index[fd] - 1;
  return 1;
}

/* Writes one byte to every waiter inside anypoll_poll that has none yet:
 * a change of the set then takes effect in its wait. Under the lock. */
static void wake_waiters(struct pset *s) {
  for (struct waiter *w = s->waiters; w != NULL; w = w->next) {
    if (!w->in_poll || w->signalled)
      continue;
    /* One byte at most is in the pipe, so the write cannot block. */
    if (fd_write(w->wfd, "w", 1) == 1)
      w->signalled = 1;
  }
}

static int set_poll_ctl(struct pset *s, int op, int fd, unsigned events,
                        void *data);

void *anypoll__set_poll_create(void) {
  struct pset *s = calloc(1, sizeof *s);
  if (s == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  if (lock_init(&s->lock, &s->done) != 0) {
    free(s);
    errno = EAGAIN;
    return NULL;
  }
  /* The first waiter now, so that a program that waits from one thread
   * meets a shortage of descriptors (EMFILE) here, where it is listed,
   * and never in a wait. */
  struct waiter *w = anypoll__pset_waiter_get(s);
  if (w == NULL) {
    int saved = errno;
    lock_fini(&s->lock, &s->done);
    free(s);
    errno = saved;
    return NULL;
  }
  w->busy = 0;
  return s;
}

int anypoll__set_poll_destroy(void *state) {
  struct pset *s = state;
  struct waiter *w = s->waiters;
  while (w != NULL) {
    struct waiter *next = w->next;
    fd_close(w->rfd);
    fd_close(w->wfd);
    free(w->fds);
    free(w->ids);
    free(w);
    w = next;
  }
  free(s->e);
  free(s->index);
  lock_fini(&s->lock, &s->done);
  free(s);
  return 0;
}

static int grow_index(struct pset *s, int fd) {
  if ((size_t)fd < s->index_cap)
    return 0;
  size_t cap = s->index_cap ? s->index_cap : 64;
  while (cap <= (size_t)fd)
    cap *= 2;
  size_t *index = realloc(s->index, cap * sizeof *index);
  if (index == NULL)
    return -1;
  memset(index + s->index_cap, 0, (cap - s->index_cap) * sizeof *index);
  s->index = index;
  s->index_cap = cap;
  return 0;
}

static int grow_entries(struct pset *s) {
  if (s->count < s->cap)
    return 0;
  size_t cap = s->cap ? s->cap * 2 : 16;
  struct pset_entry *e = realloc(s->e, cap * sizeof *e);
  if (e == NULL)
    return -1;
  s->e = e;
  s->cap = cap;
  return 0;
}

static void remove_at(struct pset *s, size_t pos) {
  s->nown -= (size_t)s->e[pos].own;
  s->index[s->e[pos].fd] = 0;
  s->count--;
  if (pos != s->count) {
    s->e[pos] = s->e[s->count];
    s->index[s->e[pos].fd] = pos + 1;
  }
  if (s->rot > s->count)
    s->rot = 0;
}

/* Returns once no waiter that was inside anypoll_poll on entry is still in
 * that same call: the descriptor just removed is then in no running call.
 * Under the lock, which it releases while it waits. A call begun after the
 * entry (its array built without the descriptor) is not waited for: each
 * call notes the epoch it began in, and this one starts a new epoch. Were
 * every call waited for, a waiter that came back to wait while this one
 * slept would be waited for too, in a call that nothing wakes: the wake-up
 * byte went only to the calls running at the del (a hang that
 * stress_set_oneshot_bytes_exact found). */
static void wait_for_pollers(struct pset *s) {
  unsigned long long mine = ++s->epoch;
  for (struct waiter *w = s->waiters; w != NULL; w = w->next)
    while (w->in_poll && w->epoch < mine)
      cond_wait(&s->done, &s->lock);
}

/* Whether fd is one of the set's own wake pipe ends. Under the lock. */
static int own_fd(const struct pset *s, int fd) {
  for (const struct waiter *w = s->waiters; w != NULL; w = w->next)
    if (w->rfd == fd || w->wfd == fd)
      return 1;
  return 0;
}

/* Marks the entry registered under fd, a number our new wake pipe has just
 * taken, as own. Under the lock. */
static void mark_own(struct pset *s, int fd) {
  size_t pos;
  if (anypoll__pset_find(s, fd, &pos) && !s->e[pos].own) {
    s->e[pos].own = 1;
    s->nown++;
  }
}

int anypoll__set_poll_ctl(void *state, int op, int fd, unsigned events,
                          void *data) {
  struct pset *s = state;
  cancel_state cancel;
  cancel_off(&cancel);
  return cancel_restore_result(cancel, set_poll_ctl(s, op, fd, events, data));
}

static int set_poll_ctl(struct pset *s, int op, int fd, unsigned events,
                        void *data) {
  if (op != ANYPOLL__SET_DEL) {
    int open = fd_is_open(fd);
    if (open <= 0) {
      if (open == 0)
        errno = EBADF;
      return -1;
    }
  }
  lock_take(&s->lock);
  size_t pos;
  int found = anypoll__pset_find(s, fd, &pos);
  int err = 0;
  if (op == ANYPOLL__SET_ADD && found) {
    err = EEXIST;
  } else if (op == ANYPOLL__SET_ADD) {
    if (grow_index(s, fd) != 0 || grow_entries(s) != 0) {
      err = ENOMEM;
    } else {
      pos = s->count++;
      s->e[pos].fd = fd;
      s->e[pos].id = ++s->next_id;
      s->e[pos].own = 0;
      s->index[fd] = pos + 1;
      /* Only a program using a number it closed can name our pipe. */
      if (own_fd(s, fd))
        mark_own(s, fd);
    }
  } else if (!found) {
    err = ENOENT;
  } else if (op == ANYPOLL__SET_DEL) {
    remove_at(s, pos);
  }
  if (err == 0 && op != ANYPOLL__SET_DEL) {
    /* add and mod: what is watched, and (mod) a one-shot entry re-armed. */
    s->e[pos].events = events & ~ANYPOLL__SET_FLAGS;
    s->e[pos].oneshot = (events & ANYPOLL_ONESHOT) != 0;
    s->e[pos].disabled = 0;
    s->e[pos].data = data;
  }
  if (err == 0) {
    wake_waiters(s);
    if (op == ANYPOLL__SET_DEL)
      wait_for_pollers(s);
  }
  lock_give(&s->lock);
  if (err == ENOENT && op == ANYPOLL__SET_DEL) {
    /* Not registered: EBADF rather than ENOENT when the number is not even
     * open, as epoll_ctl answers. A registered descriptor that was closed
     * before its del was removed above: that is how a program that broke
     * the delete-before-close rule gets rid of the entry. */
    int open = fd_is_open(fd);
    if (open < 0)
      return -1;
    err = open ? ENOENT : EBADF;
  }
  if (err != 0) {
    errno = err;
    return -1;
  }
  return 0;
}

struct waiter *anypoll__pset_waiter_get(struct pset *s) {
  for (struct waiter *w = s->waiters; w != NULL; w = w->next) {
    if (!w->busy) {
      w->busy = 1;
      return w;
    }
  }
  struct waiter *w = calloc(1, sizeof *w);
  if (w == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  int p[2];
  if (anypoll_pipe(p) != 0) {
    int saved = errno;
    free(w);
    errno = saved;
    return NULL;
  }
  if (wake_pipe_setup(p[0]) != 0) {
    int saved = errno;
    fd_close(p[0]);
    fd_close(p[1]);
    free(w);
    errno = saved;
    return NULL;
  }
  mark_own(s, p[0]);
  mark_own(s, p[1]);
  w->rfd = p[0];
  w->wfd = p[1];
  w->busy = 1;
  w->next = s->waiters;
  s->waiters = w;
  return w;
}

ANYPOLL__INTERNAL const struct anypoll__set_backend anypoll__set_poll_backend = {
  "poll", anypoll__set_poll_create, anypoll__set_poll_destroy,
  anypoll__set_poll_ctl, anypoll__set_poll_wait
};
