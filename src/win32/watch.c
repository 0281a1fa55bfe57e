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
 * watch set) by a callback.
 *
 * This file holds the table (watch.h), the identity check and the gate;
 * watch_read.c the helper reads, their subscribers and their cancellation. */
#include "watch.h"

ANYPOLL__INTERNAL struct anypoll__watch_table anypoll__watches;

struct anypoll__watch **anypoll__watch_bucket(HANDLE h) {
  UINT_PTR v = (UINT_PTR)h >> 2; /* handle values are multiples of 4 */
  return &anypoll__watches.buckets[(v ^ (v >> 8)) % ANYPOLL_WATCH_BUCKETS];
}

struct anypoll__watch *anypoll__watch_find(HANDLE h) {
  for (struct anypoll__watch *w = *anypoll__watch_bucket(h); w != NULL;
       w = w->next)
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
struct anypoll__watch *anypoll__watch_active_same(HANDLE h, LONG64 skip_call) {
  int asked = 0;
  for (struct anypoll__watch *a = anypoll__watches.active; a != NULL;
       a = a->act_next) {
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

void anypoll__watch_unhash(struct anypoll__watch *w) {
  for (struct anypoll__watch **p = anypoll__watch_bucket(w->handle);
       *p != NULL; p = &(*p)->next) {
    if (*p == w) {
      *p = w->next;
      break;
    }
  }
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
  AcquireSRWLockExclusive(&anypoll__watches.lock);
  struct anypoll__watch *w = anypoll__watch_find(h);
  int busy = (w != NULL && w->reading) ||
             anypoll__watch_active_same(h, skip_call) != NULL;
  if (!busy) {
    g->handle = h;
    g->next = anypoll__watches.queries;
    anypoll__watches.queries = g;
  }
  ReleaseSRWLockExclusive(&anypoll__watches.lock);
  return busy;
}

void anypoll__gate_end(struct anypoll__gate *g) {
  AcquireSRWLockExclusive(&anypoll__watches.lock);
  for (struct anypoll__gate **p = &anypoll__watches.queries; *p != NULL;
       p = &(*p)->next) {
    if (*p == g) {
      *p = g->next;
      break;
    }
  }
  /* Only helpers wait on the variable, and only while some query is
   * registered: a program without them wakes nobody. */
  if (anypoll__watches.active != NULL)
    WakeAllConditionVariable(&anypoll__watches.cv);
  ReleaseSRWLockExclusive(&anypoll__watches.lock);
}
