/* SPDX-License-Identifier: MIT */
/* Consoles in a watch set. An input handle is signalled while any input
 * record is queued: a thread-pool wait on it posts the registration, and
 * the check (console.c) removes the records read() would skip, so that
 * focus and mouse records do not keep the wait firing. A partial line
 * (line input mode) keeps the handle signalled and only a person's Enter
 * ends it: it is checked again on a timer instead, as anypoll_poll does.
 * Screen buffers are always writable. */
#include "set_win.h"

short anypoll__set_console_check(struct anypoll__reg *r) {
  return anypoll__console_check(&r->item, (short)(r->events & 0xffff));
}

int anypoll__set_console_arm(struct anypoll__reg *r) {
  if (r->item.kind != ANYPOLL_KIND_CONSOLE_IN || !(r->events & POLLIN))
    return 0;
  if (r->wait != NULL) {
    UnregisterWaitEx(r->wait, INVALID_HANDLE_VALUE);
    r->wait = NULL;
  }
  if (!anypoll__console_waitable(&r->item))
    return anypoll__set_timer(r, ANYPOLL_RECHECK_CONSOLE_MS);
  /* The pool waits on our own duplicate, made once per registration and
   * closed only after the blocking unregister in stop: Microsoft leaves a
   * wait whose handle is closed while it is pending undefined, and the
   * program may close its descriptor before the del. */
  if (r->own == NULL && !anypoll__sys_duplicate(r->item.handle, &r->own)) {
    /* Closed meanwhile, most likely: the check reports it. */
    r->own = NULL;
    return anypoll__set_timer(r, ANYPOLL_RECHECK_CONSOLE_MS);
  }
  if (!anypoll__sys_console_wait(&r->wait, r->own, anypoll__set_post_cb,
                                 r)) {
    r->wait = NULL;
    return anypoll__set_errno_win(GetLastError());
  }
  return 0;
}

void anypoll__set_console_stop(struct anypoll__reg *r) {
  if (r->wait != NULL) {
    UnregisterWaitEx(r->wait, INVALID_HANDLE_VALUE);
    r->wait = NULL;
  }
  /* The pool no longer waits on it. */
  if (r->own != NULL) {
    CloseHandle(r->own);
    r->own = NULL;
  }
}
