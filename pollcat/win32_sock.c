/* SPDX-License-Identifier: MIT */
/* pollcat's Windows sockets (pollcat.h; the rest of the Windows layer is
 * win32.c's): non-blocking, non-inherited Winsock sockets behind C runtime
 * descriptors. A failure is recorded as win32.c's pc_error reads it. */
#include <io.h>
#include <string.h>
#include <winsock2.h>
#include <windows.h>

#include "pollcat.h"
#include "win32.h"

/* Sockets must not leak into a child: anypoll_spawn gives ours only its
 * three pipe ends, and a handle that is not inheritable stays out of any
 * other process started with inheritance too. */
static void no_inherit(HANDLE h) {
  SetHandleInformation(h, HANDLE_FLAG_INHERIT, 0);
}

pc_sock pc_socket(int family) {
  SOCKET s = WSASocketW(family, SOCK_STREAM, IPPROTO_TCP, NULL, 0,
                        WSA_FLAG_OVERLAPPED);
  if (s == INVALID_SOCKET) {
    pc_win_fail_wsa();
    return PC_NO_SOCK;
  }
  no_inherit((HANDLE)s);
  u_long on = 1;
  if (ioctlsocket(s, FIONBIO, &on) != 0) {
    pc_win_fail_wsa();
    closesocket(s);
    return PC_NO_SOCK;
  }
  return (pc_sock)s;
}

int pc_connect(pc_sock s, const struct sockaddr *addr, int len) {
  if (connect((SOCKET)s, addr, len) == 0)
    return 0;
  return pc_win_fail_wsa(); /* WSAEWOULDBLOCK: PCE_INPROGRESS */
}

int pc_connect_result(pc_sock s) {
  int err = 0;
  int len = sizeof err;
  if (getsockopt((SOCKET)s, SOL_SOCKET, SO_ERROR, (char *)&err, &len) != 0)
    return pc_win_fail_wsa();
  if (err == 0)
    return 0;
  WSASetLastError(err);
  return pc_win_fail_wsa();
}

int pc_bind_listen(pc_sock s, const struct sockaddr *addr, int len,
                   int dual) {
  /* SO_REUSEADDR means something else on Windows (binding over a live
   * listener); exclusive use is the safe default for a server. */
  BOOL on = TRUE;
  DWORD off = 0;
  setsockopt((SOCKET)s, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (char *)&on,
             sizeof on);
  DWORD v6only = 1;
  if (dual != 0)
    setsockopt((SOCKET)s, IPPROTO_IPV6, IPV6_V6ONLY,
               (char *)(dual > 0 ? &off : &v6only), sizeof off);
  if (bind((SOCKET)s, addr, len) != 0 || listen((SOCKET)s, 64) != 0)
    return pc_win_fail_wsa();
  return 0;
}

int pc_local_addr(pc_sock s, struct sockaddr_storage *addr, int *len) {
  *len = sizeof *addr;
  if (getsockname((SOCKET)s, (struct sockaddr *)addr, len) != 0)
    return pc_win_fail_wsa();
  return 0;
}

pc_sock pc_accept(pc_sock s, struct sockaddr_storage *addr, int *len) {
  *len = sizeof *addr;
  SOCKET c = accept((SOCKET)s, (struct sockaddr *)addr, len);
  if (c == INVALID_SOCKET) {
    pc_win_fail_wsa_io();
    return PC_NO_SOCK;
  }
  no_inherit((HANDLE)c);
  u_long on = 1;
  ioctlsocket(c, FIONBIO, &on);
  return (pc_sock)c;
}

void pc_sock_close(pc_sock s) { closesocket((SOCKET)s); }

/* anypoll_close: the descriptor must go (the C runtime's table is finite),
 * and _close alone would CloseHandle the socket, which Winsock forbids. */
void pc_sock_io_close(struct pc_io *io) {
  if (io->fd < 0)
    return;
  anypoll_close(io->fd);
  io->fd = -1;
}

int pc_sock_io(pc_sock s, struct pc_io *io) {
  memset(io, 0, sizeof *io);
  io->kind = PC_IO_SOCKET;
  io->sock = s;
  io->max_write = SIZE_MAX;
  io->nonblocking = 1;
  io->nb_read = 1;
  io->fd = _open_osfhandle((intptr_t)s, 0);
  if (io->fd < 0) {
    pc_win_set_last(ERROR_TOO_MANY_OPEN_FILES, 0);
    return -1;
  }
  return 0;
}

int pc_sock_failed(struct pc_io *io) {
  int err = 0;
  int len = sizeof err;
  if (getsockopt((SOCKET)io->sock, SOL_SOCKET, SO_ERROR, (char *)&err,
                 &len) != 0 ||
      err == 0)
    return 0;
  pc_win_set_last((DWORD)err, 1);
  return 1;
}
