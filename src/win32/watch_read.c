/* SPDX-License-Identifier: MIT */
/* The helper reads on synchronous pipes (watch.c's head says why there is
 * one per file object, shared, and why each is cancelled when its last
 * subscriber leaves): starting one for a subscriber, telling the
 * subscribers when it ends, and leaving it, with the cancel and its bounded
 * retries. Under the table's lock (watch.h) throughout, except inside the
 * read itself and the waits. */
#include <errno.h>
#include <stdlib.h>

#include "watch.h"

static void set_reading(struct anypoll__watch *w, int on) {
  if (on) {
    w->reading = 1;
    w->act_prev = NULL;
    w->act_next = anypoll__watches.active;
    if (anypoll__watches.active != NULL)
      anypoll__watches.active->act_prev = w;
    anypoll__watches.active = w;
  } else {
    w->reading = 0;
    if (w->act_prev != NULL)
      w->act_prev->act_next = w->act_next;
    else
      anypoll__watches.active = w->act_next;
    if (w->act_next != NULL)
      w->act_next->act_prev = w->act_prev;
    w->act_next = w->act_prev = NULL;
  }
}

static void watch_release_if_unused(struct anypoll__watch *w) {
  if (w->users != 0 || w->reading || w->pins != 0)
    return;
  if (!w->orphan)
    anypoll__watch_unhash(w);
  free(w);
}

/* Takes sub off w's list. Returns 1 when sub was the last subscriber that
 * came with w's handle value while others stay: w is then made an orphan
 * (out of the table), and its read, if one runs, must end (see watch.c's
 * head). */
static int watch_unlink(struct anypoll__watch *w,
                        struct anypoll__watch_sub *sub) {
  for (struct anypoll__watch_sub **p = &w->subs; *p != NULL;
       p = &(*p)->next) {
    if (*p == sub) {
      *p = sub->next;
      break;
    }
  }
  w->users--;
  if (w->orphan || w->users == 0 || sub->handle != w->handle)
    return 0;
  for (struct anypoll__watch_sub *o = w->subs; o != NULL; o = o->next)
    if (o->handle == w->handle)
      return 0;
  anypoll__watch_unhash(w);
  w->orphan = 1;
  return 1;
}

/* Whether a gated call is in progress on w's file object: its read must
 * not start yet, or that call would wait behind it. Queries on other file
 * objects do not hold the helper up, even when one of them is itself stuck
 * behind somebody else's read (another thread's or a child's blocking read
 * on an inherited handle). */
static int query_conflicts(const struct anypoll__watch *w) {
  for (struct anypoll__gate *q = anypoll__watches.queries; q != NULL;
       q = q->next)
    if (q->handle == w->handle || anypoll__same_object(q->handle, w->handle))
      return 1;
  return 0;
}

/* ---- Helper-thread reads on synchronous handles -------------------------- */

static void signal_subs(struct anypoll__watch *w, int outcome) {
  for (struct anypoll__watch_sub *s = w->subs; s != NULL; s = s->next) {
    s->outcome = outcome;
    if (s->notify != NULL)
      s->notify(s);
    else
      SetEvent(s->event);
  }
}

int anypoll__watch_read_outcome(BOOL ok, DWORD error) {
  if (ok)
    return ANYPOLL_WATCH_FIRED;
  switch (error) {
  case ERROR_OPERATION_ABORTED:
    return ANYPOLL_WATCH_NONE;
  case ERROR_BROKEN_PIPE:
  case ERROR_INVALID_HANDLE:
    return ANYPOLL_WATCH_FIRED;
  default:
    /* ERROR_NO_DATA (PIPE_NOWAIT), ERROR_PIPE_LISTENING (a server end
     * with no client), and whatever else ends a read at once without data
     * or end-of-file: reading again would end at once again. */
    return ANYPOLL_WATCH_NO_WAIT;
  }
}

static void helper_read(void *arg) {
  struct anypoll__watch *w = arg;
  int outcome = ANYPOLL_WATCH_NONE;
  AcquireSRWLockExclusive(&anypoll__watches.lock);
  while (!w->cancel && query_conflicts(w))
    SleepConditionVariableSRW(&anypoll__watches.cv, &anypoll__watches.lock,
                              INFINITE, 0);
  if (!w->cancel) {
    w->in_read = 1;
    HANDLE h = w->handle; /* read under the lock: an orphan's may change */
    ReleaseSRWLockExclusive(&anypoll__watches.lock);
    DWORD error;
    BOOL ok = anypoll__sys_read_zero(h, &error);
    outcome = anypoll__watch_read_outcome(ok, error);
    AcquireSRWLockExclusive(&anypoll__watches.lock);
    w->in_read = 0;
    w->aborted = !ok && error == ERROR_OPERATION_ABORTED;
  }
  set_reading(w, 0);
  if (w->own_handle) {
    /* An orphan's duplicate: no read of ours is pending on it now. */
    CloseHandle(w->handle);
    w->handle = NULL;
    w->own_handle = 0;
  }
  /* A cancelled read says nothing about the pipe; but a call that
   * subscribed while the cancel was under way found the read still running
   * and started none of its own, so it is woken to re-check and re-arm. */
  if (!w->cancel)
    signal_subs(w, outcome);
  else if (w->users > 0)
    signal_subs(w, ANYPOLL_WATCH_NONE);
  WakeAllConditionVariable(&anypoll__watches.cv);
  /* A canceller still waiting on w holds a pin, so this frees nothing
   * under it; the canceller releases w once it has seen the read end. */
  watch_release_if_unused(w);
  ReleaseSRWLockExclusive(&anypoll__watches.lock);
}

/* anypoll__watch_subscribe under the table lock. */
static int subscribe(struct anypoll__watch_sub *sub, HANDLE h, int sole,
                     LONG64 call_id) {
  /* One read per file object: a second one would queue behind the first
   * for the file-object lock, where CancelSynchronousIo cannot reach it.
   * A duplicate of a handle already being read shares that read. */
  struct anypoll__watch *w = anypoll__watch_find(h);
  if (w == NULL || !w->reading) {
    /* A handle that was the only one to its object when this call
     * classified it cannot share a file object with another entry of the
     * call: a duplicate made since (by another thread) can only have been
     * armed by another call, so only other calls' reads are compared. This
     * keeps a call on N sole pipes from making N*(N-1)/2 comparisons (each
     * a system call) while it arms them. */
    struct anypoll__watch *other =
        anypoll__watch_active_same(h, sole ? call_id : 0);
    if (other != NULL)
      w = other;
  }
  if (w == NULL) {
    w = calloc(1, sizeof *w);
    if (w == NULL) {
      errno = ENOMEM;
      return -1;
    }
    w->handle = h;
    struct anypoll__watch **b = anypoll__watch_bucket(h);
    w->next = *b;
    *b = w;
  }
  if (!w->reading) {
    w->cancel = 0;
    w->cancelled = 0;
    w->aborted = 0;
    w->owner = call_id;
    set_reading(w, 1);
    w->thread = anypoll__pool_run(helper_read, w);
    if (w->thread == NULL) {
      set_reading(w, 0);
      watch_release_if_unused(w);
      errno = EAGAIN;
      return -1;
    }
  }
  sub->watch = w;
  sub->handle = h;
  sub->outcome = ANYPOLL_WATCH_NONE;
  sub->quiet = 0;
  sub->next = w->subs;
  w->subs = sub;
  w->users++;
  return 0;
}

int anypoll__watch_subscribe(struct anypoll__watch_sub *sub, HANDLE h,
                             int sole, LONG64 call_id) {
  AcquireSRWLockExclusive(&anypoll__watches.lock);
  int r = subscribe(sub, h, sole, call_id);
  ReleaseSRWLockExclusive(&anypoll__watches.lock);
  return r;
}

int anypoll__watch_rearm(struct anypoll__watch_sub *sub, HANDLE h, int sole,
                         LONG64 owner) {
  int r = 0;
  AcquireSRWLockExclusive(&anypoll__watches.lock);
  struct anypoll__watch *w = sub->watch;
  if (w == NULL || !w->reading) {
    if (w != NULL) {
      /* Our last read ended: look again for a read on the file object
       * (another handle's may be running) before starting one. No read
       * runs on w, so an orphan made here needs no cancel. */
      watch_unlink(w, sub);
      sub->watch = NULL;
      watch_release_if_unused(w);
    }
    r = subscribe(sub, h, sole, owner);
  }
  /* else: started again by another wait since ours ended; ours is that
   * one. */
  ReleaseSRWLockExclusive(&anypoll__watches.lock);
  return r;
}

/* Disarming is done for all of a call's reads at once: every read whose
 * last user this call was is cancelled first, and the call then waits once
 * for all of them to end, instead of one cancel-and-wait round trip per
 * pipe. Under the table lock throughout, except inside the waits. Every
 * watch the call touches is pinned until the end: while the lock is
 * released inside the wait, another call that shared one of them (or its
 * helper) could otherwise free it, and this call would then free it again
 * (seen as heap corruption in stress_concurrent_pollers under Wine). */
/* The disarm's retries of a cancel that found no I/O: the wait between two
 * doubles from 1 ms, and after about ANYPOLL_CANCEL_RETRY_MS in all the
 * call stops waiting (see anypoll__watch_leave_all). */
#define ANYPOLL_CANCEL_RETRY_MS 100

/* CancelSynchronousIo on a helper; the tests' fault hook can make it miss,
 * as it does on Windows when the helper's read is queued for the file
 * object's lock behind a read that is not ours (no I/O request exists yet
 * to cancel), which Wine, lacking that lock, cannot show. */
static BOOL cancel_helper(HANDLE thread) {
  if (anypoll__test_cancel_miss()) {
    SetLastError(ERROR_NOT_FOUND);
    return FALSE;
  }
  return CancelSynchronousIo(thread);
}

/* The subscribers to leave: an array of them (arr), or of pointers to them
 * (ptrs, when not NULL). */
#define LEAVE_SUB(i) (ptrs != NULL ? ptrs[i] : &arr[i])

static void leave(struct anypoll__watch_sub *arr,
                  struct anypoll__watch_sub *const *ptrs,
                  anypoll_nfds_t count) {
  if (count == 0)
    return;
  AcquireSRWLockExclusive(&anypoll__watches.lock);
  int waiting = 0;
  for (anypoll_nfds_t i = 0; i < count; i++) {
    struct anypoll__watch_sub *sub = LEAVE_SUB(i);
    struct anypoll__watch *w = sub->watch;
    int orphaned = watch_unlink(w, sub);
    w->pins++;
    sub->cancelling = 0;
    if ((w->users == 0 || orphaned) && w->reading) {
      w->cancel = 1;
      if (w->in_read && cancel_helper(w->thread))
        w->cancelled = 1;
      sub->cancelling = 1;
      waiting = 1;
    }
  }
  if (waiting) {
    /* Helpers waiting for queries. */
    WakeAllConditionVariable(&anypoll__watches.cv);
    /* A cancel can land before the helper enters ReadFile and find no I/O
     * to cancel; it is repeated until one finds the read (once found, the
     * read ends: no more cancels, which would each be a system call for
     * nothing) and the helper is back. A watch that another call
     * subscribed to meanwhile (users > 0) keeps its read.
     *
     * The retries are bounded. On Windows a cancel also finds nothing
     * while the helper's read is queued for the file object's lock behind
     * a synchronous read that is not ours (the program's own blocking
     * ReadFile through a handle we did not see, another process's): no
     * request exists until the lock is granted, so retrying every
     * millisecond would spin for as long as that read lasts. The wait
     * between retries doubles from 1 ms; after ANYPOLL_CANCEL_RETRY_MS the
     * call stops waiting and leaves the helper detached: its watch keeps
     * "cancel" set, so when its read ends (data, end-of-file) it signals
     * no call of ours and frees the watch, and a later call on the pipe
     * shares the read and retries the cancel when it leaves. The entry is
     * reported not ready, as the gate answers while a read is pending
     * (docs/windows-design.md, The cancellation race). The race of a
     * helper about to enter ReadFile is a few instructions wide and is
     * always closed well within the bound. */
    DWORD pause = 1;
    /* Real time, not the sum of the pauses: a wait on the variable ends
     * early whenever any read or query ends. */
    ULONGLONG start = GetTickCount64();
    for (;;) {
      int pending = 0;
      for (anypoll_nfds_t i = 0; i < count; i++) {
        struct anypoll__watch *w = LEAVE_SUB(i)->watch;
        if (LEAVE_SUB(i)->cancelling && w->reading &&
            (w->users == 0 || w->orphan)) {
          pending = 1;
          if (w->in_read && !w->cancelled && cancel_helper(w->thread))
            w->cancelled = 1;
        }
      }
      if (!pending || GetTickCount64() - start >= ANYPOLL_CANCEL_RETRY_MS)
        break;
      SleepConditionVariableSRW(&anypoll__watches.cv, &anypoll__watches.lock,
                                pause, 0);
      if (pause < 32)
        pause *= 2;
    }
  }
  for (anypoll_nfds_t i = 0; i < count; i++) {
    struct anypoll__watch_sub *sub = LEAVE_SUB(i);
    struct anypoll__watch *w = sub->watch;
    /* This call stopped the read and saw it end: if the cancel aborted it
     * while pending, the entry had no data and a live writer then. */
    if (sub->cancelling && !w->reading && w->aborted)
      sub->quiet = 1;
    /* Left running (the cancel kept missing): the caller may close its
     * handle value once this returns, so the watch leaves the table and
     * keeps a duplicate of its own for the comparisons that find it until
     * its read ends (our own handle: the read goes on through the
     * caller's, in the kernel already or about to be). */
    if (sub->cancelling && w->reading && (w->users == 0 || w->orphan)) {
      if (!w->orphan) {
        anypoll__watch_unhash(w);
        w->orphan = 1;
      }
      HANDLE own;
      if (!w->own_handle && anypoll__sys_duplicate(w->handle, &own)) {
        w->handle = own;
        w->own_handle = 1;
      }
    }
    w->pins--;
  }
  /* Freed only now, once all pins are gone: two entries of one call can
   * share a watch. */
  for (anypoll_nfds_t i = 0; i < count; i++) {
    struct anypoll__watch *w = LEAVE_SUB(i)->watch;
    if (w == NULL)
      continue;
    for (anypoll_nfds_t k = i; k < count; k++)
      if (LEAVE_SUB(k)->watch == w)
        LEAVE_SUB(k)->watch = NULL;
    watch_release_if_unused(w);
  }
  ReleaseSRWLockExclusive(&anypoll__watches.lock);
}

#undef LEAVE_SUB

void anypoll__watch_leave_all(struct anypoll__watch_sub *subs,
                              anypoll_nfds_t count) {
  leave(subs, NULL, count);
}

void anypoll__watch_leave_each(struct anypoll__watch_sub *const *subs,
                               anypoll_nfds_t count) {
  leave(NULL, subs, count);
}

int anypoll__watch_fired(struct anypoll__watch_sub *sub) {
  AcquireSRWLockExclusive(&anypoll__watches.lock);
  int fired = sub->watch != NULL && !sub->watch->reading &&
              sub->outcome == ANYPOLL_WATCH_FIRED;
  ReleaseSRWLockExclusive(&anypoll__watches.lock);
  return fired;
}
