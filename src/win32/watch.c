/* SPDX-License-Identifier: MIT */
/* The pending helper reads: one zero-byte read per synchronous file object,
 * shared by every subscriber that waits on it, the gate that keeps our
 * reads and every call on a caller's handle apart, and the identity check
 * that recognises one file object behind two handle values.
 *
 * While a synchronous ReadFile is pending, the I/O manager holds the file
 * object's lock, and every other synchronous call on that file object
 * (PeekNamedPipe, NtQueryInformationFile of any class, GetFileType,
 * getsockopt, another ReadFile) waits for it, from any thread, whatever the
 * handle value it comes through. So:
 *   - one zero-byte read at most per file object, shared by every
 *     subscriber that waits on it through any handle to it (the table
 *     below; handles to one file object are recognised with
 *     anypoll__same_object);
 *   - every call on a caller's handle goes through the gate: it does not
 *     run while a read of ours is pending on the file object, whose pending
 *     read itself says "synchronous pipe, no data, writer alive";
 *   - a helper does not start its read while a gated call on the same file
 *     object is in progress (calls on other file objects do not hold it);
 *   - the read is cancelled (CancelSynchronousIo) when the last subscriber
 *     leaves, so the caller's own reads and CloseHandle never queue behind
 *     it. The cancel can miss if it lands between the helper's decision to
 *     read and its entry into the kernel; the canceller then retries with a
 *     doubling pause until the helper reports back, which bounds that
 *     window;
 *   - a read never outlives the subscription whose handle value it goes
 *     through: when the last subscriber that came with that value leaves
 *     while others stay (a _dup'd descriptor in another set, or in an
 *     anypoll_poll of another thread), the read is cancelled all the same,
 *     the watch is taken out of the table (an orphan), and the others are
 *     told to arm again through their own handles. The program may close
 *     that value once the subscription is gone (del, or the call's
 *     return), and Windows hands it out again at once: a read going on
 *     through it, or a table entry under it, would make whatever object
 *     gets the value next look like "a pipe with a read of ours pending"
 *     (never ready; classified a pipe; a read of ours on it). Taking our own
 *     duplicate for every read would avoid the cancel, but costs a
 *     DuplicateHandle and a CloseHandle per armed pipe in every
 *     anypoll_poll call and every woken set wait (two wineserver requests
 *     each under Wine); the cancel costs only the shared case.
 * A subscriber is told when the read ends by itself (see win.h, struct
 * anypoll__watch_sub): anypoll_poll's waiters by their event, others (the
 * watch set) by a callback. */
#include <errno.h>
#include <stdlib.h>

#include "win.h"

#define BUCKET_COUNT 256

struct watch {
  struct watch *next; /* bucket chain */
  /* The active list: watches whose helper owns a read (reading). */
  struct watch *act_next, *act_prev;
  HANDLE handle;
  struct anypoll__watch_sub *subs; /* subscribers waiting on this file object */
  int users;                      /* length of subs */
  int reading;                    /* a helper owns the zero-byte read */
  int in_read;                    /* ... and may be inside ReadFile */
  int cancel;                     /* the last user left: stop the read */
  int pins;                       /* cancellers waiting for the helper */
  HANDLE thread;                  /* the helper, valid while reading */
  LONG64 owner;                   /* call_id of the call that started it */
  int aborted;   /* the last read ended cancelled while pending: at that
                    moment the pipe had no data and its writer was alive */
  int cancelled; /* a cancel has reached the read (CancelSynchronousIo
                    found it), which will end now: no retry needed */
  /* Out of the table: the subscriber whose handle value `handle` is has
   * left (see above). Found only by comparison while its read still runs,
   * and freed with its last user. */
  int orphan;
  /* `handle` is our own duplicate, made for an orphan whose cancel did not
   * land in time (the read runs on): closed once the read has ended. */
  int own_handle;
};


static SRWLOCK table_lock = SRWLOCK_INIT;
static struct watch *buckets[BUCKET_COUNT];
static struct watch *active;                /* reading watches */
static struct anypoll__gate *queries;       /* gated calls in progress */
static CONDITION_VARIABLE table_cv = CONDITION_VARIABLE_INIT; /* a query
                                     ended, a read ended, or a cancel */

static struct watch **bucket_of(HANDLE h) {
  UINT_PTR v = (UINT_PTR)h >> 2; /* handle values are multiples of 4 */
  return &buckets[(v ^ (v >> 8)) % BUCKET_COUNT];
}

static struct watch *watch_find(HANDLE h) {
  for (struct watch *w = *bucket_of(h); w != NULL; w = w->next)
    if (w->handle == h)
      return w;
  return NULL;
}

/* The reading watch on h's file object under another handle value (a
 * _dup'd descriptor, an inherited or duplicated handle). Asked only while
 * some read of ours is pending, so a single-threaded program never pays
 * for the comparison outside its own arming. skip_call (not 0): reads
 * started by that call are left out (see anypoll__watch_subscribe).
 *
 * Each comparison is a system call (a wineserver request under Wine), and a
 * watch set keeps one read parked per registered synchronous pipe: compared
 * with every one of them, a classification or an anypoll_read would cost
 * O(registered pipes) (1013 requests per woken wait with 1000 registered,
 * bench/requests-count set-pipe-aread-1000). So h's handle count is asked
 * first (NtQueryObject, answered by the object manager, never behind a
 * file object's lock): a handle that is the only one to its file object in
 * the whole system cannot share it with a watch's handle, which is another
 * handle value. Only when h has company are the reads compared. A watch
 * whose handle the program has closed (against the rule to delete first)
 * is missed either way: a comparison through a closed handle fails too. */
static struct watch *active_same_object(HANDLE h, LONG64 skip_call) {
  int asked = 0;
  for (struct watch *a = active; a != NULL; a = a->act_next) {
    /* An orphan is in no bucket: its handle value is matched here, and it
     * is compared whoever started it (its read may be left running). */
    if (a->orphan && a->handle == h)
      return a;
    if (a->handle == h ||
        (skip_call != 0 && a->owner == skip_call && !a->orphan))
      continue;
    if (!asked) {
      int sole;
      asked = 1;
      anypoll__sys_handle_access(h, &sole);
      if (sole)
        return NULL;
    }
    if (anypoll__same_object(a->handle, h))
      return a;
  }
  return NULL;
}

static void set_reading(struct watch *w, int on) {
  if (on) {
    w->reading = 1;
    w->act_prev = NULL;
    w->act_next = active;
    if (active != NULL)
      active->act_prev = w;
    active = w;
  } else {
    w->reading = 0;
    if (w->act_prev != NULL)
      w->act_prev->act_next = w->act_next;
    else
      active = w->act_next;
    if (w->act_next != NULL)
      w->act_next->act_prev = w->act_prev;
    w->act_next = w->act_prev = NULL;
  }
}

/* Takes w out of its bucket. */
static void watch_unhash(struct watch *w) {
  for (struct watch **p = bucket_of(w->handle); *p != NULL; p = &(*p)->next) {
    if (*p == w) {
      *p = w->next;
      break;
    }
  }
}

static void watch_release_if_unused(struct watch *w) {
  if (w->users != 0 || w->reading || w->pins != 0)
    return;
  if (!w->orphan)
    watch_unhash(w);
  free(w);
}

/* Takes sub off w's list. Returns 1 when sub was the last subscriber that
 * came with w's handle value while others stay: w is then made an orphan
 * (out of the table), and its read, if one runs, must end (see above). */
static int watch_unlink(struct watch *w, struct anypoll__watch_sub *sub) {
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
  watch_unhash(w);
  w->orphan = 1;
  return 1;
}


/* ---- The identity check ---------------------------------------------------
 * NtCompareObjects is answered by the object manager and never takes a file
 * object's lock, so it is safe while a read of ours is pending. */

int anypoll__same_object(HANDLE a, HANDLE b) {
  if (a == b)
    return 1;
  /* STATUS_SUCCESS: same object; STATUS_NOT_SAME_OBJECT or an error (a
   * handle closed meanwhile): not known to be the same. */
  return anypoll__sys_compare_objects(a, b);
}

/* ---- The gate ------------------------------------------------------------ */

int anypoll__gate_begin(struct anypoll__gate *g, HANDLE h) {
  return anypoll__gate_begin_skip(g, h, 0);
}

int anypoll__gate_begin_skip(struct anypoll__gate *g, HANDLE h,
                             LONG64 skip_call) {
  AcquireSRWLockExclusive(&table_lock);
  struct watch *w = watch_find(h);
  int busy = (w != NULL && w->reading) ||
             active_same_object(h, skip_call) != NULL;
  if (!busy) {
    g->handle = h;
    g->next = queries;
    queries = g;
  }
  ReleaseSRWLockExclusive(&table_lock);
  return busy;
}

void anypoll__gate_end(struct anypoll__gate *g) {
  AcquireSRWLockExclusive(&table_lock);
  for (struct anypoll__gate **p = &queries; *p != NULL; p = &(*p)->next) {
    if (*p == g) {
      *p = g->next;
      break;
    }
  }
  /* Only helpers wait on the variable, and only while some query is
   * registered: a program without them wakes nobody. */
  if (active != NULL)
    WakeAllConditionVariable(&table_cv);
  ReleaseSRWLockExclusive(&table_lock);
}

/* Whether a gated call is in progress on w's file object: its read must
 * not start yet, or that call would wait behind it. Queries on other file
 * objects do not hold the helper up, even when one of them is itself stuck
 * behind somebody else's read (another thread's or a child's blocking read
 * on an inherited handle). */
static int query_conflicts(const struct watch *w) {
  for (struct anypoll__gate *q = queries; q != NULL; q = q->next)
    if (q->handle == w->handle || anypoll__same_object(q->handle, w->handle))
      return 1;
  return 0;
}


/* ---- Helper-thread reads on synchronous handles -------------------------- */

static void signal_subs(struct watch *w, int outcome) {
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
  struct watch *w = arg;
  int outcome = ANYPOLL_WATCH_NONE;
  AcquireSRWLockExclusive(&table_lock);
  while (!w->cancel && query_conflicts(w))
    SleepConditionVariableSRW(&table_cv, &table_lock, INFINITE, 0);
  if (!w->cancel) {
    w->in_read = 1;
    HANDLE h = w->handle; /* read under the lock: an orphan's may change */
    ReleaseSRWLockExclusive(&table_lock);
    DWORD error;
    BOOL ok = anypoll__sys_read_zero(h, &error);
    outcome = anypoll__watch_read_outcome(ok, error);
    AcquireSRWLockExclusive(&table_lock);
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
  WakeAllConditionVariable(&table_cv);
  /* A canceller still waiting on w holds a pin, so this frees nothing
   * under it; the canceller releases w once it has seen the read end. */
  watch_release_if_unused(w);
  ReleaseSRWLockExclusive(&table_lock);
}

/* anypoll__watch_subscribe under the table lock. */
static int subscribe(struct anypoll__watch_sub *sub, HANDLE h, int sole,
                     LONG64 call_id) {
  /* One read per file object: a second one would queue behind the first
   * for the file-object lock, where CancelSynchronousIo cannot reach it.
   * A duplicate of a handle already being read shares that read. */
  struct watch *w = watch_find(h);
  if (w == NULL || !w->reading) {
    /* A handle that was the only one to its object when this call
     * classified it cannot share a file object with another entry of the
     * call: a duplicate made since (by another thread) can only have been
     * armed by another call, so only other calls' reads are compared. This
     * keeps a call on N sole pipes from making N*(N-1)/2 comparisons (each
     * a system call) while it arms them. */
    struct watch *other =
        active_same_object(h, sole ? call_id : 0);
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
    struct watch **b = bucket_of(h);
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
  AcquireSRWLockExclusive(&table_lock);
  int r = subscribe(sub, h, sole, call_id);
  ReleaseSRWLockExclusive(&table_lock);
  return r;
}

int anypoll__watch_rearm(struct anypoll__watch_sub *sub, HANDLE h, int sole,
                         LONG64 owner) {
  int r = 0;
  AcquireSRWLockExclusive(&table_lock);
  struct watch *w = sub->watch;
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
  ReleaseSRWLockExclusive(&table_lock);
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

void anypoll__watch_leave_all(struct anypoll__watch_sub *subs,
                              anypoll_nfds_t count) {
  if (count == 0)
    return;
  AcquireSRWLockExclusive(&table_lock);
  int waiting = 0;
  for (anypoll_nfds_t i = 0; i < count; i++) {
    struct anypoll__watch_sub *sub = &subs[i];
    struct watch *w = sub->watch;
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
    WakeAllConditionVariable(&table_cv); /* helpers waiting for queries */
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
        struct watch *w = subs[i].watch;
        if (subs[i].cancelling && w->reading &&
            (w->users == 0 || w->orphan)) {
          pending = 1;
          if (w->in_read && !w->cancelled && cancel_helper(w->thread))
            w->cancelled = 1;
        }
      }
      if (!pending || GetTickCount64() - start >= ANYPOLL_CANCEL_RETRY_MS)
        break;
      SleepConditionVariableSRW(&table_cv, &table_lock, pause, 0);
      if (pause < 32)
        pause *= 2;
    }
  }
  for (anypoll_nfds_t i = 0; i < count; i++) {
    struct anypoll__watch_sub *sub = &subs[i];
    struct watch *w = sub->watch;
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
        watch_unhash(w);
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
    struct watch *w = subs[i].watch;
    if (w == NULL)
      continue;
    for (anypoll_nfds_t k = i; k < count; k++)
      if (subs[k].watch == w)
        subs[k].watch = NULL;
    watch_release_if_unused(w);
  }
  ReleaseSRWLockExclusive(&table_lock);
}

int anypoll__watch_fired(struct anypoll__watch_sub *sub) {
  AcquireSRWLockExclusive(&table_lock);
  int fired = sub->watch != NULL && !sub->watch->reading &&
              sub->outcome == ANYPOLL_WATCH_FIRED;
  ReleaseSRWLockExclusive(&table_lock);
  return fired;
}
