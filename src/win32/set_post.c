/* SPDX-License-Identifier: MIT */
/* How a watch set's registration reaches the set's port: the posting and
 * the reference counting every wake-up source (set_pipe.c, set_socket.c,
 * set_console.c) and the wait (set.c) share. Apart from set.c, so that the
 * kinds, which set.c calls, call down and never back into it. */
#include <stdlib.h>

#include "set_win.h"

void anypoll__set_unref(struct anypoll__reg *r) {
  if (InterlockedDecrement(&r->refs) == 0)
    free(r);
}

void anypoll__set_post(struct anypoll__reg *r) {
  if (r->stopping || InterlockedCompareExchange(&r->posted, 1, 0) != 0)
    return;
  struct anypoll__set *s = r->set;
  InterlockedIncrement(&r->refs);
  InterlockedIncrement(&s->inflight);
  InterlockedIncrement(&s->queued);
  if (!PostQueuedCompletionStatus(s->port, 0, ANYPOLL_SET_KEY_REG,
                                  (OVERLAPPED *)r)) {
    /* Out of non-paged pool: the registration would be lost. Nothing can
     * be done from a callback; its next check (any mod) finds it. */
    InterlockedDecrement(&s->queued);
    InterlockedDecrement(&s->inflight);
    InterlockedExchange(&r->posted, 0);
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
