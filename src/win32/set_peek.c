/* SPDX-License-Identifier: MIT */
/* The watch set's peek timer: the shared synchronous duplex handles, which
 * get no read at all (set_pipe.c says why), and the shared read ends beyond
 * the ANYPOLL_SET_SHARED_READS a set reads during its waits (set_shared.c),
 * are peeked at in turn by one thread-pool timer per set, due every
 * ANYPOLL_RECHECK_UNARMED_MS while any is registered, which posts the ones
 * that are ready. One timer however
 * many there are: a timer per registration made the pool run N callbacks
 * per tick, each its own hand-over to a pool thread (about one wineserver
 * request apiece under Wine, besides the peek), where the queries
 * themselves (one per pipe) are all that has to grow with N, and those are
 * bounded per tick (peek_tick). A pipe is asked within ceil(n / 32) ticks
 * of 16 ms. */
#include "set_win.h"

/* One pipe's peek, on the timer's thread, under peek_lock (shared): posts r
 * when the pipe holds data, is not connected (its writer gone) or cannot
 * be asked, or when its
 * descriptor no longer names the handle of the add (the check then says
 * POLLNVAL). A read of ours pending on it (another thread's anypoll_poll)
 * says it is empty with a live writer: the gate answers busy, and nothing
 * is asked. */
static int peek_pipe(struct anypoll__reg *r) {
  /* A one-shot entry reported (disabled until mod, whose stop takes it off
   * the list) needs no post: one would only wake the waiter for nothing. */
  if (r->stopping || r->disabled)
    return 0;
  HANDLE h = r->item.handle;
  if (anypoll__sys_os_handle(r->fd) != (intptr_t)h) {
    anypoll__set_post(r);
    return 1;
  }
  struct anypoll__gate g;
  if (anypoll__gate_begin(&g, h))
    return 1;
  /* The pipe's local information, as the check asks it: one request under
   * Wine, where PeekNamedPipe is two (its ioctl, then a wait for the
   * ioctl's answer). PeekNamedPipe for a handle that cannot be asked. */
  anypoll__pipe_local_info info;
  ZeroMemory(&info, sizeof info);
  int ready;
  if (anypoll__sys_pipe_local_info(h, &info)) {
    ready = info.ReadDataAvailable > 0 ||
            info.NamedPipeState != ANYPOLL_FILE_PIPE_CONNECTED_STATE;
  } else {
    DWORD avail = 0, error;
    ready = !anypoll__sys_peek_named_pipe(h, &avail, &error) || avail > 0;
  }
  anypoll__gate_end(&g);
  if (ready)
    anypoll__set_post(r);
  return 1;
}

/* Shared, so that stop can wait for a tick in progress; the list changes
 * only under the exclusive lock, which is how stop knows that no peek of r
 * is running once it has it. A tick asks at most ANYPOLL_SET_PEEKS_PER_TICK
 * pipes, taking turns along the list, and a tick due while the last still
 * runs (queries slow under load) is skipped: the idle cost is bounded
 * however many are listed (one query per pipe per tick, and ticks piling
 * up, made 1000 idle pipes cost a third of a CPU under Wine). With n
 * listed, each is asked every ceil(n / ANYPOLL_SET_PEEKS_PER_TICK) ticks,
 * its wake-up that much later (documented). */
static void CALLBACK peek_tick(PTP_CALLBACK_INSTANCE inst, void *ctx,
                               PTP_TIMER timer) {
  (void)inst;
  (void)timer;
  struct anypoll__set *s = ctx;
  if (InterlockedCompareExchange(&s->peek_busy, 1, 0) != 0)
    return;
  AcquireSRWLockShared(&s->peek_lock);
  LONG n = s->peek_count, asked = 0;
  if (n > 0) {
    LONG take = n < ANYPOLL_SET_PEEKS_PER_TICK ? n : ANYPOLL_SET_PEEKS_PER_TICK;
    LONG start = s->peek_turn % n;
    s->peek_turn = start + take;
    struct anypoll__reg *r = s->peek_head;
    for (LONG i = 0; i < start && r != NULL; i++)
      r = r->peek_next; /* no system call: pointers only */
    for (LONG i = 0; i < take; i++) {
      if (r == NULL)
        r = s->peek_head; /* around the end of the list */
      asked += peek_pipe(r);
      r = r->peek_next;
    }
  }
  ReleaseSRWLockShared(&s->peek_lock);
  anypoll__test_note_set_peek_tick(asked);
  InterlockedExchange(&s->peek_busy, 0);
}

int anypoll__set_peek_start(struct anypoll__reg *r) {
  struct anypoll__set *s = r->set;
  if (r->peeking)
    return 0; /* still on the list since the last arm */
  /* Made with the first shared pipe: a set without any has no timer. */
  if (s->peek_timer == NULL) {
    s->peek_timer = CreateThreadpoolTimer(peek_tick, s, NULL);
    if (s->peek_timer == NULL)
      return anypoll__set_errno_win(GetLastError());
  }
  AcquireSRWLockExclusive(&s->peek_lock);
  int first = s->peek_head == NULL;
  r->peek_prev = NULL;
  r->peek_next = s->peek_head;
  if (s->peek_head != NULL)
    s->peek_head->peek_prev = r;
  s->peek_head = r;
  s->peek_count++;
  ReleaseSRWLockExclusive(&s->peek_lock);
  r->peeking = 1;
  if (first) {
    /* A negative due time is relative, in 100 ns units. */
    LONGLONG due = -(LONGLONG)ANYPOLL_RECHECK_UNARMED_MS * 10000;
    FILETIME ft;
    ft.dwLowDateTime = (DWORD)due;
    ft.dwHighDateTime = (DWORD)((ULONGLONG)due >> 32);
    SetThreadpoolTimer(s->peek_timer, &ft, ANYPOLL_RECHECK_UNARMED_MS, 0);
  }
  return 0;
}

void anypoll__set_peek_stop(struct anypoll__reg *r) {
  struct anypoll__set *s = r->set;
  if (!r->peeking)
    return;
  /* Waits for a tick in progress: it only peeks and posts. */
  AcquireSRWLockExclusive(&s->peek_lock);
  if (r->peek_prev != NULL)
    r->peek_prev->peek_next = r->peek_next;
  else
    s->peek_head = r->peek_next;
  if (r->peek_next != NULL)
    r->peek_next->peek_prev = r->peek_prev;
  r->peek_next = r->peek_prev = NULL;
  s->peek_count--;
  int last = s->peek_head == NULL;
  ReleaseSRWLockExclusive(&s->peek_lock);
  r->peeking = 0;
  /* Nothing left to peek at: no tick until the next shared pipe. A tick
   * already due finds the list empty. */
  if (last)
    SetThreadpoolTimer(s->peek_timer, NULL, 0, 0);
}

void anypoll__set_peek_end(struct anypoll__set *s) {
  if (s->peek_timer == NULL)
    return;
  SetThreadpoolTimer(s->peek_timer, NULL, 0, 0);
  WaitForThreadpoolTimerCallbacks(s->peek_timer, TRUE);
  CloseThreadpoolTimer(s->peek_timer);
  s->peek_timer = NULL;
}
