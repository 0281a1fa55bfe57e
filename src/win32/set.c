/* SPDX-License-Identifier: MIT */
/* The watch set on Windows: one I/O completion port per set, in the shape
 * of wepoll's port. anypoll_set_add/_mod record what is wanted and queue
 * the registration on the update queue; a wait first moves the queued
 * registrations to the check list, checks only what is on it (queued ones,
 * and ones whose wake-up source fired), arms the wake-up source of each
 * that is not ready, and only then sleeps in GetQueuedCompletionStatusEx.
 * Every wake-up source posts its registration to the port: a helper's
 * zero-byte read (set_pipe.c), an AFD poll issued on the set's own AFD
 * handle (set_socket.c), a thread-pool wait (consoles, asynchronous pipes)
 * or a timer (what cannot be waited on). An idle registration is never
 * touched by a wait: its source stays armed across waits. Level-triggered:
 * a registration that was reported stays on the check list and is checked
 * again by the next wait; ONESHOT ones leave it until mod. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "set_win.h"

#define IOCP_DEQUEUE_MAX 64

static volatile LONG64 iocp_set_ids = (LONG64)1 << 62; /* apart from call ids */

/* ---- Lists ---------------------------------------------------------------- */

static void iocp_check_push(struct anypoll__set *s, struct anypoll__reg *r) {
  if (r->on_check)
    return;
  r->on_check = 1;
  r->check_next = NULL;
  r->check_prev = s->check_tail;
  if (s->check_tail != NULL)
    s->check_tail->check_next = r;
  else
    s->check_head = r;
  s->check_tail = r;
}

static void iocp_check_remove(struct anypoll__set *s, struct anypoll__reg *r) {
  if (!r->on_check)
    return;
  r->on_check = 0;
  if (r->check_prev != NULL)
    r->check_prev->check_next = r->check_next;
  else
    s->check_head = r->check_next;
  if (r->check_next != NULL)
    r->check_next->check_prev = r->check_prev;
  else
    s->check_tail = r->check_prev;
  r->check_next = r->check_prev = NULL;
}

static void iocp_update_push(struct anypoll__set *s, struct anypoll__reg *r) {
  if (r->on_update)
    return;
  r->on_update = 1;
  r->update_next = NULL;
  r->update_prev = s->update_tail;
  if (s->update_tail != NULL)
    s->update_tail->update_next = r;
  else
    s->update_head = r;
  s->update_tail = r;
}

static void iocp_update_remove(struct anypoll__set *s, struct anypoll__reg *r) {
  if (!r->on_update)
    return;
  r->on_update = 0;
  if (r->update_prev != NULL)
    r->update_prev->update_next = r->update_next;
  else
    s->update_head = r->update_next;
  if (r->update_next != NULL)
    r->update_next->update_prev = r->update_prev;
  else
    s->update_tail = r->update_prev;
  r->update_next = r->update_prev = NULL;
}

static void iocp_wake_one(struct anypoll__set *s) {
  if (s->waiters > 0)
    anypoll__set_post_wake(s);
}

/* How many packets a removal should ask the port for, under the lock: as
 * many as can be there. Every packet that can be in the port is one we
 * posted and counted first (s->queued), or the one packet of an AFD poll
 * or an anypoll_pipe read in flight (s->afd_out, each yields exactly one,
 * cancelled or not, and is counted until its packet is taken). Asking for
 * that many takes all of them and no more: a larger count costs nothing on
 * Windows, but under Wine NtRemoveIoCompletionEx then makes one more
 * remove_completion request only to find the port empty. (Idle
 * registrations' polls and reads are in flight too, so with any of them
 * the count is above what is there and Wine's extra request stays: it is
 * a Wine artefact, one request the Windows call does not make.) 0: the port is
 * known to be empty (a post counted but not yet made is as if it came just
 * after). A packet of someone else's request on an associated handle
 * (set_anypipe.c) is not counted; it is dropped by a later removal. */
static ULONG iocp_port_count(const struct anypoll__set *s) {
  LONG64 n = (LONG64)s->queued + s->afd_out;
  return n <= 0 ? 0 : n >= IOCP_DEQUEUE_MAX ? IOCP_DEQUEUE_MAX : (ULONG)n;
}

/* ---- Per kind --------------------------------------------------------------- */

/* Test builds: a synchronous pipe the set has started a read on must still
 * be the caller's at each check and at del (model.c, delete before close). */
#ifdef ANYPOLL_LOCK_MODEL
#  define IOCP_MODEL_REGISTERED(r)                                            \
    ((r)->sub.watch != NULL ? anypoll__model_registered(                      \
         (r)->fd, (r)->item.handle, anypoll__sys_os_handle((r)->fd)) : (void)0)
#else
#  define IOCP_MODEL_REGISTERED(r) ((void)0)
#endif

/* revents now, or -1 when only the armed source can tell. */
static int iocp_check(struct anypoll__reg *r) {
  short ev = (short)(r->events & 0xffff);
  if (r->item.kind == ANYPOLL_KIND_PIPE)
    IOCP_MODEL_REGISTERED(r);
  /* A descriptor closed while registered (against the header's rule): the
   * handle value of the add may already name something else (Windows and
   * Wine hand out the lowest free value again at once), and asking that
   * object would report its state as the entry's. The C runtime's table,
   * read without a system call, tells: the number no longer maps to the
   * handle of the add, so it is POLLNVAL, as anypoll_poll says of a closed
   * number. */
  if (anypoll__sys_os_handle(r->fd) != (intptr_t)r->item.handle)
    return POLLNVAL;
  switch (r->item.kind) {
  case ANYPOLL_KIND_PIPE:
    return anypoll__set_pipe_check(r);
  case ANYPOLL_KIND_SOCKET:
    return anypoll__set_socket_check(r);
  case ANYPOLL_KIND_CONSOLE_IN:
  case ANYPOLL_KIND_CONSOLE_OUT:
    return anypoll__set_console_check(r);
  case ANYPOLL_KIND_INVALID:
    return POLLNVAL;
  default:
    return anypoll__file_check(&r->item, ev);
  }
}

static int iocp_arm(struct anypoll__reg *r) {
  switch (r->item.kind) {
  case ANYPOLL_KIND_PIPE:
    return anypoll__set_pipe_arm(r);
  case ANYPOLL_KIND_SOCKET:
    return anypoll__set_socket_arm(r);
  case ANYPOLL_KIND_CONSOLE_IN:
  case ANYPOLL_KIND_CONSOLE_OUT:
    return anypoll__set_console_arm(r);
  default:
    return 0; /* always ready: never armed */
  }
}

/* Ends every wake-up source of r; a posted packet or a pending AFD poll
 * may still be in the port (it holds its own reference). */
static void iocp_stop(struct anypoll__reg *r) {
  InterlockedExchange(&r->stopping, 1);
  switch (r->item.kind) {
  case ANYPOLL_KIND_PIPE:
    anypoll__set_pipe_stop(r);
    break;
  case ANYPOLL_KIND_SOCKET:
    anypoll__set_socket_stop(r);
    break;
  case ANYPOLL_KIND_CONSOLE_IN:
  case ANYPOLL_KIND_CONSOLE_OUT:
    anypoll__set_console_stop(r);
    break;
  default:
    break;
  }
  if (r->timer != NULL) {
    DeleteTimerQueueTimer(NULL, r->timer, INVALID_HANDLE_VALUE);
    r->timer = NULL;
  }
}

/* ---- The backend ------------------------------------------------------------ */

void *anypoll__set_iocp_create(void) {
  if (anypoll__win_init() != 0)
    return NULL;
  struct anypoll__set *s = calloc(1, sizeof *s);
  if (s == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  InitializeSRWLock(&s->lock);
  InitializeSRWLock(&s->peek_lock);
  s->id = InterlockedIncrement64(&iocp_set_ids);
  /* The concurrency value caps how many threads the port lets run at once
   * after a removal; 0 means one per processor, and with more waiters than
   * processors the port would then hold back a packet for a sleeping
   * waiter while the released ones run, though the set hands out the
   * work itself (one waiter at a time under the lock, a wake-up for the
   * next). No throttling is wanted: no bound. */
  s->port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, MAXDWORD);
  if (s->port == NULL) {
    anypoll__set_errno_win(GetLastError());
    free(s);
    return NULL;
  }
  if (anypoll__set_retry_init(s) != 0) {
    CloseHandle(s->port);
    free(s);
    return NULL;
  }
  return s;
}

static struct anypoll__reg *iocp_lookup(struct anypoll__set *s, int fd) {
  return fd < s->cap ? s->by_fd[fd] : NULL;
}

/* Takes r out of the table and the lists and ends its sources. */
static void iocp_unregister(struct anypoll__set *s, struct anypoll__reg *r) {
  IOCP_MODEL_REGISTERED(r);
  s->by_fd[r->fd] = NULL;
  iocp_check_remove(s, r);
  iocp_update_remove(s, r);
  iocp_stop(r);
  if (r->anypipe != NULL)
    anypoll__set_anypipe_detach(r);
  if (r->noted)
    anypoll__anypipe_unnote(r->fd, r->item.handle);
  r->deleted = 1;
  anypoll__set_unref(r);
}

/* One packet out of the port, under the lock. */
static void iocp_take_packet(struct anypoll__set *s, const OVERLAPPED_ENTRY *e) {
  struct anypoll__reg *r;
  switch (e->lpCompletionKey) {
  case ANYPOLL_SET_KEY_REG:
    r = (struct anypoll__reg *)e->lpOverlapped;
    InterlockedDecrement(&s->queued);
    InterlockedExchange(&r->posted, 0);
    break;
  case ANYPOLL_SET_KEY_AFD:
    /* Through void *: the status block is inside the registration, so the
     * result is aligned, which a char * cast cannot tell the compiler
     * (-Wcast-align=strict, the gnulib host flags). */
    r = (struct anypoll__reg *)(void *)((char *)e->lpOverlapped -
                                        offsetof(struct anypoll__reg, iosb));
    anypoll__set_socket_done(r);
    break;
  case ANYPOLL_SET_KEY_WAKE:
    InterlockedDecrement(&s->queued);
    return; /* a wake-up: the caller looks again */
  default:
    /* The key of an anypoll_pipe read end's association. */
    r = anypoll__set_anypipe_done(s, e);
    if (r == NULL)
      return;
    break;
  }
  InterlockedDecrement(&s->inflight);
  if (!r->deleted && !r->disabled)
    iocp_check_push(s, r);
  anypoll__set_unref(r);
}

int anypoll__set_iocp_destroy(void *state) {
  struct anypoll__set *s = state;
  AcquireSRWLockExclusive(&s->lock);
  for (int fd = 0; fd < s->cap; fd++)
    if (s->by_fd[fd] != NULL)
      iocp_unregister(s, s->by_fd[fd]);
  anypoll__set_peek_end(s);
  anypoll__set_retry_end(s);
  /* Cancelled AFD polls and posted packets still hold their registrations:
   * collect them (a cancel completes promptly). An anypoll_pipe read that
   * no cancel could reach (set_anypipe.c, detach) is not waited for. */
  while (s->inflight > s->anypipes_abandoned) {
    OVERLAPPED_ENTRY e[IOCP_DEQUEUE_MAX];
    ULONG got = 0;
    if (!GetQueuedCompletionStatusEx(s->port, e, IOCP_DEQUEUE_MAX, &got, 1000,
                                     FALSE))
      continue;
    for (ULONG i = 0; i < got; i++)
      iocp_take_packet(s, &e[i]);
  }
  anypoll__set_anypipe_free_all(s);
  ReleaseSRWLockExclusive(&s->lock);
  if (s->afd != NULL)
    CloseHandle(s->afd);
  CloseHandle(s->port);
  free(s->by_fd);
  free(s);
  return 0;
}

static int iocp_grow(struct anypoll__set *s, int fd) {
  if (fd < s->cap)
    return 0;
  int cap = s->cap ? s->cap : 64;
  while (cap <= fd)
    cap *= 2;
  struct anypoll__reg **t = realloc(s->by_fd, (size_t)cap * sizeof *t);
  if (t == NULL) {
    errno = ENOMEM;
    return -1;
  }
  for (int i = s->cap; i < cap; i++)
    t[i] = NULL;
  s->by_fd = t;
  s->cap = cap;
  return 0;
}

static int iocp_add(struct anypoll__set *s, int fd, unsigned events, void *data) {
  struct anypoll__item item;
  anypoll__classify((SOCKET)(intptr_t)fd, &item);
  if (item.kind == ANYPOLL_KIND_INVALID || item.kind == ANYPOLL_KIND_IGNORED) {
    errno = EBADF;
    return -1;
  }
  if (item.kind == ANYPOLL_KIND_PIPE && item.u.pipe.readable &&
      !item.u.pipe.mode_known)
    item.u.pipe.async = anypoll__pipe_is_async(item.handle);
  if (item.kind == ANYPOLL_KIND_SOCKET && s->afd == NULL &&
      anypoll__set_socket_open(s) != 0)
    return -1;
  if (iocp_grow(s, fd) != 0)
    return -1;
  struct anypoll__reg *r = calloc(1, sizeof *r);
  if (r == NULL) {
    errno = ENOMEM;
    return -1;
  }
  r->set = s;
  r->fd = fd;
  r->events = events;
  r->data = data;
  r->item = item;
  /* A pipe's info is of now; its first check asks again. (Only a pipe's:
   * the union holds another kind's state.) */
  if (item.kind == ANYPOLL_KIND_PIPE)
    r->item.u.pipe.have_info = 0;
  r->refs = 1;
  r->fresh = 1;
  if (item.kind == ANYPOLL_KIND_PIPE && !item.u.pipe.sole)
    s->has_dups = 1;
  if (item.kind == ANYPOLL_KIND_PIPE && item.u.pipe.readable &&
      item.u.pipe.async) {
    anypoll__set_anypipe_attach(r);
    /* anypoll_read then knows it asynchronous without asking (anypipe.c). */
    r->noted = anypoll__anypipe_note(fd, item.handle) == 0;
  }
  s->by_fd[fd] = r;
  iocp_update_push(s, r);
  return 0;
}

/* mod or del of a number that is not registered: EBADF when it is not an
 * open descriptor (as epoll_ctl checks the descriptor first, and as the
 * other set backends answer), ENOENT otherwise. Only this error path pays
 * for the classification. */
static int iocp_not_registered(int fd) {
  struct anypoll__item item;
  anypoll__classify((SOCKET)(intptr_t)fd, &item);
  errno = item.kind == ANYPOLL_KIND_INVALID ? EBADF : ENOENT;
  return -1;
}

int anypoll__set_iocp_ctl(void *state, int op, int fd, unsigned events,
                          void *data) {
  struct anypoll__set *s = state;
  int result = 0;
  AcquireSRWLockExclusive(&s->lock);
  struct anypoll__reg *r = iocp_lookup(s, fd);
  switch (op) {
  case ANYPOLL__SET_ADD:
    if (r != NULL) {
      errno = EEXIST;
      result = -1;
    } else {
      result = iocp_add(s, fd, events, data);
    }
    break;
  case ANYPOLL__SET_MOD:
    if (r == NULL) {
      result = iocp_not_registered(fd);
      break;
    }
    /* What is armed was armed for the old events: start afresh. */
    iocp_stop(r);
    InterlockedExchange(&r->stopping, 0);
    r->events = events;
    r->data = data;
    r->disabled = 0;
    r->fresh = 1;
    r->have_result = 0;
    r->gen++; /* a poll of before, still in the port, answers nothing */
    InterlockedExchange(&r->no_wait, 0);
    iocp_check_remove(s, r);
    iocp_update_push(s, r);
    break;
  case ANYPOLL__SET_DEL:
    if (r == NULL) {
      result = iocp_not_registered(fd);
    } else {
      iocp_unregister(s, r);
    }
    break;
  default:
    errno = EINVAL;
    result = -1;
  }
  if (result == 0 && op != ANYPOLL__SET_DEL)
    iocp_wake_one(s);
  ReleaseSRWLockExclusive(&s->lock);
  return result;
}

/* Checks what is on the check list (after the queued registrations have
 * joined it), from `from` (NULL: the head) to `last` (NULL: the entry that
 * is last when it starts), once each, so a ready one moved to the tail is
 * not reported twice: reports the ready ones into out and arms the others.
 * When out is full the rest stay where they are, ahead of the reported
 * ones, for the next wait (fairness). *requeued, if still NULL, gets the
 * first entry this run put back at the tail (reported, level-triggered).
 * Sets *port_armed when an armed source answers through the port even if
 * the registration is ready now (a socket's AFD poll). */
static int iocp_run_checks(struct anypoll__set *s, struct anypoll_event *out,
                           int max, int *port_armed, struct anypoll__reg *from,
                           struct anypoll__reg *last,
                           struct anypoll__reg **requeued) {
  while (s->update_head != NULL) {
    struct anypoll__reg *r = s->update_head;
    iocp_update_remove(s, r);
    if (!r->disabled)
      iocp_check_push(s, r);
  }
  int n = 0;
  if (last == NULL)
    last = s->check_tail;
  struct anypoll__reg *r = from != NULL ? from : s->check_head;
  while (n < max && r != NULL) {
    struct anypoll__reg *next = r == last ? NULL : r->check_next;
    iocp_check_remove(s, r);
    int revents = iocp_check(r);
    r->fresh = 0;
    int requeue = 0;
    if (revents > 0) {
      out[n].fd = r->fd;
      out[n].events = (unsigned)revents;
      out[n].data = r->data;
      n++;
      if (r->events & ANYPOLL_ONESHOT)
        r->disabled = 1;
      else
        requeue = 1;
    } else {
      if (revents < 0)
        *port_armed = 1;
      if (iocp_arm(r) != 0) {
        /* The source could not be armed (out of threads or handles): say
         * so through the entry, as poll reports what it cannot watch. */
        out[n].fd = r->fd;
        out[n].events = POLLERR;
        out[n].data = r->data;
        n++;
        requeue = 1;
      }
    }
    if (requeue) {
      iocp_check_push(s, r);
      if (*requeued == NULL)
        *requeued = r;
    }
    r = next;
  }
  return n;
}

/* Moves the entries from `first` to the tail so that they come just before
 * `before` (on the list, ahead of first). */
static void iocp_check_move_before(struct anypoll__set *s,
                                   struct anypoll__reg *first,
                                   struct anypoll__reg *before) {
  struct anypoll__reg *end = s->check_tail;
  /* Cut [first .. end] off the tail. */
  s->check_tail = first->check_prev;
  s->check_tail->check_next = NULL;
  /* ... and splice it in before `before`. */
  first->check_prev = before->check_prev;
  if (before->check_prev != NULL)
    before->check_prev->check_next = first;
  else
    s->check_head = first;
  end->check_next = before;
  before->check_prev = end;
}

static LONGLONG iocp_qpc(void) {
  LARGE_INTEGER t;
  QueryPerformanceCounter(&t);
  return t.QuadPart;
}

int anypoll__set_iocp_wait(void *state, struct anypoll_event *out, int max,
                           int timeout_ms) {
  struct anypoll__set *s = state;
  LARGE_INTEGER f;
  QueryPerformanceFrequency(&f);
  LONGLONG deadline = iocp_qpc() + ((LONGLONG)timeout_ms * f.QuadPart + 999) / 1000;
  int result;
  AcquireSRWLockExclusive(&s->lock);
  int drained = 0; /* the last removal emptied the port */
  for (;;) {
    int port_armed = 0;
    struct anypoll__reg *requeued = NULL;
    int n = iocp_run_checks(s, out, max, &port_armed, NULL, NULL, &requeued);
    ULONG look = iocp_port_count(s);
    if (n > 0 && (port_armed || !drained) && look > 0) {
      /* What is in the port must get its turn too, also when the check
       * list alone filled out. Before any sleep, the ready entries came
       * from the check list alone (entries that stay ready: a closed
       * descriptor, a file, a pipe with data, a write end with room), and
       * without this look at the port they would be all that any wait
       * ever reports while they stay ready, starving every entry whose
       * wake-up comes through the port. And a socket reported by the last
       * wait was re-armed to be checked again: if it is still ready its
       * packet is already in the port, and level-triggering wants it in
       * this report too. The entries the packets bring became ready before
       * this wait put its reported ones back at the tail, so they go ahead
       * of those (round-robin: every ready entry within ceil(ready/max)
       * waits), and are checked now if out has room. A removal that
       * emptied the port (it got fewer packets than it asked for) needs no
       * second look, nor does a port known to be empty (look == 0): one
       * request fewer per woken wait under Wine. */
      OVERLAPPED_ENTRY e[IOCP_DEQUEUE_MAX];
      ULONG got = 0;
      struct anypoll__reg *mark = s->check_tail;
      if (GetQueuedCompletionStatusEx(s->port, e, look, &got, 0, FALSE)) {
        for (ULONG i = 0; i < got; i++)
          iocp_take_packet(s, &e[i]);
        struct anypoll__reg *from =
            mark != NULL ? mark->check_next : s->check_head;
        if (from != NULL) {
          struct anypoll__reg *end = s->check_tail;
          if (requeued != NULL)
            iocp_check_move_before(s, from, requeued);
          if (n < max)
            n += iocp_run_checks(s, out + n, max - n, &port_armed, from, end,
                                 &requeued);
        }
      }
    }
    if (n > 0) {
      /* Ready ones left over, or reported ones that stay ready: another
       * waiter asleep in the port should look too. */
      if (s->check_head != NULL)
        iocp_wake_one(s);
      result = n;
      break;
    }
    DWORD ms;
    if (timeout_ms < 0) {
      ms = INFINITE;
    } else {
      LONGLONG left = deadline - iocp_qpc();
      ms = left <= 0 ? 0
                     : (DWORD)((left * 1000 + f.QuadPart - 1) / f.QuadPart);
    }
    /* As many packets as are known to be there, at least one: a wait that
     * must sleep takes the packet that wakes it and every other one posted
     * by then, and no empty removal follows under Wine (see
     * iocp_port_count). Fairness is kept: nothing known to be in the port
     * is left behind by a removal, and what was not taken (posted after
     * the count was read) is looked for before returning (drained stays 0
     * when the removal got all it asked for). */
    ULONG want = iocp_port_count(s);
    if (want == 0)
      want = 1;
    s->waiters++;
    ReleaseSRWLockExclusive(&s->lock);
    OVERLAPPED_ENTRY e[IOCP_DEQUEUE_MAX];
    ULONG got = 0;
    BOOL ok = GetQueuedCompletionStatusEx(s->port, e, want, &got, ms, TRUE);
    DWORD error = ok ? 0 : GetLastError();
    AcquireSRWLockExclusive(&s->lock);
    s->waiters--;
    if (!ok) {
      if (error == WAIT_IO_COMPLETION) {
        errno = EINTR;
        result = -1;
        break;
      }
      if (error != WAIT_TIMEOUT) {
        result = anypoll__set_errno_win(error);
        break;
      }
      if (ms == 0 || (timeout_ms >= 0 && deadline - iocp_qpc() <= 0)) {
        result = 0;
        break;
      }
      continue;
    }
    drained = got < want;
    for (ULONG i = 0; i < got; i++)
      iocp_take_packet(s, &e[i]);
    if (ms == 0 && s->check_head == NULL) {
      result = 0;
      break;
    }
  }
  ReleaseSRWLockExclusive(&s->lock);
  return result;
}
