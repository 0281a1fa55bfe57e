/* SPDX-License-Identifier: MIT */
/* Sockets: checked and waited for with IOCTL_AFD_POLL, the request that
 * select() and WSAPoll are themselves built on, issued on a private handle
 * to the AFD driver. Unlike WSAEventSelect it leaves the socket's blocking
 * mode and the caller's own event associations alone, and one request
 * covers every socket of a call, so there is no 64-handle limit. Which
 * handles are asked (the AFD device, a socket's base handle) is
 * socket_afd.c's. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "win.h"

#define IOCTL_AFD_POLL 0x00012024

#define AFD_POLL_RECEIVE 0x0001
#define AFD_POLL_RECEIVE_EXPEDITED 0x0002
#define AFD_POLL_SEND 0x0004
#define AFD_POLL_DISCONNECT 0x0008
#define AFD_POLL_ABORT 0x0010
#define AFD_POLL_LOCAL_CLOSE 0x0020
#define AFD_POLL_ACCEPT 0x0080
#define AFD_POLL_CONNECT_FAIL 0x0100

typedef struct {
  HANDLE Handle;
  ULONG Events;
  NTSTATUS Status;
} afd_poll_handle_info;

typedef struct {
  LARGE_INTEGER Timeout;
  ULONG NumberOfHandles;
  ULONG Exclusive;
  afd_poll_handle_info Handles[1];
} afd_poll_info;

/* The bits Linux sets for "writable": POLLOUT | POLLWRNORM (one bit in
 * Winsock), and POLLWRBAND too for datagram sockets (datagram_poll) but
 * never for stream ones (tcp_poll, unix_poll's stream case). */
static short writable(short events, int stream) {
  return (short)(events & (stream ? POLLOUT : POLLOUT | POLLWRBAND));
}

/* What AFD is asked for: only what can end up in revents, or an event
 * the call does not report (ordinary data when POLLRDBAND alone was asked)
 * would complete every armed poll at once and the wait would spin. */
static ULONG afd_events_for(short events, int stream) {
  /* Error conditions are always of interest, as poll() reports them
   * whether asked or not. */
  ULONG e = AFD_POLL_ABORT | AFD_POLL_LOCAL_CLOSE | AFD_POLL_CONNECT_FAIL;
  if (anypoll__readable_bits(events))
    e |= AFD_POLL_RECEIVE | AFD_POLL_ACCEPT | AFD_POLL_DISCONNECT;
  if (events & POLLPRI)
    e |= AFD_POLL_RECEIVE_EXPEDITED;
  if (writable(events, stream))
    e |= AFD_POLL_SEND;
  return e;
}

/* The revents Linux's tcp_poll (udp_poll for datagram sockets) gives for
 * the same socket state. */
static short revents_for(ULONG afd_events, short events, int stream) {
  short r = 0;
  if (afd_events & AFD_POLL_LOCAL_CLOSE)
    return POLLNVAL;
  /* An orderly shutdown by the peer is end-of-file: readable, not a hang-up
   * (Linux reports POLLHUP only once both directions are shut). */
  if (afd_events & (AFD_POLL_RECEIVE | AFD_POLL_ACCEPT | AFD_POLL_DISCONNECT))
    r |= anypoll__readable_bits(events);
  if (afd_events & AFD_POLL_RECEIVE_EXPEDITED)
    r |= events & POLLPRI;
  if (afd_events & AFD_POLL_SEND)
    r |= writable(events, stream);
  /* A reset or failed connect closes both directions: Linux then reports
   * the error and the hang-up, and readable and writable so that the next
   * read or write collects the error. */
  if (afd_events & (AFD_POLL_ABORT | AFD_POLL_CONNECT_FAIL))
    r |= POLLERR | POLLHUP | anypoll__readable_bits(events) |
         writable(events, stream);
  return r;
}

/* A stream socket that has neither connected, nor started to, nor listens
 * is in Linux's TCP_CLOSE state, for which tcp_poll reports POLLHUP (and
 * POLLOUT). AFD has no event for it, so a wait on it would last until its
 * timeout. Connecting and listening both bind the socket, so an unbound
 * one is in that state. Asked only of stream sockets with no AFD event.
 * (A socket bound but never connected is in that state too, and is not
 * caught: see docs/deviations.md.) */
static int never_connected(HANDLE s) {
  int error;
  int r = anypoll__sys_socket_name(s, &error);
  return r != 0 && error == WSAEINVAL;
}

static int count_sockets(const struct anypoll__item *items,
                         anypoll_nfds_t nfds) {
  int n = 0;
  for (anypoll_nfds_t i = 0; i < nfds; i++)
    n += items[i].kind == ANYPOLL_KIND_SOCKET;
  return n;
}

/* Builds the request for every socket entry; returns it (malloc'd) or NULL
 * with errno. A socket that appears in several entries is asked about once,
 * for the union of their events, since AFD's answer names each handle once;
 * slot (if not NULL) gets, per entry, the index of its request. *count gets
 * the number of requests (0: no socket, nothing to do). Every stream
 * socket is also asked for the events in extra. Uses each item's afd_base,
 * which the check sets. */
static afd_poll_info *build(const struct pollfd *fds,
                            const struct anypoll__item *items,
                            anypoll_nfds_t nfds, LONGLONG timeout,
                            ULONG *count, size_t *size, ULONG *slot,
                            ULONG extra) {
  ULONG sockets = (ULONG)count_sockets(items, nfds);
  *count = 0;
  if (sockets == 0)
    return NULL;
  *size = offsetof(afd_poll_info, Handles) +
          (size_t)sockets * sizeof(afd_poll_handle_info);
  afd_poll_info *info = malloc(*size);
  if (info == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  ULONG k = 0;
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    if (items[i].kind != ANYPOLL_KIND_SOCKET)
      continue;
    HANDLE base = items[i].u.socket.afd_base;
    ULONG j = 0;
    while (j < k && info->Handles[j].Handle != base)
      j++;
    if (j == k) {
      info->Handles[k].Handle = base;
      info->Handles[k].Events = 0;
      info->Handles[k].Status = 0;
      k++;
    }
    info->Handles[j].Events |= afd_events_for(fds[i].events, items[i].u.socket.stream) |
                               (items[i].u.socket.stream ? extra : 0);
    if (slot != NULL)
      slot[i] = j;
  }
  *count = k;
  *size = offsetof(afd_poll_info, Handles) +
          (size_t)k * sizeof(afd_poll_handle_info);
  info->Timeout.QuadPart = timeout;
  info->NumberOfHandles = k;
  info->Exclusive = FALSE;
  return info;
}

/* One AFD poll with a zero timeout; returns its final status. It has no
 * event: the thread's wake event is left alone (one ResetEvent fewer per
 * check, and no stale wake-up for the wait that may follow), and the
 * status word, not an event, decides when the request is done: reading
 * the result, and freeing its buffer, before then would race the driver's
 * write. A zero timeout completes within the call on Windows (and under
 * Wine the call itself waits for it), so the wait below is a guard; its
 * object is the AFD handle, which every completion on it signals, and the
 * 1 ms bound covers another thread's request start clearing that. */
static NTSTATUS poll_now(HANDLE dev, afd_poll_info *info, size_t size) {
  volatile IO_STATUS_BLOCK iosb;
  iosb.Status = STATUS_PENDING;
  NTSTATUS st = anypoll__nt.device_io_control_file(
      dev, NULL, NULL, NULL, (IO_STATUS_BLOCK *)&iosb, IOCTL_AFD_POLL, info,
      (ULONG)size, info, (ULONG)size);
  if (st == STATUS_PENDING) {
    while (iosb.Status == STATUS_PENDING)
      WaitForSingleObject(dev, 1);
    st = iosb.Status;
  }
  return st;
}

int anypoll__socket_check(struct pollfd *fds, struct anypoll__item *items,
                          anypoll_nfds_t nfds) {
  if (count_sockets(items, nfds) == 0)
    return 0;
  /* Worked out afresh by every check (never carried from an earlier call,
   * whose descriptor may since have been closed and its number or handle
   * value reused), and reused by the arm that follows in the same call. */
  for (anypoll_nfds_t i = 0; i < nfds; i++)
    if (items[i].kind == ANYPOLL_KIND_SOCKET)
      items[i].u.socket.afd_base = anypoll__socket_base(items[i].handle);
  ULONG *slot = malloc(nfds * sizeof *slot);
  if (slot == NULL) {
    errno = ENOMEM;
    return -1;
  }
  ULONG count;
  size_t size;
  /* AFD_POLL_SEND, asked of every stream socket whatever the events, tells
   * a connected socket (the usual case) from one that never connected
   * without asking getsockname. */
  afd_poll_info *info =
      build(fds, items, nfds, 0, &count, &size, slot, AFD_POLL_SEND);
  if (info == NULL) {
    free(slot);
    return -1;
  }
  HANDLE dev = anypoll__afd();
  /* What was asked of each handle, and what it answered (the answer lists
   * only the handles that have events, in request order). */
  HANDLE *asked = malloc(count * sizeof *asked);
  ULONG *wanted = malloc(count * sizeof *wanted);
  ULONG *got = calloc(count, sizeof *got);
  int result = 0;
  if (dev == INVALID_HANDLE_VALUE || asked == NULL || wanted == NULL ||
      got == NULL) {
    errno = dev == INVALID_HANDLE_VALUE ? ENOSYS : ENOMEM;
    result = -1;
    goto out;
  }
  for (ULONG k = 0; k < count; k++) {
    asked[k] = info->Handles[k].Handle;
    wanted[k] = info->Handles[k].Events;
  }
  if (poll_now(dev, info, size) >= 0) {
    ULONG out = 0;
    for (ULONG k = 0; k < count && out < info->NumberOfHandles; k++)
      if (info->Handles[out].Handle == asked[k])
        got[k] = info->Handles[out++].Events;
  } else {
    /* The whole request fails when one handle is bad (a socket closed
     * after the descriptor was classified): ask one at a time to find it. */
    size_t one = offsetof(afd_poll_info, Handles) + sizeof info->Handles[0];
    for (ULONG k = 0; k < count; k++) {
      info->Timeout.QuadPart = 0;
      info->NumberOfHandles = 1;
      info->Exclusive = FALSE;
      info->Handles[0].Handle = asked[k];
      info->Handles[0].Events = wanted[k];
      info->Handles[0].Status = 0;
      if (poll_now(dev, info, one) < 0)
        got[k] = AFD_POLL_LOCAL_CLOSE;
      else
        got[k] = info->NumberOfHandles ? info->Handles[0].Events : 0;
    }
  }
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    if (items[i].kind != ANYPOLL_KIND_SOCKET)
      continue;
    items[i].u.socket.unconnected =
        got[slot[i]] == 0 && items[i].u.socket.stream &&
        never_connected(items[i].handle);
    if (items[i].u.socket.unconnected)
      fds[i].revents = (short)(POLLHUP | writable(fds[i].events, 1));
    else
      fds[i].revents =
          revents_for(got[slot[i]], fds[i].events, items[i].u.socket.stream);
  }
out:
  free(got);
  free(wanted);
  free(asked);
  free(info);
  free(slot);
  return result;
}

int anypoll__socket_arm(struct anypoll__waiter *w, struct pollfd *fds,
                        struct anypoll__item *items, anypoll_nfds_t nfds) {
  ULONG count;
  size_t size;
  if (count_sockets(items, nfds) == 0)
    return 0;
  /* The latest absolute time (positive means absolute, in 100 ns units):
   * the wait's own timeout is kept by the caller. */
  afd_poll_info *info =
      build(fds, items, nfds, INT64_MAX, &count, &size, NULL, 0);
  if (info == NULL)
    return -1;
  w->afd_info = info;
  w->afd_iosb.Status = STATUS_PENDING;
  NTSTATUS st = anypoll__nt.device_io_control_file(
      anypoll__afd(), w->event, NULL, NULL, &w->afd_iosb, IOCTL_AFD_POLL, info,
      (ULONG)size, info, (ULONG)size);
  if (st != STATUS_PENDING) {
    /* Completed (or failed) at once: the re-check finds out which. */
    w->afd_iosb.Status = st;
    SetEvent(w->event);
  }
  w->afd_pending = 1;
  return 0;
}

int anypoll__socket_completed(const struct anypoll__waiter *w) {
  return w->afd_pending &&
         ((volatile IO_STATUS_BLOCK *)&w->afd_iosb)->Status != STATUS_PENDING;
}

void anypoll__socket_disarm(struct anypoll__waiter *w) {
  w->sockets_quiet = 0;
  if (!w->afd_pending)
    return;
  volatile NTSTATUS *status = &w->afd_iosb.Status;
  int cancelled = 0;
  if (*status == STATUS_PENDING) {
    IO_STATUS_BLOCK cancel;
    anypoll__nt.cancel_io_file_ex(anypoll__afd(), &w->afd_iosb, &cancel);
    cancelled = 1;
  }
  /* The request's buffer may be written until it completes, which a
   * cancel makes prompt; the event may already be set by a pipe, so wait
   * on the status word. */
  while (*status == STATUS_PENDING)
    WaitForSingleObject(w->event, 1);
  /* Ended by our cancel, not by an event: no socket of the call had any
   * of the events asked when it was cancelled, and the re-check can leave
   * the sockets out (poll.c). */
  w->sockets_quiet = cancelled && *status == ANYPOLL_STATUS_CANCELLED;
  free(w->afd_info);
  w->afd_info = NULL;
  w->afd_pending = 0;
}

/* ---- For the watch set (set_socket.c) ------------------------------------ */

ULONG anypoll__socket_afd_events(short events, int stream) {
  return afd_events_for(events, stream);
}

short anypoll__socket_revents(ULONG afd_events, short events, int stream) {
  return revents_for(afd_events, events, stream);
}
