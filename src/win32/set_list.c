/* SPDX-License-Identifier: MIT */
/* The watch set's lists on Windows, under the set's lock: the update queue
 * (registrations added or modified since the last wait), the check list
 * (registrations a wait must look at: queued ones, ones whose wake-up
 * source fired, ready ones kept for level-triggering), and the packets out
 * of the port that put registrations on the check list. */
#include <stddef.h>

#include "set_win.h"

void anypoll__set_check_push(struct anypoll__set *s,
                             struct anypoll__reg *r) {
  if (r->on_check)
    return;
  r->on_check = 1;
  r->check_next = NULL;
  r->check_prev = s->check_tail;
  if (s->check_tail != NULL)
    s->check_tail->check_next = r;
  else
    s->check_head = r;
  s->check_tail = r;
}

void anypoll__set_check_remove(struct anypoll__set *s,
                               struct anypoll__reg *r) {
  if (!r->on_check)
    return;
  r->on_check = 0;
  if (r->check_prev != NULL)
    r->check_prev->check_next = r->check_next;
  else
    s->check_head = r->check_next;
  if (r->check_next != NULL)
    r->check_next->check_prev = r->check_prev;
  else
    s->check_tail = r->check_prev;
  r->check_next = r->check_prev = NULL;
}

void anypoll__set_update_push(struct anypoll__set *s,
                              struct anypoll__reg *r) {
  if (r->on_update)
    return;
  r->on_update = 1;
  r->update_next = NULL;
  r->update_prev = s->update_tail;
  if (s->update_tail != NULL)
    s->update_tail->update_next = r;
  else
    s->update_head = r;
  s->update_tail = r;
}

void anypoll__set_update_remove(struct anypoll__set *s,
                                struct anypoll__reg *r) {
  if (!r->on_update)
    return;
  r->on_update = 0;
  if (r->update_prev != NULL)
    r->update_prev->update_next = r->update_next;
  else
    s->update_head = r->update_next;
  if (r->update_next != NULL)
    r->update_next->update_prev = r->update_prev;
  else
    s->update_tail = r->update_prev;
  r->update_next = r->update_prev = NULL;
}

void anypoll__set_wake_one(struct anypoll__set *s) {
  if (s->waiters > 0)
    anypoll__set_post_wake(s);
}

void anypoll__set_take_packet(struct anypoll__set *s,
                              const OVERLAPPED_ENTRY *e) {
  struct anypoll__reg *r;
  switch (e->lpCompletionKey) {
  case ANYPOLL_SET_KEY_REG:
    r = (struct anypoll__reg *)e->lpOverlapped;
    InterlockedDecrement(&s->queued);
    InterlockedExchange(&r->posted, 0);
    break;
  case ANYPOLL_SET_KEY_AFD:
    /* Through void *: the status block is inside the registration, so the
     * result is aligned, which a char * cast cannot tell the compiler
     * (-Wcast-align=strict, the gnulib host flags). */
    r = (struct anypoll__reg *)(void *)((char *)e->lpOverlapped -
                                        offsetof(struct anypoll__reg, iosb));
    anypoll__set_socket_done(r);
    break;
  case ANYPOLL_SET_KEY_WAKE:
    InterlockedDecrement(&s->queued);
    return; /* a wake-up: the caller looks again */
  default:
    /* The key of an anypoll_pipe read end's association. */
    r = anypoll__set_anypipe_done(s, e);
    if (r == NULL)
      return;
    break;
  }
  InterlockedDecrement(&s->inflight);
  if (!r->deleted && !r->disabled)
    anypoll__set_check_push(s, r);
  anypoll__set_unref(r);
}
