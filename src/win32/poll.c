/* SPDX-License-Identifier: MIT */
/* The event-driven Windows backend: check every entry; if none is ready,
 * arm one wake-up source per entry (see pipe.c, socket.c; consoles are
 * waited on directly), block in one alertable kernel wait until any of
 * them fires or the timeout passes, disarm everything, and check again. */
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

static LONGLONG qpc_now(void) {
  LARGE_INTEGER t;
  QueryPerformanceCounter(&t);
  return t.QuadPart;
}

static LONGLONG qpc_freq(void) {
  LARGE_INTEGER f;
  QueryPerformanceFrequency(&f);
  return f.QuadPart;
}

/* Milliseconds left until deadline, rounded up so that a wait never ends
 * before it; 0 once it has passed. */
static DWORD ms_left(LONGLONG deadline, LONGLONG freq) {
  LONGLONG left = deadline - qpc_now();
  if (left <= 0)
    return 0;
  LONGLONG ms = (left * 1000 + freq - 1) / freq;
  return ms >= INFINITE ? INFINITE - 1 : (DWORD)ms;
}

/* ---- Checks -------------------------------------------------------------- */

/* Checks every entry. After a wake-up (w not NULL), entries whose wake-up
 * source was cancelled while still pending are left out (pipe.c decides
 * for pipes): sockets whose AFD poll was cancelled (w->sockets_quiet) had
 * none of the events asked, and read 0 as of then, which is what a check
 * would have said at that moment. Only what fired, and what has no wake-up
 * source (write ends, reads that cannot block, consoles), is asked again. */
static int check_items(struct pollfd *fds, struct anypoll__item *items,
                       anypoll_nfds_t nfds, const struct anypoll__waiter *w) {
  if (w != NULL && w->sockets_quiet) {
    for (anypoll_nfds_t i = 0; i < nfds; i++)
      if (items[i].kind == ANYPOLL_KIND_SOCKET)
        fds[i].revents = 0;
  } else if (anypoll__socket_check(fds, items, nfds) != 0) {
    return -1;
  }
  int ready = 0;
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    struct anypoll__item *it = &items[i];
    short ev = fds[i].events;
    switch (it->kind) {
    case ANYPOLL_KIND_IGNORED:
      fds[i].revents = 0;
      break;
    case ANYPOLL_KIND_INVALID:
      fds[i].revents = POLLNVAL;
      break;
    case ANYPOLL_KIND_PIPE:
      fds[i].revents = anypoll__pipe_recheck(it, ev, w != NULL);
      break;
    case ANYPOLL_KIND_SOCKET:
      break; /* done above, all at once */
    case ANYPOLL_KIND_CONSOLE_IN:
    case ANYPOLL_KIND_CONSOLE_OUT:
      fds[i].revents = anypoll__console_check(it, ev);
      break;
    default:
      fds[i].revents = anypoll__file_check(it, ev);
      break;
    }
    ready += fds[i].revents != 0;
  }
  return ready;
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

/* Arms every entry; returns 0, or -1 with errno (with whatever was armed
 * still to be disarmed by the caller). */
static int arm_all(struct anypoll__waiter *w, struct wait_set *ws,
                   struct pollfd *fds, struct anypoll__item *items,
                   anypoll_nfds_t nfds) {
  ws->count = 0;
  ws->handles[ws->count++] = w->event;
  for (anypoll_nfds_t i = 0; i < nfds; i++)
    items[i].recheck = 0;
  /* The overlapped requests first: each one's start resets the event, which
   * would erase a wake-up set before it (see win.h). */
  for (anypoll_nfds_t i = 0; i < nfds; i++)
    if (items[i].kind == ANYPOLL_KIND_PIPE &&
        anypoll__pipe_arm_async(w, &items[i]) != 0)
      return -1;
  if (anypoll__socket_arm(w, fds, items, nfds) != 0)
    return -1;
  if (anypoll__pipe_completed(w) || anypoll__socket_completed(w))
    SetEvent(w->event);
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    struct anypoll__item *it = &items[i];
    switch (it->kind) {
    case ANYPOLL_KIND_PIPE:
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

/* After a back-off round that timed out: checks only the entries that
 * could not be armed (their kind asked for a re-check: item->recheck), and
 * returns how many are ready. Nothing is written to fds: when one is
 * ready, the caller disarms and checks every entry. */
static int check_unarmed(const struct pollfd *fds,
                         const struct anypoll__item *items,
                         anypoll_nfds_t nfds, LONG64 call_id) {
  int ready = 0;
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    const struct anypoll__item *it = &items[i];
    if (!it->recheck)
      continue;
    short revents = 0;
    if (it->kind == ANYPOLL_KIND_PIPE)
      revents = anypoll__pipe_check_unarmed(it, fds[i].events, call_id);
    else if (it->kind == ANYPOLL_KIND_CONSOLE_IN ||
             it->kind == ANYPOLL_KIND_CONSOLE_OUT)
      revents = anypoll__console_check(it, fds[i].events);
    ready += revents != 0;
  }
  return ready;
}

static void disarm_all(struct anypoll__waiter *w) {
  anypoll__pipe_disarm_all(w);
  anypoll__socket_disarm(w);
  w->recheck_ms = 0;
}

static int wait_loop(struct pollfd *fds, struct anypoll__item *items,
                     anypoll_nfds_t nfds, int timeout_ms, HANDLE event) {
  LONGLONG freq = qpc_freq();
  /* Rounded up, like every conversion of time here: never early. */
  LONGLONG deadline = qpc_now() + ((LONGLONG)timeout_ms * freq + 999) / 1000;

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
  int first_round = 1;
  for (;;) {
    if (arm_all(&w, ws, fds, items, nfds) != 0) {
      int saved = errno;
      disarm_all(&w);
      errno = saved;
      result = -1;
      break;
    }
    if (anypoll__debug_on && first_round)
      anypoll__debug_armed(w.call_id, fds, items, nfds,
                           timeout_ms < 0 ? INFINITE
                                          : ms_left(deadline, freq));
    first_round = 0;
    LONGLONG debug_t0 = anypoll__debug_on ? qpc_now() : 0;
    /* Entries that cannot be waited on: wait at most the back-off, which
     * doubles on each round that finds nothing, up to the bound they ask.
     * A back-off round that ends by its timeout re-checks those entries
     * only, and the armed ones stay armed: re-arming N idle pipes each
     * round (a cancel and a new read each, and a full check) made the CPU
     * of such a wait grow with N. Only a wake-up, a ready unarmed entry or
     * the deadline disarms. */
    DWORD cap = w.recheck_ms;
    int rechecking = cap != 0;
    DWORD r;
    for (;;) {
      DWORD ms = timeout_ms < 0 ? INFINITE : ms_left(deadline, freq);
      if (rechecking && backoff > cap)
        backoff = cap;
      if (rechecking && ms > backoff)
        ms = backoff;
      r = WaitForMultipleObjectsEx(ws->count, ws->handles, FALSE, ms, TRUE);
      if (!rechecking || r != WAIT_TIMEOUT)
        break;
      if (backoff < cap)
        backoff = backoff * 2 < cap ? backoff * 2 : cap;
      if (timeout_ms >= 0 && ms_left(deadline, freq) == 0)
        break;
      if (check_unarmed(fds, items, nfds, w.call_id) != 0)
        break;
    }
    DWORD wait_error = r == WAIT_FAILED ? GetLastError() : 0;
    LONGLONG debug_t1 = anypoll__debug_on ? qpc_now() : 0;
    disarm_all(&w);
    if (anypoll__debug_on)
      anypoll__debug_woke(w.call_id, r, ws->count,
                          (debug_t1 - debug_t0) * 1000000 / freq,
                          (qpc_now() - debug_t1) * 1000000 / freq);
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
    result = check_items(fds, items, nfds, &w);
    if (result != 0)
      break;
    anypoll__pipe_after_round(items, nfds);
    if (timeout_ms >= 0 && ms_left(deadline, freq) == 0)
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
    result = check_items(fds, items, nfds, NULL);
    if (result == 0 && timeout_ms != 0)
      result = wait_loop(fds, items, nfds, timeout_ms, event);
  }
  if (items != stack_items)
    free(items);
  return result;
}
