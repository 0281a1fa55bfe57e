/* SPDX-License-Identifier: MIT */
/* How a watch set's registration reaches the set's port: the posting and
 * the reference counting every wake-up source (set_pipe.c, set_peek.c,
 * set_socket.c, set_console.c) and the wait (set_wait.c) share. Apart
 * from set.c and set_wait.c, so that the kinds, which those call, call
 * down and never back into them. */
#include <stdlib.h>

#include "set_win.h"

void anypoll__set_unref(struct anypoll__reg *r) {
  if (InterlockedDecrement(&r->refs) == 0)
    free(r);
}

/* PostQueuedCompletionStatus allocates its packet from non-paged pool and
 * fails when there is none. A packet that is not posted is a wake-up lost:
 * a waiter asleep with no timeout would never report the entry. So a
 * failed post is kept and made again by the set's retry timer, every
 * RETRY_MS until it goes through (or the registration stops). The timer
 * was made with the set, so arming it cannot fail. */
#define RETRY_MS 10

static int post(struct anypoll__set *s, ULONG_PTR key, OVERLAPPED *ov) {
  return !anypoll__test_post_fail() &&
         PostQueuedCompletionStatus(s->port, 0, key, ov);
}

/* Under retry_lock. Arming a timer again replaces its due time: failures
 * coming faster than RETRY_MS would put the retry off for ever, so an
 * armed timer is left as it is. */
static void retry_arm(struct anypoll__set *s) {
  if (s->retry_ending || s->retry_armed)
    return; /* retry_ending: the set is being freed, nobody waits any more */
  s->retry_armed = 1;
  /* A negative due time is relative, in 100 ns units. */
  LONGLONG due = -(LONGLONG)RETRY_MS * 10000;
  FILETIME ft;
  ft.dwLowDateTime = (DWORD)due;
  ft.dwHighDateTime = (DWORD)((ULONGLONG)due >> 32);
  SetThreadpoolTimer(s->retry_timer, &ft, 0, 0);
}

void anypoll__set_post(struct anypoll__reg *r) {
  if (r->stopping || InterlockedCompareExchange(&r->posted, 1, 0) != 0)
    return;
  struct anypoll__set *s = r->set;
  InterlockedIncrement(&r->refs);
  InterlockedIncrement(&s->inflight);
  InterlockedIncrement(&s->queued);
  if (post(s, ANYPOLL_SET_KEY_REG, (OVERLAPPED *)r))
    return;
  InterlockedDecrement(&s->queued);
  InterlockedDecrement(&s->inflight);
  InterlockedExchange(&r->posted, 0);
  /* The list keeps the reference the packet would have held. */
  AcquireSRWLockExclusive(&s->retry_lock);
  if (!r->retrying) {
    r->retrying = 1;
    r->retry_next = s->retry_head;
    s->retry_head = r;
    r = NULL;
  }
  retry_arm(s);
  ReleaseSRWLockExclusive(&s->retry_lock);
  if (r != NULL)
    anypoll__set_unref(r); /* already listed */
}

void anypoll__set_post_wake(struct anypoll__set *s) {
  InterlockedIncrement(&s->queued);
  if (post(s, ANYPOLL_SET_KEY_WAKE, NULL))
    return;
  InterlockedDecrement(&s->queued);
  AcquireSRWLockExclusive(&s->retry_lock);
  s->wake_retry = 1;
  retry_arm(s);
  ReleaseSRWLockExclusive(&s->retry_lock);
}

static void CALLBACK retry_cb(PTP_CALLBACK_INSTANCE inst, void *ctx,
                              PTP_TIMER timer) {
  (void)inst;
  (void)timer;
  struct anypoll__set *s = ctx;
  AcquireSRWLockExclusive(&s->retry_lock);
  struct anypoll__reg *list = s->retry_head;
  int wake = s->wake_retry;
  s->retry_head = NULL;
  s->wake_retry = 0;
  s->retry_armed = 0;
  ReleaseSRWLockExclusive(&s->retry_lock);
  /* Each entry stays marked listed until just before its post: a failing
   * post of it from another thread meanwhile only drops its reference,
   * and one after the mark is cleared lists it anew, through retry_next,
   * which is read here first, under the lock. */
  while (list != NULL) {
    struct anypoll__reg *r = list;
    AcquireSRWLockExclusive(&s->retry_lock);
    list = r->retry_next;
    r->retrying = 0;
    ReleaseSRWLockExclusive(&s->retry_lock);
    anypoll__set_post(r);
    anypoll__set_unref(r);
  }
  if (wake)
    anypoll__set_post_wake(s);
}

int anypoll__set_retry_init(struct anypoll__set *s) {
  InitializeSRWLock(&s->retry_lock);
  s->retry_timer = CreateThreadpoolTimer(retry_cb, s, NULL);
  if (s->retry_timer == NULL)
    return anypoll__set_errno_win(GetLastError());
  return 0;
}

void anypoll__set_retry_end(struct anypoll__set *s) {
  /* Called before the port is drained: a callback that read a
   * registration's stopping flag just before del set it may still post,
   * and its packet must be in the port when the drain counts what is owed.
   * After the wait below, every registration is stopping, so nothing posts
   * or lists any more; retry_ending keeps a failed wake-up from arming the
   * timer after the cancel (its callback would run on a freed set). */
  AcquireSRWLockExclusive(&s->retry_lock);
  s->retry_ending = 1;
  ReleaseSRWLockExclusive(&s->retry_lock);
  SetThreadpoolTimer(s->retry_timer, NULL, 0, 0);
  WaitForThreadpoolTimerCallbacks(s->retry_timer, TRUE);
  CloseThreadpoolTimer(s->retry_timer);
  struct anypoll__reg *list = s->retry_head;
  s->retry_head = NULL;
  while (list != NULL) {
    struct anypoll__reg *r = list;
    list = r->retry_next;
    anypoll__set_unref(r);
  }
}

void CALLBACK anypoll__set_post_cb(void *r, BOOLEAN timed_out) {
  (void)timed_out;
  anypoll__set_post(r);
}

int anypoll__set_timer(struct anypoll__reg *r, DWORD ms) {
  if (r->timer != NULL) {
    /* Waits for a running callback: it only posts. */
    DeleteTimerQueueTimer(NULL, r->timer, INVALID_HANDLE_VALUE);
    r->timer = NULL;
  }
  if (!CreateTimerQueueTimer(&r->timer, NULL, anypoll__set_post_cb, r, ms, 0,
                             WT_EXECUTEONLYONCE)) {
    r->timer = NULL;
    return anypoll__set_errno_win(GetLastError());
  }
  return 0;
}
