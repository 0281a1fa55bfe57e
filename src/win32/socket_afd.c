/* SPDX-License-Identifier: MIT */
/* The handles IOCTL_AFD_POLL is issued on and asks about: the AFD driver's
 * (anypoll_poll's one for the process; each watch set opens its own,
 * set_socket.c) and a socket's base handle, which a layered service
 * provider may hide under the program's. Apart from socket.c, which builds
 * the requests and reads their answers: finding these handles goes through
 * the provider chain and the door instead. */
#include "win.h"

#define SIO_BASE_HANDLE_ 0x48000022
#define SIO_BSP_HANDLE_POLL_ 0x4800001D

/* Layers of providers followed before giving up (see anypoll__socket_base). */
#define MAX_PROVIDER_LAYERS 8

static INIT_ONCE afd_once = INIT_ONCE_STATIC_INIT;
static HANDLE afd_handle = INVALID_HANDLE_VALUE;

/* A new handle to the AFD driver, or INVALID_HANDLE_VALUE. Any name under
 * \Device\Afd opens the driver; the suffix only labels the handle for
 * someone reading a handle list. No FILE_SYNCHRONOUS_IO flag: requests on
 * it complete asynchronously. Shared by anypoll_poll's one process-wide
 * handle below and each watch set's own (set_socket.c). */
HANDLE anypoll__afd_open(void) {
  static WCHAR path[] = L"\\Device\\Afd\\anypoll";
  UNICODE_STRING name = { sizeof path - sizeof path[0], sizeof path, path };
  OBJECT_ATTRIBUTES attr;
  InitializeObjectAttributes(&attr, &name, 0, NULL, NULL);
  IO_STATUS_BLOCK iosb;
  HANDLE h;
  if (anypoll__nt.create_file(&h, SYNCHRONIZE, &attr, &iosb, NULL, 0,
                              FILE_SHARE_READ | FILE_SHARE_WRITE, FILE_OPEN, 0,
                              NULL, 0) < 0)
    return INVALID_HANDLE_VALUE;
  return h;
}

static BOOL CALLBACK afd_open(PINIT_ONCE once, PVOID param, PVOID *ctx) {
  (void)once, (void)param, (void)ctx;
  afd_handle = anypoll__afd_open();
  return TRUE;
}

HANDLE anypoll__afd(void) {
  InitOnceExecuteOnce(&afd_once, afd_open, NULL, NULL);
  return afd_handle;
}

/* Through the door (syscall.c), which announces the call to the lock
 * model: no read of ours is ever pending on a socket. */
static int ioctl_handle(HANDLE s, DWORD code, HANDLE *out) {
  SOCKET h = INVALID_SOCKET;
  int error;
  int r = anypoll__sys_socket_ioctl_handle(
      s, code,
      code == SIO_BASE_HANDLE_ ? "WSAIoctl(SIO_BASE_HANDLE)"
                               : "WSAIoctl(SIO_BSP_HANDLE_POLL)",
      &h, &error);
  /* anypoll__socket_base reads the error after this returns. */
  WSASetLastError(error);
  if (r != 0 || h == INVALID_SOCKET)
    return 0;
  *out = (HANDLE)h;
  return 1;
}

/* The handle AFD must be asked about. A layered service provider may hand
 * the program a handle of its own, which AFD does not know; the base
 * provider's handle is under it. SIO_BASE_HANDLE names it, but some
 * providers intercept that request (Microsoft says they must not) and fail
 * it: SIO_BSP_HANDLE_POLL then names the handle the layer below would
 * select() on, which may be another layer, so it is followed down until it
 * stops changing. When every request fails, or the handle is no socket
 * any more, the handle itself is asked about: without a layered provider
 * it is the base handle, and a handle that was closed meanwhile makes AFD
 * fail, which the check reports as POLLNVAL. Asked once per socket per
 * check: SIO_BASE_HANDLE is a request to the provider chain (a wineserver
 * request under Wine), not a field read. */
HANDLE anypoll__socket_base(HANDLE s) {
  HANDLE base;
  if (!anypoll__test_base_handle_fails()) {
    if (ioctl_handle(s, SIO_BASE_HANDLE_, &base))
      return base;
    /* Closed since the classification: AFD will say so. */
    if (WSAGetLastError() == WSAENOTSOCK)
      return s;
  }
  HANDLE h = s;
  for (int layer = 0; layer < MAX_PROVIDER_LAYERS; layer++) {
    anypoll__test_note_bsp_poll();
    if (!ioctl_handle(h, SIO_BSP_HANDLE_POLL_, &base) || base == h)
      break;
    h = base;
  }
  return h;
}
