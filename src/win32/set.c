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
 * again by the next wait; ONESHOT ones leave it until mod.
 *
 * This file: the set, its table and the registrations' add, mod and del;
 * set_list.c the lists and the packets, set_wait.c the wait. */
#include <errno.h>
#include <stdlib.h>

#include "set_win.h"

static volatile LONG64 iocp_set_ids = (LONG64)1 << 62; /* apart from call ids */

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
  ANYPOLL_SET_MODEL_REGISTERED(r);
  s->by_fd[r->fd] = NULL;
  anypoll__set_check_remove(s, r);
  anypoll__set_update_remove(s, r);
  iocp_stop(r);
  if (r->anypipe != NULL)
    anypoll__set_anypipe_detach(r);
  if (r->noted)
    anypoll__anypipe_unnote(r->fd, r->item.handle);
  r->deleted = 1;
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
    OVERLAPPED_ENTRY e[ANYPOLL_SET_DEQUEUE_MAX];
    ULONG got = 0;
    if (!GetQueuedCompletionStatusEx(s->port, e, ANYPOLL_SET_DEQUEUE_MAX, &got,
                                     1000, FALSE))
      continue;
    for (ULONG i = 0; i < got; i++)
      anypoll__set_take_packet(s, &e[i]);
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
  anypoll__set_update_push(s, r);
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

/* Whether r's descriptor was closed before its del: found so by a wait
 * (nval), or its number no longer maps to the handle of the add, or (an
 * anypoll_pipe read end read through the program's handle) that handle
 * value names another pipe now. Marks it. */
static int iocp_closed(struct anypoll__reg *r) {
  if (!r->nval && (anypoll__sys_os_handle(r->fd) != (intptr_t)r->item.handle ||
                   (r->anypipe != NULL && anypoll__set_anypipe_gone(r))))
    r->nval = 1;
  return r->nval;
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
    /* Closed before its del: the number may name another object now,
     * which this entry must not take for its own (epoll has dropped such
     * an entry; EBADF once closed, ENOENT once the number is reused). The
     * entry stays, POLLNVAL until its del. */
    if (iocp_closed(r)) {
      errno = anypoll__sys_os_handle(fd) == -1 ? EBADF : ENOENT;
      result = -1;
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
    anypoll__set_check_remove(s, r);
    anypoll__set_update_push(s, r);
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
    anypoll__set_wake_one(s);
  ReleaseSRWLockExclusive(&s->lock);
  return result;
}
