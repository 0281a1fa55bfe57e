/* Sockets: checked and waited for with IOCTL_AFD_POLL, the request that
 * select() and WSAPoll are themselves built on, issued on a private handle
 * to the AFD driver. Unlike WSAEventSelect it leaves the socket's blocking
 * mode and the caller's own event associations alone, and one request
 * covers every socket of a call, so there is no 64-handle limit. */
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

#define SIO_BASE_HANDLE_ 0x48000022

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

static INIT_ONCE afd_once = INIT_ONCE_STATIC_INIT;
static HANDLE afd_handle = INVALID_HANDLE_VALUE;

static BOOL CALLBACK afd_open(PINIT_ONCE once, PVOID param, PVOID *ctx) {
  (void)once, (void)param, (void)ctx;
  /* Any name under \Device\Afd opens the driver; the suffix only labels the
   * handle for someone reading a handle list. No FILE_SYNCHRONOUS_IO flag:
   * requests on it complete asynchronously, signalling an event. */
  static WCHAR path[] = L"\\Device\\Afd\\anypoll";
  UNICODE_STRING name = { sizeof path - sizeof path[0], sizeof path, path };
  OBJECT_ATTRIBUTES attr;
  InitializeObjectAttributes(&attr, &name, 0, NULL, NULL);
  IO_STATUS_BLOCK iosb;
  HANDLE h;
  if (anypoll__nt.create_file(&h, SYNCHRONIZE, &attr, &iosb, NULL, 0,
                              FILE_SHARE_READ | FILE_SHARE_WRITE, FILE_OPEN, 0,
                              NULL, 0) >= 0)
    afd_handle = h;
  return TRUE;
}

static HANDLE afd(void) {
  InitOnceExecuteOnce(&afd_once, afd_open, NULL, NULL);
  return afd_handle;
}

/* Layered service providers may wrap the socket; AFD wants the base one. */
static HANDLE base_handle(HANDLE s) {
  SOCKET base;
  DWORD bytes;
  if (WSAIoctl((SOCKET)s, SIO_BASE_HANDLE_, NULL, 0, &base, sizeof base,
               &bytes, NULL, NULL) != 0)
    return s;
  return (HANDLE)base;
}

static ULONG afd_events_for(short events) {
  /* Error conditions are always of interest, as poll() reports them
   * whether asked or not. */
  ULONG e = AFD_POLL_ABORT | AFD_POLL_LOCAL_CLOSE | AFD_POLL_CONNECT_FAIL;
  if (events & POLLIN)
    e |= AFD_POLL_RECEIVE | AFD_POLL_ACCEPT | AFD_POLL_DISCONNECT;
  if (events & POLLPRI)
    e |= AFD_POLL_RECEIVE_EXPEDITED;
  if (events & POLLOUT)
    e |= AFD_POLL_SEND;
  return e;
}

/* The revents Linux's tcp_poll gives for the same socket state. */
static short revents_for(ULONG afd_events, short events) {
  short r = 0;
  if (afd_events & AFD_POLL_LOCAL_CLOSE)
    return POLLNVAL;
  /* An orderly shutdown by the peer is end-of-file: readable, not a hang-up
   * (Linux reports POLLHUP only once both directions are shut). */
  if (afd_events & (AFD_POLL_RECEIVE | AFD_POLL_ACCEPT | AFD_POLL_DISCONNECT))
    r |= events & POLLIN;
  if (afd_events & AFD_POLL_RECEIVE_EXPEDITED)
    r |= events & POLLPRI;
  if (afd_events & AFD_POLL_SEND)
    r |= events & POLLOUT;
  /* A reset or failed connect closes both directions: Linux then reports
   * the error and the hang-up, and readable and writable so that the next
   * read or write collects the error. */
  if (afd_events & (AFD_POLL_ABORT | AFD_POLL_CONNECT_FAIL))
    r |= POLLERR | POLLHUP | (events & (POLLIN | POLLOUT));
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
  struct sockaddr_storage addr;
  int len = sizeof addr;
  return getsockname((SOCKET)s, (struct sockaddr *)&addr, &len) != 0 &&
         WSAGetLastError() == WSAEINVAL;
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
 * the number of requests (0: no socket, nothing to do). */
static afd_poll_info *build(const struct pollfd *fds,
                            const struct anypoll__item *items,
                            anypoll_nfds_t nfds, LONGLONG timeout,
                            ULONG *count, size_t *size, ULONG *slot) {
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
    HANDLE base = base_handle(items[i].handle);
    ULONG j = 0;
    while (j < k && info->Handles[j].Handle != base)
      j++;
    if (j == k) {
      info->Handles[k].Handle = base;
      info->Handles[k].Events = 0;
      info->Handles[k].Status = 0;
      k++;
    }
    info->Handles[j].Events |= afd_events_for(fds[i].events);
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

/* One AFD poll with a zero timeout; returns its final status. The event is
 * the calling thread's wake event, still set when this runs as the re-check
 * after a wake-up. Starting the request clears it (everything armed has
 * been disarmed by now), but the status word, not the event alone, decides
 * when the request is done: reading the result, and freeing its buffer,
 * before then would race the driver's write. */
static NTSTATUS poll_now(HANDLE dev, HANDLE event, afd_poll_info *info,
                         size_t size) {
  volatile IO_STATUS_BLOCK iosb;
  iosb.Status = STATUS_PENDING;
  NTSTATUS st = anypoll__nt.device_io_control_file(
      dev, event, NULL, NULL, (IO_STATUS_BLOCK *)&iosb, IOCTL_AFD_POLL, info,
      (ULONG)size, info, (ULONG)size);
  if (st == STATUS_PENDING) {
    /* A zero timeout completes at once; the wait covers the hand-off. */
    while (iosb.Status == STATUS_PENDING)
      WaitForSingleObject(event, INFINITE);
    st = iosb.Status;
  }
  ResetEvent(event);
  return st;
}

int anypoll__socket_check(struct pollfd *fds, struct anypoll__item *items,
                          anypoll_nfds_t nfds, HANDLE event) {
  if (count_sockets(items, nfds) == 0)
    return 0;
  ULONG *slot = malloc(nfds * sizeof *slot);
  if (slot == NULL) {
    errno = ENOMEM;
    return -1;
  }
  ULONG count;
  size_t size;
  afd_poll_info *info = build(fds, items, nfds, 0, &count, &size, slot);
  if (info == NULL) {
    free(slot);
    return -1;
  }
  HANDLE dev = afd();
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
  if (poll_now(dev, event, info, size) >= 0) {
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
      if (poll_now(dev, event, info, one) < 0)
        got[k] = AFD_POLL_LOCAL_CLOSE;
      else
        got[k] = info->NumberOfHandles ? info->Handles[0].Events : 0;
    }
  }
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    if (items[i].kind != ANYPOLL_KIND_SOCKET)
      continue;
    if (got[slot[i]] == 0 && items[i].stream && never_connected(items[i].handle))
      fds[i].revents = (short)(POLLHUP | (fds[i].events & POLLOUT));
    else
      fds[i].revents = revents_for(got[slot[i]], fds[i].events);
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
      build(fds, items, nfds, INT64_MAX, &count, &size, NULL);
  if (info == NULL)
    return -1;
  w->afd_info = info;
  w->afd_iosb.Status = STATUS_PENDING;
  NTSTATUS st = anypoll__nt.device_io_control_file(
      afd(), w->event, NULL, NULL, &w->afd_iosb, IOCTL_AFD_POLL, info,
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
  if (!w->afd_pending)
    return;
  volatile NTSTATUS *status = &w->afd_iosb.Status;
  if (*status == STATUS_PENDING) {
    IO_STATUS_BLOCK cancel;
    anypoll__nt.cancel_io_file_ex(afd(), &w->afd_iosb, &cancel);
  }
  /* The request's buffer may be written until it completes, which a
   * cancel makes prompt; the event may already be set by a pipe, so wait
   * on the status word. */
  while (*status == STATUS_PENDING)
    WaitForSingleObject(w->event, 1);
  free(w->afd_info);
  w->afd_info = NULL;
  w->afd_pending = 0;
}
