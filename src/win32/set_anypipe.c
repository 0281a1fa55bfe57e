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
 * A read end closed before its del (against the rule): the read goes
 * through the program's own handle when that was the pipe's only handle at
 * add, as it is for an anypoll_pipe end nobody has _dup'd, so that the
 * program's close (_close, CloseHandle, anypoll_close) is the pipe's last
 * close, which ends the pending read (STATUS_PIPE_BROKEN, Wine 8): its
 * packet wakes the set at once, and the check finds the descriptor closed,
 * POLLNVAL, as for every other kind. A duplicate of ours would keep the
 * pipe open, and the close would bring nothing, so none is taken then; a
 * read end that already had company at add gets one (the program's close
 * is not the last one anyway, and our handle is what lets the del cancel
 * the read whatever the program closed). Nothing is checked per wait.
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

#include "set_anypipe.h"


/* FNV-1a over the name, which anypipe.c makes unique (process id and
 * serial): a borrowed value is compared by it before each read. */
static unsigned long long anypipe_name_hash(const WCHAR *name) {
  unsigned long long h = 14695981039346656037ull;
  for (; *name != 0; name++)
    h = (h ^ (unsigned)*name) * 1099511628211ull;
  return h;
}

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

int anypoll__set_anypipe_still_named(const struct anypoll__anypipe *a) {
  WCHAR name[96];
  return anypoll__sys_object_name(a->h, name, sizeof name / sizeof name[0]) &&
         anypipe_name_hash(name) == a->name_hash;
}

void anypoll__set_anypipe_attach(struct anypoll__reg *r) {
  struct anypoll__set *s = r->set;
  struct anypoll__anypipe *a = calloc(1, sizeof *a);
  if (a == NULL)
    return; /* the overlapped path needs no memory of this */
  WCHAR name[96];
  if (!anypoll__sys_object_name(r->item.handle, name,
                                sizeof name / sizeof name[0]) ||
      !anypipe_name_is_ours(name)) {
    free(a);
    return;
  }
  /* Sole at add (the classification's handle count): borrowed. */
  a->borrowed = r->item.u.pipe.sole;
  a->name_hash = anypipe_name_hash(name);
  a->h = r->item.handle;
  if (!a->borrowed && !anypoll__sys_duplicate(r->item.handle, &a->h)) {
    free(a);
    return;
  }
  /* The association is the file object's: a read through any handle to it
   * completes to the port. */
  if (!anypoll__sys_associate(a->h, s->port,
                              ANYPOLL_SET_KEY_ANYPIPE + (ULONG_PTR)r->fd)) {
    if (!a->borrowed)
      CloseHandle(a->h);
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
  if (a->broken)
    /* Writer gone or read end closed, and the check found it not ready:
     * the value may name another object now. The check, on a timer, says
     * what it is. */
    return anypoll__set_timer(r, ANYPOLL_RECHECK_NO_WAIT_MS);
  if (a->gone)
    return 0; /* the check reports it: POLLNVAL */
  /* A borrowed value the program closed while no read was pending may name
   * another object by now (same descriptor, same value: Windows hands out
   * the lowest free one again). A read through it would be the program's
   * object's, and on a synchronous one would block this wait until it had
   * data (set_win_anypipe_closed_unarmed_value_reused). Its name tells:
   * one object-manager request per arm, which a read through our own
   * duplicate would not need, but a duplicate keeps the pipe open and
   * hides the close. */
  if (a->borrowed && !a->sock && !anypoll__set_anypipe_still_named(a)) {
    a->gone = a->broken = 1;
    anypoll__set_post(r);
    return 0;
  }
  ZeroMemory(&a->ov, sizeof a->ov);
  a->cancelling = 0;
  /* No event: the completion is a packet to the port. */
  InterlockedIncrement(&r->refs);
  InterlockedIncrement(&s->inflight);
  a->pending = 1;
  s->afd_out++; /* a packet we did not post: the port's count (set_wait.c) */
  a->gen = r->gen;
  if (a->sock)
    anypoll__test_note_set_zread();
  DWORD error;
  BOOL ok = a->sock ? anypoll__sys_recv_zero_overlapped(a->h, &a->ov, &error)
                    : anypoll__sys_read_zero_overlapped(a->h, &a->ov, &error);
  /* A packet comes, except for a socket's receive that ends at once (its
   * completion mode skips the port on success: attach_socket). */
  if (error == ERROR_IO_PENDING || (ok && !a->sock))
    return 0;
  /* Ended at once with no packet, or failed at once (the writer went
   * between the check and now, or the handle was closed; a socket reset).
   * The check tells what it is. */
  if (a->sock) {
    a->packet = a->immediate = 1;
    a->failed = !ok;
  } else if (a->borrowed) {
    a->broken = 1;
  }
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

/* A socket registered with ANYPOLL_ASSOCIATE, at its first arm as a
 * connected stream socket asked for reading (set_socket.c): the same
 * zero-byte read on the port, a receive on the socket's base handle. The
 * handle is the program's: a duplicate would keep the connection open
 * after the program's close, and no name tells a socket from another (the
 * program promised delete before close). 1 when associated. */
int anypoll__set_anypipe_attach_socket(struct anypoll__reg *r) {
  struct anypoll__anypipe *a = calloc(1, sizeof *a);
  if (a == NULL)
    return 0; /* the AFD poll needs no memory of this */
  a->borrowed = a->sock = 1;
  a->h = r->base;
  if (!anypoll__sys_associate(a->h, r->set->port,
                              ANYPOLL_SET_KEY_ANYPIPE + (ULONG_PTR)r->fd)) {
    free(a);
    return 0;
  }
  /* A receive that ends at once then sends no packet, whatever mode the
   * program may have set already (a packet assumed and never sent lost
   * the readiness and hung the set's free: review 4); the port is ours,
   * so the mode concerns no completion of the program's. */
  if (!anypoll__sys_skip_port_on_success(a->h)) {
    r->zr_off = 1; /* associated for good, but waited for by the AFD poll */
    free(a);
    return 0;
  }
  a->r = r;
  r->anypipe = a;
  return 1;
}

int anypoll__set_anypipe_packet(struct anypoll__reg *r, int *failed,
                                int *immediate) {
  struct anypoll__anypipe *a = r->anypipe;
  int packet = a->packet && a->gen == r->gen;
  *failed = packet && a->failed;
  *immediate = packet && a->immediate;
  a->packet = a->failed = a->immediate = 0;
  return packet;
}

int anypoll__set_anypipe_gone(const struct anypoll__reg *r) {
  return r->anypipe->gone;
}

void anypoll__set_anypipe_stop(struct anypoll__reg *r) {
  /* The cancelled read's packet comes out of the port later, holding its
   * own reference to r; a mod re-arms only after it. */
  struct anypoll__anypipe *a = r->anypipe;
  if (a->pending) {
    a->cancelling = 1;
    anypoll__sys_cancel_io(a->h, &a->ov);
  }
}
