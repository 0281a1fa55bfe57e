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
 * the program's own CloseHandle. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "set.h"

#ifdef _WIN32
#  include <io.h>
#  include "win32/win.h"
typedef SRWLOCK set_lock;
typedef CONDITION_VARIABLE set_cond;
static int lock_init(set_lock *l, set_cond *c) {
  InitializeSRWLock(l);
  InitializeConditionVariable(c);
  return 0;
}
static void lock_fini(set_lock *l, set_cond *c) {
  (void)l; /* SRW locks and condition variables hold no resources. */
  (void)c;
}
static void lock_take(set_lock *l) { AcquireSRWLockExclusive(l); }
static void lock_give(set_lock *l) { ReleaseSRWLockExclusive(l); }
static void cond_wait(set_cond *c, set_lock *l) {
  SleepConditionVariableSRW(c, l, INFINITE, 0);
}
static void cond_wake_all(set_cond *c) { WakeAllConditionVariable(c); }
/* The wake pipe is an anypoll_pipe: its read end is opened for overlapped
 * I/O, which _read cannot read (src/win32/rw.c). */
static long fd_read(int fd, void *b, unsigned n) {
  return anypoll_read(fd, b, n);
}
static long fd_write(int fd, const void *b, unsigned n) {
  return _write(fd, b, n);
}
static void fd_close(int fd) { _close(fd); }
/* The wake pipe's byte, if it is there: a program that closed a registered
 * descriptor before its del may read the number our pipe has since taken,
 * and a blocking read of ours would then wait with the set's lock held.
 * The pipe's read end cannot be made non-blocking here; it is looked at
 * first. */
static void drain_wake(int fd) {
  struct pollfd p;
  char b;
  p.fd = fd;
  p.events = POLLIN;
  p.revents = 0;
  if (anypoll_poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
    (void)fd_read(fd, &b, 1);
}
static int wake_pipe_setup(int rfd) {
  (void)rfd;
  return 0;
}
/* No thread cancellation on Windows. */
typedef int cancel_state;
static void cancel_off(cancel_state *old) { *old = 0; }
static void cancel_restore(cancel_state old) { (void)old; }
#else
#  include <fcntl.h>
#  include <pthread.h>
#  include <unistd.h>
typedef pthread_mutex_t set_lock;
typedef pthread_cond_t set_cond;
static int lock_init(set_lock *l, set_cond *c) {
  if (pthread_mutex_init(l, NULL) != 0)
    return -1;
  if (pthread_cond_init(c, NULL) != 0) {
    pthread_mutex_destroy(l);
    return -1;
  }
  return 0;
}
static void lock_fini(set_lock *l, set_cond *c) {
  pthread_cond_destroy(c);
  pthread_mutex_destroy(l);
}
static void lock_take(set_lock *l) { pthread_mutex_lock(l); }
static void lock_give(set_lock *l) { pthread_mutex_unlock(l); }
static void cond_wait(set_cond *c, set_lock *l) { pthread_cond_wait(c, l); }
static void cond_wake_all(set_cond *c) { pthread_cond_broadcast(c); }
static long fd_write(int fd, const void *b, unsigned n) {
  return write(fd, b, n);
}
static void fd_close(int fd) { close(fd); }
/* The wake pipe's byte, if it is there. Its read end is non-blocking: a
 * program that closed a registered descriptor before its del may read the
 * number our pipe has since taken, and take the byte; a blocking read of
 * ours would then wait with the set's lock held. */
static void drain_wake(int fd) {
  char b;
  (void)!read(fd, &b, 1);
}
static int wake_pipe_setup(int rfd) {
  int fl = fcntl(rfd, F_GETFL);
  return fl < 0 || fcntl(rfd, F_SETFL, fl | O_NONBLOCK) != 0 ? -1 : 0;
}
/* The calls are safe with deferred cancellation: none is a cancellation
 * point while the lock or a count of the set is held (write, read and
 * pthread_cond_wait are). ctl runs with cancellation disabled and
 * completes; a wait is cancelled only inside its anypoll_poll, where a
 * cleanup handler gives the waiter back (poll_cancellable). */
typedef int cancel_state;
static void cancel_off(cancel_state *old) {
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, old);
}
static void cancel_restore(cancel_state old) {
  pthread_setcancelstate(old, NULL);
}
#endif

struct pset_entry {
  int fd;
  unsigned events;   /* without ANYPOLL_ONESHOT */
  int oneshot;
  int disabled;      /* a one-shot entry already reported */
  /* Its number is now one of the set's own wake pipe ends: it was closed
   * before its del and our pipe took the number. Never polled (the pipe's
   * readiness is not the program's), reported POLLNVAL as closed. */
  int own;
  void *data;
  unsigned long long id; /* unique per registration, to tell a stale
                            pollfd from a newer add of the same number */
};

struct waiter {
  struct waiter *next;
  int rfd, wfd;       /* the wake-up pipe */
  int busy;           /* a wait owns this waiter */
  int in_poll;        /* inside anypoll_poll */
  int signalled;      /* a byte is in the pipe */
  unsigned long long epoch; /* the set's epoch when that call began */
  struct pollfd *fds; /* the array of the current wait, fds[0] the pipe */
  unsigned long long *ids; /* ids[k]: the id of fds[k]'s entry */
  size_t cap;
};

struct pset {
  set_lock lock;
  set_cond done; /* a waiter left anypoll_poll */
  struct pset_entry *e;
  size_t count, cap;
  size_t *index; /* index[fd]: position in e + 1, or 0 */
  size_t index_cap;
  size_t rot;    /* where the next wait starts: after the last reported */
  unsigned long long next_id;
  unsigned long long epoch; /* advanced by each del (wait_for_pollers) */
  size_t nown;   /* entries with own set */
  struct waiter *waiters;
};

#define ALWAYS_BITS ((unsigned)(POLLERR | POLLHUP | POLLNVAL))

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

static int pset_find(const struct pset *s, int fd, size_t *pos) {
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

static struct waiter *waiter_get(struct pset *s);
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
  struct waiter *w = waiter_get(s);
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
  if (pset_find(s, fd, &pos) && !s->e[pos].own) {
    s->e[pos].own = 1;
    s->nown++;
  }
}

int anypoll__set_poll_ctl(void *state, int op, int fd, unsigned events,
                          void *data) {
  struct pset *s = state;
  cancel_state cancel;
  cancel_off(&cancel);
  int r = set_poll_ctl(s, op, fd, events, data);
  int saved = errno;
  cancel_restore(cancel);
  errno = saved;
  return r;
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
  int found = pset_find(s, fd, &pos);
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
    /* ANYPOLL_UNSHARED only speeds up the Windows set: no meaning here. */
    s->e[pos].events = events & ~(ANYPOLL_ONESHOT | ANYPOLL_UNSHARED);
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

/* A waiter for this wait: a free one of the set, or a new one. Under the
 * lock. NULL with errno. */
static struct waiter *waiter_get(struct pset *s) {
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
  struct waiter *w = waiter_get(s);
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
      if (!pset_find(s, w->fds[k].fd, &pos) || s->e[pos].id != w->ids[k] ||
          s->e[pos].disabled || s->e[pos].own)
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
  int saved = errno;
  cancel_restore(cancel);
  errno = saved;
  return r;
}

ANYPOLL__INTERNAL const struct anypoll__set_backend anypoll__set_poll_backend = {
  "poll", anypoll__set_poll_create, anypoll__set_poll_destroy,
  anypoll__set_poll_ctl, anypoll__set_poll_wait
};
