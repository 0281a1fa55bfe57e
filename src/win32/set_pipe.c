/* SPDX-License-Identifier: MIT */
/* Pipes in a watch set.
 *
 * A synchronous read end keeps one subscription to watch.c's zero-byte read
 * (a pooled helper parked in ReadFile) for as long as it is registered:
 * the read persists across waits, is shared with any anypoll_poll waiting
 * on the same file object (which therefore never cancels it), obeys the
 * gate, and is cancelled only by mod, del or free. When it ends, the
 * helper posts the registration to the set's port.
 *
 * An asynchronous read end (opened with FILE_FLAG_OVERLAPPED) gets an
 * overlapped zero-byte read instead. Its completion cannot be made a port
 * packet directly: the handle belongs to the caller, who may have
 * associated it with a port of their own (a handle has one association for
 * life), and associating it with ours would send the caller's own
 * completions there. So the read signals an event whose low bit is set
 * (no packet to any port, documented for GetQueuedCompletionStatus), and a
 * thread-pool wait on that event posts the registration.
 *
 * anypoll_pipe's read ends wait on the set's port instead, with no thread
 * at all (set_anypipe.c).
 *
 * Write ends (POLLOUT) and read ends whose read cannot block are checked
 * again on a timer, as anypoll_poll re-checks them on its back-off; so are
 * write ends asked for anything else (their reader's departure, POLLERR,
 * which nothing signals to a write end), and message-type read ends, on
 * which a zero-byte read would consume a zero-length message (anypoll_poll
 * arms none there either: pipe.c, skip_unarmable). A read end whose read
 * keeps ending at once with nothing to report (data it was not asked
 * about) is re-checked on a timer every other round instead of re-armed
 * at once, which would spin.
 *
 * Other processes: a pending synchronous read holds the file object's
 * lock, and a process that shares the file object (a child that inherited
 * the handle, or was given it) queues behind it too: a child's C runtime
 * start-up calls GetFileType on its inherited descriptors and waits there
 * until data comes (Node issue 56537). anypoll_poll holds its read only
 * during a call; the set would hold it for as long as the pipe is
 * registered. So a synchronous read end that another process may share,
 * one whose handle is inheritable or whose file object has another handle
 * (in any process), is read only while a wait of the set sleeps, and every
 * such read has ended before the wait returns (set_shared.c), as
 * anypoll_poll holds its reads; beyond ANYPOLL_SET_SHARED_READS of them in
 * one set, the others are peeked at on the set's timer. A duplex one (read and write access), on
 * which a read would also hold the program's own writes, gets no read at
 * all: the set's peek timer (set_peek.c) peeks at it every
 * ANYPOLL_RECHECK_UNARMED_MS, as anypoll_poll re-checks an entry it cannot
 * arm. Whether it is shared is asked at the first arm after add or mod,
 * never per wait. A registration with ANYPOLL_UNSHARED, the program's
 * promise that no other process shares the pipe, keeps the read parked
 * between waits. A pipe made inheritable or handed to another process
 * after the set parked its read, or no longer shared after the set chose
 * otherwise, keeps that until the next mod. */
#include <errno.h>

#include "set_win.h"

short anypoll__set_pipe_check(struct anypoll__reg *r) {
  struct anypoll__set *s = r->set;
  if (r->anypipe != NULL && anypoll__set_anypipe_gone(r))
    return POLLNVAL;
  /* Left empty by anypoll_read: only the zero-byte read can tell (set_wait.c
   * arms it). Not a report: no count below changes. */
  if (r->anypipe != NULL && anypoll__set_anypipe_check_left(r))
    return -1;
  short ev = (short)(r->events & 0xffff);
  short revents =
      r->item.u.pipe.async
          ? anypoll__pipe_check_async(&r->item, ev)
          : anypoll__pipe_check_owner(&r->item, ev, s->has_dups ? 0 : s->id);
  /* fired: a read of ours was armed since the last report (or add, mod);
   * empty_fires: how often in a row it ended and the check that followed
   * found nothing (set_pipe_arm). */
  if (revents != 0 || r->fresh) {
    r->item.u.pipe.fired = 0;
    r->item.u.pipe.empty_fires = 0;
  }
  return revents;
}

/* Whether the read armed last ended by itself (data or end-of-file) and
 * brought r here: the check has just found nothing to report. */
static int iocp_read_ended(struct anypoll__reg *r) {
  if (!r->item.u.pipe.fired)
    return 0;
  if (r->anypipe != NULL)
    return 1; /* checked only once its read's packet has been taken */
  if (r->item.u.pipe.async)
    return r->ov_pending && HasOverlappedIoCompleted(&r->ov);
  return r->sub.watch != NULL && anypoll__watch_fired(&r->sub);
}

/* The thread-pool wait on the read's event, which posts r. The callback
 * runs on a worker thread (WT_EXECUTEDEFAULT), not in the wait thread:
 * with WT_EXECUTEINWAITTHREAD, Wine 8's pool crashes (a write to 0x8 in
 * tp_object_cancel) when the blocking UnregisterWaitEx of stop races the
 * signal of the cancelled read, in about 1 run in 3 to 6 of 3000
 * add/wait/del cycles; with the callback on a worker, none in the runs of
 * set_win_overlapped_pipe_cycles. UnregisterWaitEx(INVALID_HANDLE_VALUE)
 * waits for a callback that runs (Microsoft documents it), so none runs
 * after stop either way; the cost is a hand-over to a worker per wake-up. */
static int iocp_wait_async(struct anypoll__reg *r) {
  if (!RegisterWaitForSingleObject(&r->wait, r->event, anypoll__set_post_cb,
                                   r, INFINITE, WT_EXECUTEONLYONCE)) {
    r->wait = NULL;
    return anypoll__set_errno_win(GetLastError());
  }
  return 0;
}

static int iocp_arm_async(struct anypoll__reg *r) {
  if (r->ov_pending) {
    /* The read is pending. If its wait could not be registered last time,
     * register it now, or the completion would never be seen: the event
     * (auto-reset, waited on by nobody else) stays signalled until then. */
    if (r->wait != NULL)
      return 0;
    return iocp_wait_async(r);
  }
  /* The read and its cancel go through our own duplicate of the caller's
   * handle (the object manager makes it; no file-object lock is involved).
   * A program may close its descriptor before the del while the pipe lives
   * on through another handle (a _dup'd descriptor, an inherited handle):
   * a cancel through the closed handle value could no longer reach the
   * read, and stop would wait for data or end-of-file with the set's lock
   * held. anypoll_poll does the same (pipe.c, arm_async). */
  if (r->own == NULL && !anypoll__sys_duplicate(r->item.handle, &r->own)) {
    /* Closed meanwhile, most likely: the check reports it. */
    r->own = NULL;
    return anypoll__set_timer(r, ANYPOLL_RECHECK_NO_WAIT_MS);
  }
  if (r->event == NULL) {
    r->event = CreateEventW(NULL, FALSE, FALSE, NULL);
    if (r->event == NULL)
      return anypoll__set_errno_win(GetLastError());
  }
  if (r->wait != NULL) {
    UnregisterWaitEx(r->wait, INVALID_HANDLE_VALUE);
    r->wait = NULL;
  }
  ZeroMemory(&r->ov, sizeof r->ov);
  r->ov.hEvent = (HANDLE)((UINT_PTR)r->event | 1);
  DWORD error;
  BOOL ok = anypoll__sys_read_zero_overlapped(r->own, &r->ov, &error);
  if (!ok && error != ERROR_IO_PENDING) {
    /* Broken, or a read that cannot block: checked again on a timer (the
     * check reports a broken pipe at once). */
    return anypoll__set_timer(r, ANYPOLL_RECHECK_NO_WAIT_MS);
  }
  r->ov_pending = 1;
  return iocp_wait_async(r);
}

/* Whether a process other than ours may hold r's file object (see the
 * head of this file): two object-manager queries, never behind the
 * file-object lock. */
static int iocp_pipe_shared(struct anypoll__reg *r) {
  int sole;
  anypoll__sys_handle_access(r->item.handle, &sole);
  return !sole || anypoll__sys_handle_inheritable(r->item.handle);
}

/* A shared synchronous read end: no read of ours on it between waits (see
 * the head of this file). */
static int iocp_arm_shared(struct anypoll__reg *r) {
  struct anypoll__item *it = &r->item;
  if (it->u.pipe.writable && (r->events & POLLOUT))
    return 0; /* the write timer, armed above, posts it every round */
  if (it->u.pipe.writable)
    return anypoll__set_peek_start(r); /* the set's peek timer */
  return anypoll__set_shared_arm(r);
}

int anypoll__set_pipe_arm(struct anypoll__reg *r) {
  struct anypoll__item *it = &r->item;
  short ev = (short)(r->events & 0xffff);
  if (it->u.pipe.writable && (r->events & POLLOUT))
    if (anypoll__set_timer(r, ANYPOLL_RECHECK_WRITE_MS) != 0)
      return -1;
  if (anypoll__pipe_peer_unwatched(it, ev))
    return anypoll__set_timer(r, ANYPOLL_RECHECK_PEER_MS);
  if (!it->u.pipe.readable)
    return 0;
  if (it->u.pipe.message)
    return anypoll__set_timer(r, ANYPOLL_RECHECK_UNARMED_MS);
  if (InterlockedCompareExchange(&r->no_wait, 0, 0))
    return anypoll__set_timer(r, ANYPOLL_RECHECK_NO_WAIT_MS);
  /* The read ended and the check found nothing, twice in a row: data that
   * was not asked for (events without POLLIN) ends every zero-byte read at
   * once. Once is not enough: another thread may have read the data first.
   * A timer round, then the read again (it waits if the data has gone);
   * the count stays at one, so while the data stays every other round is
   * a timer's. */
  if (iocp_read_ended(r) && ++it->u.pipe.empty_fires >= 2) {
    it->u.pipe.empty_fires = 1;
    it->u.pipe.fired = 0;
    if (it->u.pipe.async)
      r->ov_pending = 0; /* collected: it has completed */
    return anypoll__set_timer(r, ANYPOLL_RECHECK_NO_WAIT_MS);
  }
  it->u.pipe.fired = 1;
  if (r->anypipe != NULL)
    return anypoll__set_anypipe_arm(r);
  if (it->u.pipe.async) {
    /* The previous read has ended (its wait posted us): collect it. */
    if (r->ov_pending && HasOverlappedIoCompleted(&r->ov))
      r->ov_pending = 0;
    return iocp_arm_async(r);
  }
  if (!(r->events & ANYPOLL_UNSHARED)) {
    if (!r->share_known) {
      r->shared = iocp_pipe_shared(r);
      r->share_known = 1;
    }
    if (r->shared)
      return iocp_arm_shared(r);
  }
  return anypoll__set_pipe_read(r);
}

void anypoll__set_pipe_stop(struct anypoll__reg *r) {
  r->share_known = 0; /* mod: asked again at the next arm */
  anypoll__set_peek_stop(r);
  anypoll__set_shared_unlist(r);
  if (r->anypipe != NULL)
    anypoll__set_anypipe_stop(r);
  /* Leaving cancels the read if the set was its last subscriber, and
   * waits for it to end: the callback is not called after this. */
  if (r->sub.watch != NULL)
    anypoll__watch_leave_all(&r->sub, 1);
  /* The wait goes first: the cancel below signals the read's event, and
   * with the wait still registered that signal would hand a callback (which
   * would post nothing, r being stopping) to a pool worker. Under Wine 8 the
   * pool made a new worker for about one such callback in four, up to its
   * 500 (add, wait(0), del of an anypoll_pipe read end in a loop: 4 -> 504
   * threads, idle ones leaving after 5 s;
   * set_win_anypipe_cycles_threads_bounded). Unregistered first, nothing
   * is handed over, and UnregisterWaitEx no longer races the signal. */
  if (r->wait != NULL) {
    UnregisterWaitEx(r->wait, INVALID_HANDLE_VALUE);
    r->wait = NULL;
  }
  if (r->ov_pending) {
    anypoll__sys_cancel_io(r->own, &r->ov);
    /* The kernel writes the OVERLAPPED until the read completes, which the
     * cancel makes prompt: it goes through our own handle, which the
     * caller cannot have closed. */
    while (!HasOverlappedIoCompleted(&r->ov))
      SleepEx(1, FALSE);
    r->ov_pending = 0;
  }
  /* No read of ours is pending on it now. */
  if (r->own != NULL) {
    CloseHandle(r->own);
    r->own = NULL;
  }
  if (r->event != NULL) {
    CloseHandle(r->event);
    r->event = NULL;
  }
}
