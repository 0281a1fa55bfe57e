/* SPDX-License-Identifier: MIT */
/* Works out what a C runtime descriptor refers to: the kind of handle
 * decides how its readiness is checked and waited for. Every call that goes
 * to the file object of the caller's handle runs inside the gate (watch.c),
 * and goes through the door (syscall.c):
 * while a zero-byte read of ours is pending on that file object, Windows
 * would make it wait for the read. */
#include <stdint.h>

#include "win.h"

/* ---- Classification ------------------------------------------------------ */

/* Wine 8 quirk: getsockopt() on a listening socket now and then fails with
 * WSAENOTSOCK while a connection is arriving (seen in about 1 of 60 runs of
 * the socket_listener_pending_connection test under the yield strategy,
 * which classifies the socket thousands of times); asked again at once, it
 * answers. A pipe fails every time, so only a second failure makes a
 * handle "not a socket". This costs a pipe one more call per
 * classification. */
static int handle_is_socket(HANDLE h, int *type) {
  for (int attempt = 0; attempt < 2; attempt++) {
    int error;
    int r = anypoll__sys_socket_type(h, type, &error);
    if (r == 0)
      return 1;
    if (error != WSAENOTSOCK)
      return 0;
  }
  return 0;
}

static void set_pipe_access(struct anypoll__item *item) {
  int sole;
  ACCESS_MASK access = anypoll__sys_handle_access(item->handle, &sole);
  item->u.pipe.sole = sole != 0;
  item->kind = ANYPOLL_KIND_PIPE;
  item->u.pipe.readable = (access & FILE_READ_DATA) != 0;
  item->u.pipe.writable = (access & FILE_WRITE_DATA) != 0;
}

static void classify_handle(HANDLE h, struct anypoll__item *item) {
  /* Pipes first: FilePipeLocalInformation is answered by the named-pipe
   * file system only, so one query both recognises a pipe (sockets,
   * consoles, disk files and other devices refuse it) and holds what the
   * call's first check needs. GetFileType and getsockopt, which a pipe
   * used to cost (one system call, and one or two device requests that a
   * pipe refuses), are asked only of what is not a pipe, and of pipe
   * handles opened without FILE_READ_ATTRIBUTES, which refuse the query
   * too and are recognised below as before. */
  if (anypoll__sys_pipe_local_info(h, &item->u.pipe.info)) {
    set_pipe_access(item);
    item->u.pipe.have_info = 1;
    item->u.pipe.askable = 1;
    item->u.pipe.message =
        item->u.pipe.info.NamedPipeType == ANYPOLL_FILE_PIPE_MESSAGE_TYPE;
    return;
  }
  /* Sockets next: for a socket of this process Winsock answers SO_TYPE
   * from its own context, so GetFileType (a system call) is left to what
   * is neither. One try only here: the Wine quirk below is handled when
   * GetFileType then says "pipe". */
  int socktype, sock_error;
  if (anypoll__sys_socket_type(h, &socktype, &sock_error) == 0) {
    item->kind = ANYPOLL_KIND_SOCKET;
    item->u.socket.stream = socktype == SOCK_STREAM;
    return;
  }
  DWORD type_error;
  DWORD type = anypoll__sys_file_type(h, &type_error);
  switch (type) {
  case FILE_TYPE_PIPE:
    if (handle_is_socket(h, &socktype)) {
      item->kind = ANYPOLL_KIND_SOCKET;
      item->u.socket.stream = socktype == SOCK_STREAM;
    } else {
      set_pipe_access(item);
    }
    return;
  case FILE_TYPE_CHAR:
    /* Consoles are recognised by asking them, not by the handle's bit
     * pattern, which stopped identifying them in Windows 8. */
    switch (anypoll__sys_console_kind(h)) {
    case 1:
      item->kind = ANYPOLL_KIND_CONSOLE_IN;
      break;
    case 0:
      item->kind = ANYPOLL_KIND_CONSOLE_OUT;
      break;
    default:
      item->kind = ANYPOLL_KIND_FILE;
      break;
    }
    return;
  case FILE_TYPE_DISK:
    item->kind = ANYPOLL_KIND_FILE;
    return;
  default:
    /* FILE_TYPE_UNKNOWN is also what a closed handle gives; only a handle
     * that answered without error is a device we can treat as a file. */
    item->kind = type_error == NO_ERROR ? ANYPOLL_KIND_FILE
                                        : ANYPOLL_KIND_INVALID;
    return;
  }
}

void anypoll__classify(SOCKET fd, struct anypoll__item *item) {
  item->handle = INVALID_HANDLE_VALUE;
  ZeroMemory(&item->u, sizeof item->u);
  item->recheck = 0;
  /* The pollfd member is a SOCKET, so a caller's -1 arrives as
   * INVALID_SOCKET: any value that is negative as a signed number means
   * "ignore this entry", as in POSIX. */
  if ((intptr_t)fd < 0) {
    item->kind = ANYPOLL_KIND_IGNORED;
    return;
  }
  item->kind = ANYPOLL_KIND_INVALID;
  if (fd > INT32_MAX)
    return;
  /* -1 (EBADF) for descriptors that are not open, and -2 for 0..2 when the
   * process has no standard handle. */
  intptr_t os = anypoll__sys_os_handle((int)fd);
  if (os == -1 || os == -2 || os == 0)
    return;
  HANDLE h = (HANDLE)os;
  item->handle = h;

  struct anypoll__gate gate;
  if (anypoll__gate_begin(&gate, h)) {
    /* A read of ours is pending on the file object: it is a synchronous
     * pipe, and asking it anything but its access would wait for the read. */
    set_pipe_access(item);
    item->u.pipe.mode_known = 1;
    return;
  }
  classify_handle(h, item);
  anypoll__gate_end(&gate);
}
