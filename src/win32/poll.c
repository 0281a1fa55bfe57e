/* SPDX-License-Identifier: MIT */
/* The event-driven Windows backend: check every entry; if none is ready,
 * arm one wake-up source per entry (see pipe.c, socket.c; consoles are
 * waited on directly), block in one alertable kernel wait until any of
 * them fires or the timeout passes, disarm everything, and check again.
 * This file is the loop and its back-off; the checks are poll_check.c's. */
#include <errno.h>
#include <stdlib.h>

#include "win.h"

#define STACK_ITEMS 16

/* ---- The calling thread's wake event ----------------------------------- */

static INIT_ONCE fls_once = INIT_ONCE_STATIC_INIT;
static DWORD fls_index = FLS_OUT_OF_INDEXES;

static void WINAPI event_free(void *event) {
  if (event != NULL)
    CloseHandle(event);
}

static BOOL CALLBACK fls_init(PINIT_ONCE once, PVOID param, PVOID *ctx) {
  (void)once, (void)param, (void)ctx;
  fls_index = FlsAlloc(event_free);
  return TRUE;
}

/* One auto-reset event per thread, made on its first wait and closed when
 * the thread exits, so a call costs no CreateEvent. Auto-reset, so that
 * the wait that it ends also clears it, and a round of the wait loop needs
 * no ResetEvent (a system call, and a wineserver request under Wine). A
 * wake-up that lands after the wait has ended for another reason (a
 * timeout, a console) leaves it set; the next wait then ends at once and
 * re-checks: one spare round, never a lost or a false result, as every
 * wake-up is followed by a check. */
static HANDLE thread_event(void) {
  InitOnceExecuteOnce(&fls_once, fls_init, NULL, NULL);
  if (fls_index == FLS_OUT_OF_INDEXES || anypoll__test_should_fail()) {
    errno = EAGAIN;
    return NULL;
  }
  HANDLE e = FlsGetValue(fls_index);
  if (e == NULL) {
    e = CreateEventW(NULL, FALSE, FALSE, NULL);
    if (e == NULL || !FlsSetValue(fls_index, e)) {
      if (e != NULL)
        CloseHandle(e);
      errno = EAGAIN;
      return NULL;
    }
  }
  return e;
}

/* ---- Clock --------------------------------------------------------------- */

static LONGLONG qpc_freq(void) {
  LARGE_INTEGER f;
  QueryPerformanceFrequency(&f);
  return f.QuadPart;
}

/* Milliseconds left until deadline, rounded up so that a wait never ends
 * before it; 0 once it has passed. */
static DWORD ms_left(LONGLONG deadline, LONGLONG freq) {
  LONGLONG left = deadline - anypoll__qpc_now();
  if (left <= 0)
    return 0;
  LONGLONG ms = (left * 1000 + freq - 1) / freq;
  return ms >= INFINITE ? INFINITE - 1 : (DWORD)ms;
}

/* ---- Waiting ------------------------------------------------------------- */

struct wait_set {
  HANDLE handles[MAXIMUM_WAIT_OBJECTS];
  DWORD count;
};

static void wait_set_add(struct wait_set *s, HANDLE h) {
  for (DWORD i = 0; i < s->count; i++)
    if (s->handles[i] == h)
      return;
  s->handles[s->count++] = h;
}

/* Arms every entry; returns 0, 1 when the deadline passed first (400 new
 * helper threads took over 1 s under Wine on a loaded machine), or -1 with
 * errno. Whatever was armed is left for the caller to disarm. */
static int arm_all(struct anypoll__waiter *w, struct wait_set *ws,
                   struct pollfd *fds, struct anypoll__item *items,
                   anypoll_nfds_t nfds, int timeout_ms, LONGLONG deadline) {
  ws->count = 0;
  ws->handles[ws->count++] = w->event;
  for (anypoll_nfds_t i = 0; i < nfds; i++)
    items[i].recheck = 0;
  /* The overlapped requests first: each one's start resets the event, which
   * would erase a wake-up set before it (see win.h). */
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    if (items[i].kind != ANYPOLL_KIND_PIPE)
      continue;
    if (anypoll__expired(timeout_ms, deadline))
      return 1;
    if (anypoll__pipe_arm_async(w, &items[i]) != 0)
      return -1;
  }
  if (anypoll__socket_arm(w, fds, items, nfds) != 0)
    return -1;
  if (anypoll__pipe_completed(w) || anypoll__socket_completed(w))
    SetEvent(w->event);
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    struct anypoll__item *it = &items[i];
    switch (it->kind) {
    case ANYPOLL_KIND_PIPE:
      if (anypoll__expired(timeout_ms, deadline))
        return 1;
      if (anypoll__pipe_arm_sync(w, it, fds[i].events) != 0)
        return -1;
      break;
    case ANYPOLL_KIND_CONSOLE_IN:
      if (!(fds[i].events & POLLIN))
        break;
      /* Signalled while any input event is queued; the check has just
       * discarded the ones that are not characters. A partial line (line
       * input mode) stays queued: re-checked then (console.c). */
      if (ws->count < MAXIMUM_WAIT_OBJECTS && anypoll__console_waitable(it))
        wait_set_add(ws, it->handle);
      else
        anypoll__want_recheck(w, it, ANYPOLL_RECHECK_CONSOLE_MS);
      break;
    default:
      break;
    }
  }
  return 0;
}

/* The back-off's pause with many entries to re-check. A round asks each of
 * them (one or two system calls: wineserver requests of 20 to 50 us each
 * under Wine), so at a fixed 16 ms a call on 400 message pipes asked for
 * 50,000 requests a second, and once a round took longer than the pause
 * (a loaded machine) it never slept at all. So the pause is at least
 * RECHECK_US_PER_ENTRY per entry re-checked (2,000 entry checks a second
 * at most, whatever their number), and at least RECHECK_DUTY times what
 * the last round took (the checks use at most a fifth of the thread,
 * however slow each has become). An entry is re-checked up to that pause
 * late (64 entries: 32 ms; 400: 200 ms). */
#define RECHECK_US_PER_ENTRY 500
#define RECHECK_DUTY 4

static DWORD recheck_pause(DWORD backoff, const struct anypoll__item *items,
                           anypoll_nfds_t nfds, LONGLONG round,
                           LONGLONG freq) {
  LONGLONG floor = 0;
  for (anypoll_nfds_t i = 0; i < nfds; i++)
    floor += items[i].recheck;
  floor = floor * RECHECK_US_PER_ENTRY / 1000;
  LONGLONG duty = round * RECHECK_DUTY * 1000 / freq;
  if (duty > floor)
    floor = duty;
  if (floor > 60000)
    floor = 60000;
  return backoff > (DWORD)floor ? backoff : (DWORD)floor;
}

static void disarm_all(struct anypoll__waiter *w) {
  anypoll__pipe_disarm_all(w);
  anypoll__socket_disarm(w);
  w->recheck_ms = 0;
}

static int wait_loop(struct pollfd *fds, struct anypoll__item *items,
                     anypoll_nfds_t nfds, int timeout_ms, LONGLONG deadline,
                     HANDLE event) {
  LONGLONG freq = qpc_freq();
  struct anypoll__waiter w;
  ZeroMemory(&w, sizeof w);
  w.event = event;
  static volatile LONG64 calls;
  w.call_id = InterlockedIncrement64(&calls);
  if (anypoll__pipe_prepare(&w, items, nfds) != 0)
    return -1;
  int result;
  struct wait_set *ws = malloc(sizeof *ws);
  if (ws == NULL) {
    errno = ENOMEM;
    result = -1;
    goto out;
  }

  DWORD backoff = 1;
  LONGLONG round = 0; /* what the last back-off round took, QPC ticks */
  int first_round = 1;
  for (;;) {
    int armed = arm_all(&w, ws, fds, items, nfds, timeout_ms, deadline);
    if (armed != 0) {
      int saved = errno;
      disarm_all(&w);
      errno = saved;
      result = armed < 0 ? -1 : 0;
      break;
    }
    if (anypoll__debug_on && first_round)
      anypoll__debug_armed(w.call_id, fds, items, nfds,
                           timeout_ms < 0 ? INFINITE
                                          : ms_left(deadline, freq));
    first_round = 0;
    LONGLONG debug_t0 = anypoll__debug_on ? anypoll__qpc_now() : 0;
    /* Entries that cannot be waited on: wait at most the pause, whose
     * back-off doubles on each round that finds nothing up to the bound
     * they ask (stretched by recheck_pause). A round ended by the pause
     * re-checks those entries only, the armed ones staying armed:
     * re-arming N idle pipes each round made the CPU grow with N. Only a
     * wake-up, a ready unarmed entry or the deadline disarms. */
    DWORD cap = w.recheck_ms;
    int unarmed_ready = 0;
    DWORD r;
    for (;;) {
      DWORD ms = timeout_ms < 0 ? INFINITE : ms_left(deadline, freq);
      if (cap != 0) {
        if (backoff > cap)
          backoff = cap;
        DWORD pause = recheck_pause(backoff, items, nfds, round, freq);
        if (ms > pause)
          ms = pause;
      }
      r = WaitForMultipleObjectsEx(ws->count, ws->handles, FALSE, ms, TRUE);
      /* A timeout that is not the deadline's (the back-off's, or a wait
       * that ended a little early) keeps everything armed. */
      if (r != WAIT_TIMEOUT || anypoll__expired(timeout_ms, deadline))
        break;
      if (cap == 0)
        continue;
      if (backoff < cap)
        backoff = backoff * 2 < cap ? backoff * 2 : cap;
      LONGLONG t0 = anypoll__qpc_now();
      unarmed_ready = anypoll__check_unarmed(fds, items, nfds, w.call_id,
                                             timeout_ms, deadline);
      round = anypoll__qpc_now() - t0;
      if (unarmed_ready != 0)
        break;
    }
    DWORD wait_error = r == WAIT_FAILED ? GetLastError() : 0;
    LONGLONG debug_t1 = anypoll__debug_on ? anypoll__qpc_now() : 0;
    disarm_all(&w);
    if (anypoll__debug_on)
      anypoll__debug_woke(w.call_id, r, ws->count,
                          (debug_t1 - debug_t0) * 1000000 / freq,
                          (anypoll__qpc_now() - debug_t1) * 1000000 / freq);
    if (r == WAIT_IO_COMPLETION) {
      /* A user APC ran: the Windows analogue of a signal handler. */
      errno = EINTR;
      result = -1;
      break;
    }
    if (r == WAIT_FAILED) {
      result = anypoll__set_errno_win(wait_error);
      break;
    }
    /* At the deadline, a last look, as Linux's poll takes (a descriptor
     * closed during the wait is reported): cheap for armed entries, as a
     * read or AFD poll cancelled while pending answers without a query. */
    int late = unarmed_ready == 0 && anypoll__expired(timeout_ms, deadline);
    result = anypoll__check_entries(fds, items, nfds, &w, late);
    if (result != 0)
      break;
    anypoll__pipe_after_round(items, nfds);
    if (anypoll__expired(timeout_ms, deadline))
      break;
  }
out:
  free(ws);
  anypoll__pipe_release(&w);
  if (anypoll__debug_on)
    anypoll__debug_result(w.call_id, fds, nfds, result);
  return result;
}

int anypoll__win_event_poll(struct pollfd *fds, anypoll_nfds_t nfds,
                            int timeout_ms) {
  /* The deadline counts from here: classifying and checking N entries is
   * part of the wait (N to 3N system calls). Rounded up, like every
   * conversion of time here: never early. */
  LONGLONG freq = qpc_freq();
  LONGLONG deadline =
      anypoll__qpc_now() + ((LONGLONG)timeout_ms * freq + 999) / 1000;
  if (nfds > ANYPOLL_MAX_NFDS) {
    errno = EINVAL;
    return -1;
  }
  if (anypoll__win_init() != 0)
    return -1;
  struct anypoll__item stack_items[STACK_ITEMS];
  struct anypoll__item *items = stack_items;
  if (nfds > STACK_ITEMS) {
    items = malloc(nfds * sizeof *items);
    if (items == NULL) {
      errno = ENOMEM;
      return -1;
    }
  }
  for (anypoll_nfds_t i = 0; i < nfds; i++)
    anypoll__classify(fds[i].fd, &items[i]);

  int result;
  HANDLE event = thread_event();
  if (event == NULL) {
    result = -1;
  } else {
    result = anypoll__check_entries(fds, items, nfds, NULL, 0);
    /* Unless the first check took the whole timeout. */
    if (result == 0 && timeout_ms != 0 &&
        !anypoll__expired(timeout_ms, deadline))
      result = wait_loop(fds, items, nfds, timeout_ms, deadline, event);
  }
  if (items != stack_items)
    free(items);
  return result;
}
