/* SPDX-License-Identifier: MIT */
/* anypoll_pipe read ends in a watch set: no thread at all.
 *
 * The read end is opened for overlapped I/O (anypipe.c), so a zero-byte
 * overlapped read can wait on it, and since the program reads it only with
 * anypoll_read (whose requests carry an event with its low bit set, which
 * sends no packet to any port), the handle can be associated with the
 * set's completion port: the zero-byte read's completion is then a packet
 * in the port, with nothing between the writer and the waiter. One read is
 * kept pending per registration, issued when a wait finds the pipe not
 * ready and re-issued only after its packet has been taken; an idle
 * registration is never touched by a wait.
 *
 * Which handles: only anypoll_pipe's, recognised at add by the pipe's name
 * (NtQueryObject, answered by the object manager; the prefix is
 * anypipe.c's, and the rest of the name, process id and serial, makes it
 * unique). A caller's own overlapped handle is not associated: that would
 * send the caller's own completions to our port, and a handle belongs to
 * one port for its life (CreateIoCompletionPort). The name costs one query
 * at add and none per wait, and cannot be fooled by a handle value closed
 * and reused, which a table of the handles anypoll_pipe made could.
 *
 * When the association cannot be made (the read end is in a second set, or
 * the program associated it with a port of its own), the registration
 * stays on set_pipe.c's overlapped path: the same zero-byte read, with a
 * low-bit event and a thread-pool wait that posts it.
 *
 * At del and free the association is ended (FileReplaceCompletionInformation
 * with no port, Windows 8.1 and later), after the pending read has been
 * cancelled and has completed, so that the pipe can join another set
 * later. Where the system cannot end it (before Windows 8.1; Wine 8) the
 * handle stays associated with the port until it is closed: another set, or
 * this one after a del and a new add (a file object takes one association
 * for its life), then takes the overlapped path, and the port, freed with
 * the set, receives nothing more from it.
 *
 * Packets: the key of an association is ANYPOLL_SET_KEY_ANYPIPE plus the
 * descriptor, a number and never a pointer, so that the record of an
 * association (struct anypoll__anypipe) can be freed at del even where the
 * association outlives it: a set that held ten thousand pipes one after
 * the other holds no record of them (it kept 80 bytes per pipe until it
 * was freed, test set_win_anypipe_lifecycles_heap_flat). A packet is ours
 * when its OVERLAPPED is the one of the registration the key's descriptor
 * names now, or of a record deleted while its read was in flight (the
 * set's list of those, freed as their packets come); its OVERLAPPED is
 * compared, never dereferenced. Anything else is a packet of someone
 * else's request on a handle that is or was associated (a program that
 * read it with an OVERLAPPED and an event without the low bit) and is
 * dropped. */
#include <errno.h>
#include <stdlib.h>
#include <wchar.h>

#include "set_win.h"

struct anypoll__anypipe {
  /* The set's list of deleted records whose read is still in flight. */
  struct anypoll__anypipe *next, *prev;
  OVERLAPPED ov;          /* the zero-byte read's */
  struct anypoll__reg *r; /* while attached, or while its read is in flight */
  /* Our duplicate of the program's handle: the read, its cancel and the association's
   * end go through it, so a program that closed its descriptor before the
   * del (the pipe living on through a _dup'd one) cannot strand the read
   * with the set's lock held. Closed at detach, after the read completed. */
  HANDLE own;
  int pending;    /* a read is in flight: its packet has not been taken */
  int detached;   /* del or free: freed once its packet has come */
  int packet;     /* the read's packet was taken, not yet checked */
  LONG reads_seen; /* anypoll__anypipe_drained's count, this set's */
};

static int anypipe_name_is_ours(const WCHAR *name) {
  /* The object name is "\Device\NamedPipe\anypoll-pipe-..."; the prefix
   * anypipe.c creates it with is "\\.\pipe\anypoll-pipe-...". Compared
   * from the last backslash. */
  const WCHAR *leaf = wcsrchr(name, L'\\');
  const WCHAR *want = wcsrchr(ANYPOLL__ANYPIPE_PREFIX, L'\\');
  if (leaf == NULL || want == NULL)
    return 0;
  return wcsncmp(leaf, want, wcslen(want)) == 0;
}

/* Takes a deleted record off the set's list and frees it. */
static void anypipe_unlink_free(struct anypoll__set *s,
                                struct anypoll__anypipe *a) {
  if (a->prev != NULL)
    a->prev->next = a->next;
  else
    s->anypipes = a->next;
  if (a->next != NULL)
    a->next->prev = a->prev;
  if (a->own != NULL)
    CloseHandle(a->own);
  free(a);
}

void anypoll__set_anypipe_attach(struct anypoll__reg *r) {
  struct anypoll__set *s = r->set;
  struct anypoll__anypipe *a = calloc(1, sizeof *a);
  if (a == NULL)
    return; /* the overlapped path needs no memory of this */
  WCHAR name[96];
  if (!anypoll__sys_object_name(r->item.handle, name,
                                sizeof name / sizeof name[0]) ||
      !anypipe_name_is_ours(name) ||
      !anypoll__sys_duplicate(r->item.handle, &a->own)) {
    free(a);
    return;
  }
  /* The association is the file object's: a read through our duplicate
   * completes to the port as one through the caller's handle would. */
  if (!anypoll__sys_associate(a->own, s->port,
                              ANYPOLL_SET_KEY_ANYPIPE + (ULONG_PTR)r->fd)) {
    CloseHandle(a->own);
    free(a);
    return;
  }
  a->r = r;
  r->anypipe = a;
}

int anypoll__set_anypipe_arm(struct anypoll__reg *r) {
  struct anypoll__anypipe *a = r->anypipe;
  struct anypoll__set *s = r->set;
  if (a->pending)
    return 0; /* its packet will come: the registration is checked then */
  ZeroMemory(&a->ov, sizeof a->ov);
  /* No event: the completion is a packet to the port. */
  InterlockedIncrement(&r->refs);
  InterlockedIncrement(&s->inflight);
  a->pending = 1;
  s->afd_out++; /* a packet we did not post: the port's count (set.c) */
  DWORD error;
  BOOL ok = anypoll__sys_read_zero_overlapped(a->own, &a->ov, &error);
  if (ok || error == ERROR_IO_PENDING)
    return 0; /* a packet comes either way */
  /* Failed at once (the writer went between the check and now, or the
   * handle was closed): no packet comes. The check tells what it is. */
  a->pending = 0;
  s->afd_out--;
  InterlockedDecrement(&s->inflight);
  InterlockedDecrement(&r->refs); /* the table still holds one */
  anypoll__set_post(r);
  return 0;
}

/* Whether the check of r can be left to the zero-byte read: r was not
 * just added or modified, no packet of its read has come since the last
 * check (a packet must be checked: data or end of file), and the program
 * has read the pipe with anypoll_read since and left it empty. The
 * level-triggered re-check of a registration reported by the last wait,
 * after the program read what there was, is then a query that says
 * "nothing yet" before the arm: one request per woken wait, which the
 * zero-byte read makes needless (it ends at once if data has come, and
 * its packet is checked). wepoll's sockets and set_socket.c skip it the
 * same way. */
int anypoll__set_anypipe_check_left(struct anypoll__reg *r) {
  struct anypoll__anypipe *a = r->anypipe;
  int packet = a->packet;
  a->packet = 0;
  int drained = r->noted &&
                anypoll__anypipe_drained(r->fd, r->item.handle, &a->reads_seen);
  return drained && !packet && !r->fresh && !a->pending;
}

void anypoll__set_anypipe_stop(struct anypoll__reg *r) {
  /* The cancelled read's packet comes out of the port later, holding its
   * own reference to r; a mod re-arms only after it. */
  if (r->anypipe->pending)
    anypoll__sys_cancel_io(r->anypipe->own, &r->anypipe->ov);
}

void anypoll__set_anypipe_detach(struct anypoll__reg *r) {
  struct anypoll__anypipe *a = r->anypipe;
  r->anypipe = NULL;
  a->detached = 1;
  if (a->pending) {
    /* The association must outlast the read: one ended after it would
     * complete with no packet, and the set would wait for that packet
     * forever. A cancel completes promptly (and a close of the handle has
     * cancelled it already). */
    anypoll__sys_cancel_io(a->own, &a->ov);
    while (!HasOverlappedIoCompleted(&a->ov))
      SleepEx(1, FALSE);
  }
  /* Ended through our own handle, which names this pipe whatever the
   * program did with its handle value meanwhile. Then no read of ours is
   * pending on it, and closing it lets the pipe go when the program's
   * last handle goes. Where the association cannot be ended, it stays
   * with the file object, and nothing of ours needs to: its key is a
   * number that later packets are looked up by. */
  anypoll__sys_dissociate(a->own);
  CloseHandle(a->own);
  a->own = NULL;
  if (!a->pending) {
    free(a);
    return;
  }
  /* Its packet (the cancelled read's) is still to come: listed until
   * then, holding the read's reference to r. */
  struct anypoll__set *s = r->set;
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
  struct anypoll__reg *r = a->r;
  s->afd_out--;
  if (a->detached)
    anypipe_unlink_free(s, a);
  return r;
}

void anypoll__set_anypipe_free_all(struct anypoll__set *s) {
  while (s->anypipes != NULL)
    anypipe_unlink_free(s, s->anypipes);
}
