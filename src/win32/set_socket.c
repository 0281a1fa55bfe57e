/* SPDX-License-Identifier: MIT */
/* Sockets in a watch set: one persistent AFD poll per socket, issued on the
 * set's own AFD handle, which is associated with the set's port, so the
 * poll's completion is a packet in the port (wepoll's design). A handle
 * can be associated with one port only, so each set opens its own AFD
 * handle; the caller's socket handles are never associated with anything.
 * The poll is re-issued only after it has completed, when the wait that
 * took its packet has reported it (or found it not ready).
 *
 * With ANYPOLL_ASSOCIATE the program lets the socket itself be associated
 * with the port, and a connected stream socket asked only for reading is
 * then waited for with a zero-byte receive completing to the port
 * (set_anypipe.c keeps it, as for anypoll_pipe's read ends), libuv's way.
 * Under Wine an AFD poll's answer is output data that the thread which
 * issued it must fetch (an APC, then one more request) before its packet
 * reaches the port, and until then the wineserver keeps the socket in its
 * own poll and handles it again at every request of every thread, about a
 * dozen times per wake-up with one byte waiting; a receive's completion
 * carries no output. The receive also ends on the end of the stream, a
 * reset, and under Wine on urgent data alone, states that last and would
 * end every receive again. So the bytes to read are asked (FIONREAD, two
 * requests under Wine) when a receive ends at the arm, which is how those
 * states show, and of every 8th that ends later, which bounds the reports
 * urgent data alone gets under Wine (Windows does not end a receive on
 * it): none means one of those states, and the full check, and the AFD
 * poll from then on. Asking at every end costs the anchors' ping-pong
 * 1.43x-1.49x its blocking read against about 1.25x. A reset behind data
 * not yet read is seen once the data is read (Wine; anypoll_set(3)). */
#include <errno.h>
#include <stdint.h>

#include "set_win.h"

#define IOCTL_AFD_POLL 0x00012024

/* An NTSTATUS of the error class (NT_ERROR: 0xC0000000 and up). Only those
 * mean the request was never queued: a warning (0x80000000 to 0xBFFFFFFF)
 * is negative as a signed value but still completes the request, with a
 * packet in the port, and STATUS_PENDING is positive. */
#define SET_NT_ERROR(st) ((ULONG)(st) >= 0xC0000000u)

int anypoll__set_socket_open(struct anypoll__set *s) {
  HANDLE h = anypoll__afd_open();
  if (h == INVALID_HANDLE_VALUE) {
    errno = ENOSYS;
    return -1;
  }
  if (CreateIoCompletionPort(h, s->port, ANYPOLL_SET_KEY_AFD, 0) == NULL) {
    int r = anypoll__set_errno_win(GetLastError());
    CloseHandle(h);
    return r;
  }
  /* The handle is never waited on: completions that signal it would be
   * work for nothing. */
  SetFileCompletionNotificationModes(h, FILE_SKIP_SET_EVENT_ON_HANDLE);
  s->afd = h;
  return 0;
}

/* Whether r is waited for with its zero-byte receive: asked for with
 * ANYPOLL_ASSOCIATE, for reading only (the receive tells nothing of
 * POLLOUT or POLLPRI), on a connected stream socket (on a datagram socket
 * it would take a datagram; on a listening one it fails). */
static int set_socket_zread(const struct anypoll__reg *r) {
  short ev = (short)(r->events & 0xffff);
  return (r->events & ANYPOLL_ASSOCIATE) && !r->zr_off &&
         r->item.u.socket.stream &&
         !r->item.u.socket.unconnected && anypoll__readable_bits(ev) != 0 &&
         (ev & ~POLLIN) == 0;
}

int anypoll__set_socket_check(struct anypoll__reg *r) {
  short ev = (short)(r->events & 0xffff);
  int failed = 0, immediate = 0;
  int packet = r->anypipe != NULL &&
               anypoll__set_anypipe_packet(r, &failed, &immediate);
  /* The receive ends on data, and also on the end of the stream, a reset
   * or (under Wine) urgent data alone, which it does not tell apart and
   * which, but the first, would end every receive again. The count of
   * bytes to read tells data; anything else is a state the socket keeps,
   * which the AFD poll reports level-triggered from now (review 4: urgent
   * data alone reported POLLIN at every wait; a reset behind data already
   * read, never POLLERR|POLLHUP). */
  if (packet && !failed && (immediate || (++r->zr_ends & 7) == 0) &&
      anypoll__sys_socket_unread(r->base) <= 0)
    failed = 1;
  /* A receive that fails has met a broken connection, which stays broken:
   * the AFD poll reports it level-triggered from now. */
  if (failed)
    r->zr_off = 1;
  if (r->fresh || r->item.u.socket.unconnected || failed) {
    /* A full check, the one anypoll_poll makes (it also tells a
     * never-connected stream socket, for which AFD has no event); it also
     * finds the base handle the polls are issued for. While the socket is
     * in that state each check is a full one: an AFD poll would never
     * complete, and the state is level-triggered (POLLHUP every wait, as
     * epoll reports it). */
    struct pollfd p = { (SOCKET)(intptr_t)r->fd, ev, 0 };
    if (anypoll__socket_check(&p, &r->item, 1) != 0)
      return POLLERR;
    r->base = r->item.u.socket.afd_base;
    return p.revents;
  }
  if (r->anypipe != NULL && set_socket_zread(r))
    return packet ? anypoll__readable_bits(ev) : -1;
  if (!r->have_result)
    return -1; /* only the AFD poll can tell: arm it */
  r->have_result = 0;
  return anypoll__socket_revents(r->afd.events, ev, r->item.u.socket.stream);
}

int anypoll__set_socket_arm(struct anypoll__reg *r) {
  if (set_socket_zread(r)) {
    /* Only a socket with a peer: a receive on a listening socket under
     * Wine 8 stays pending and takes the readiness of the connections that
     * come, which then wake nothing (test set_associate_listener). Asked
     * once per add or mod. */
    if (!r->zr_tried) {
      r->zr_tried = 1;
      if (anypoll__sys_socket_connected(r->base))
        anypoll__set_anypipe_attach_socket(r);
    }
    if (r->anypipe != NULL)
      return anypoll__set_anypipe_arm(r);
  }
  /* A poll still in flight (pending, or cancelled by a mod and not yet
   * out of the port) will come back and make the registration be checked
   * again: its buffer and status block cannot be reused before. */
  if (r->afd_pending)
    return 0;
  struct anypoll__set *s = r->set;
  r->afd.timeout.QuadPart = INT64_MAX;
  r->afd.count = 1;
  r->afd.exclusive = FALSE;
  r->afd.handle = r->base;
  r->afd.events =
      anypoll__socket_afd_events((short)(r->events & 0xffff), r->item.u.socket.stream);
  r->afd.status = 0;
  r->iosb.Status = STATUS_PENDING;
  InterlockedIncrement(&r->refs);
  InterlockedIncrement(&s->inflight);
  r->afd_pending = 1;
  r->afd_gen = r->gen;
  s->afd_out++;
  /* No event, no APC routine: the completion goes to the port, with the
   * status block's address as its OVERLAPPED. */
  NTSTATUS st = anypoll__nt.device_io_control_file(
      s->afd, NULL, NULL, &r->iosb, &r->iosb, IOCTL_AFD_POLL, &r->afd,
      sizeof r->afd, &r->afd, sizeof r->afd);
  if (SET_NT_ERROR(st)) {
    /* Failed before it was queued: no packet will come. */
    r->afd_pending = 0;
    s->afd_out--;
    InterlockedDecrement(&s->inflight);
    InterlockedDecrement(&r->refs);
    /* A closed socket (its base handle gone): report it invalid. */
    r->afd.events = 0x0020; /* AFD_POLL_LOCAL_CLOSE */
    r->have_result = 1;
    anypoll__set_post(r);
  }
  return 0;
}

void anypoll__set_socket_done(struct anypoll__reg *r) {
  r->afd_pending = 0;
  r->set->afd_out--;
  /* Issued before a mod: the mod's cancel may have come after the poll
   * had completed (CancelIoEx then finds nothing to cancel), so its status
   * can be a success with readiness of before the mod, which reported now
   * would be a false event (and could use up a re-armed ONESHOT). The
   * check that follows arms a poll for the current events. */
  if (r->afd_gen != r->gen)
    return;
  NTSTATUS st = r->iosb.Status;
  if (!SET_NT_ERROR(st) && r->afd.count > 0) {
    r->have_result = 1;
  } else if (SET_NT_ERROR(st) && st != ANYPOLL_STATUS_CANCELLED) {
    r->afd.events = 0x0020; /* the socket went away under the poll */
    r->have_result = 1;
  }
}

void anypoll__set_socket_stop(struct anypoll__reg *r) {
  /* The cancelled poll's packet comes out of the port later, holding its
   * own reference to r. */
  if (r->afd_pending) {
    IO_STATUS_BLOCK cancel;
    anypoll__nt.cancel_io_file_ex(r->set->afd, &r->iosb, &cancel);
  }
  if (r->anypipe != NULL)
    anypoll__set_anypipe_stop(r);
  else
    r->zr_tried = 0; /* a mod may find it connected now */
  r->have_result = 0;
}
