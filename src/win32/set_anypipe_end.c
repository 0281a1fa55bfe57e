/* SPDX-License-Identifier: MIT */
/* The end of a zero-byte read kept on a set's port (set_anypipe.c says
 * what it is for): the association ended at del and free, the read's
 * packet taken, and the records of deleted registrations freed once their
 * packets have come. */
#include <stdint.h>
#include <stdlib.h>

#include "set_anypipe.h"

/* Takes a deleted record off the set's list and frees it. */
static void anypipe_unlink_free(struct anypoll__set *s,
                                struct anypoll__anypipe *a) {
  if (a->prev != NULL)
    a->prev->next = a->next;
  else
    s->anypipes = a->next;
  if (a->next != NULL)
    a->next->prev = a->prev;
  if (a->abandoned)
    s->anypipes_abandoned--;
  free(a);
}

/* Whether the association may be ended through a->h: our duplicate, or
 * the program's handle while it still names this pipe. A borrowed value
 * the program closed may name another object already (Windows hands the
 * lowest free value out again), whose own association must not be
 * touched: so not after a broken read, nor when the C runtime no longer
 * maps the descriptor to it, nor when a read was pending and the cancel
 * through it did not find that read (found: the value is this pipe's). */
static int anypipe_may_dissociate(const struct anypoll__reg *r,
                                  const struct anypoll__anypipe *a,
                                  int had_read, BOOL found) {
  if (!a->borrowed)
    return 1;
  if (a->broken || anypoll__sys_os_handle(r->fd) != (intptr_t)a->h)
    return 0;
  return !had_read || found;
}

void anypoll__set_anypipe_detach(struct anypoll__reg *r) {
  struct anypoll__anypipe *a = r->anypipe;
  struct anypoll__set *s = r->set;
  r->anypipe = NULL;
  a->detached = 1;
  /* A read that ended in an error whose packet is not yet taken says what
   * done would have (see there). */
  if (a->borrowed && a->pending && HasOverlappedIoCompleted(&a->ov) &&
      (NTSTATUS)a->ov.Internal < 0 && !a->cancelling)
    a->broken = 1;
  int had_read = a->pending && !HasOverlappedIoCompleted(&a->ov);
  BOOL found = FALSE;
  if (a->pending) {
    /* The association must outlast the read: one ended after it would
     * complete with no packet, and the set would wait for that packet
     * forever. A cancel completes promptly (and a close of the pipe's last
     * handle has ended the read already). */
    a->cancelling = 1;
    found = anypoll__sys_cancel_io(a->h, &a->ov);
    if (found || !a->borrowed) {
      while (!HasOverlappedIoCompleted(&a->ov))
        SleepEx(1, FALSE);
    } else if (!HasOverlappedIoCompleted(&a->ov)) {
      /* Not found through the program's value, and still pending: the
       * program closed that value while the pipe lives on through another
       * handle (a _dup made after the add), and nothing can reach the read
       * now. The del does not wait for it: the record stays listed until
       * its packet comes (data or the writer's close), and is left to the
       * system if the set is freed first (set_anypipe_free_all). */
      a->abandoned = 1;
      s->anypipes_abandoned++;
    }
  }
  /* Then no read of ours is pending on it (or none that could be
   * reached), and closing our duplicate lets the pipe go when the
   * program's last handle goes. Where the association cannot be ended, it
   * stays with the file object, and nothing of ours needs to: its key is a
   * number that later packets are looked up by. */
  if (!a->abandoned && anypipe_may_dissociate(r, a, had_read, found))
    anypoll__sys_dissociate(a->h);
  if (!a->borrowed)
    CloseHandle(a->h);
  a->h = NULL;
  if (!a->pending) {
    free(a);
    return;
  }
  /* Its packet (the cancelled read's) is still to come: listed until
   * then, holding the read's reference to r. */
  a->prev = NULL;
  a->next = s->anypipes;
  if (s->anypipes != NULL)
    s->anypipes->prev = a;
  s->anypipes = a;
}

struct anypoll__reg *anypoll__set_anypipe_done(struct anypoll__set *s,
                                               const OVERLAPPED_ENTRY *e) {
  ULONG_PTR fd = e->lpCompletionKey - ANYPOLL_SET_KEY_ANYPIPE;
  struct anypoll__anypipe *a = NULL;
  if (fd < (ULONG_PTR)s->cap && s->by_fd[fd] != NULL &&
      s->by_fd[fd]->anypipe != NULL &&
      e->lpOverlapped == &s->by_fd[fd]->anypipe->ov)
    a = s->by_fd[fd]->anypipe;
  for (struct anypoll__anypipe *d = s->anypipes; a == NULL && d != NULL;
       d = d->next)
    if (e->lpOverlapped == &d->ov)
      a = d;
  if (a == NULL || !a->pending)
    return NULL; /* not our read's: dropped, never dereferenced */
  a->pending = 0;
  a->packet = 1;
  /* ov.Internal is the read's status once its packet is out. */
  NTSTATUS st = (NTSTATUS)a->ov.Internal;
  if (a->sock)
    a->failed = st < 0 && !(a->cancelling && st == ANYPOLL_STATUS_CANCELLED);
  else if (a->borrowed && st < 0 &&
      !(a->cancelling && st == ANYPOLL_STATUS_CANCELLED)) {
    a->broken = 1;
    /* The writer went, or the program closed the read end: then the value
     * is closed or names another object already, and the entry must not
     * report that object's state, now or after (an error ends a read
     * rarely: one query then). */
    if (!a->detached && !anypoll__set_anypipe_still_named(a))
      a->gone = 1;
  }
  struct anypoll__reg *r = a->r;
  s->afd_out--;
  if (a->detached)
    anypipe_unlink_free(s, a);
  return r;
}

void anypoll__set_anypipe_free_all(struct anypoll__set *s) {
  while (s->anypipes != NULL) {
    struct anypoll__anypipe *a = s->anypipes;
    if (!a->abandoned) {
      anypipe_unlink_free(s, a);
      continue;
    }
    /* A read nothing can cancel (see detach): the system writes its
     * OVERLAPPED when it ends, so the record is left allocated, off the
     * list; the registration it held is released. */
    s->anypipes = a->next;
    if (a->next != NULL)
      a->next->prev = NULL;
    s->anypipes_abandoned--;
    anypoll__set_unref(a->r);
  }
}
