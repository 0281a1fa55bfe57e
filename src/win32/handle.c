/* Works out what a C runtime descriptor refers to: the kind of handle
 * decides how its readiness is checked and waited for. */
#include <io.h>
#include <stdint.h>

#include "win.h"

/* NtQueryInformationFile(FileAccessInformation) is answered by the I/O
 * manager from the handle table, so unlike pipe queries it never waits
 * behind a pending synchronous read on the same file object. */
static ACCESS_MASK handle_access(HANDLE h) {
  IO_STATUS_BLOCK iosb;
  ACCESS_MASK access = 0;
  if (anypoll__nt.query_information_file(h, &iosb, &access, sizeof access,
                                         ANYPOLL_FILE_ACCESS_INFORMATION) < 0)
    return 0;
  return access;
}

int anypoll__handle_is_async(HANDLE h) {
  IO_STATUS_BLOCK iosb;
  ULONG mode = 0;
  if (anypoll__nt.query_information_file(h, &iosb, &mode, sizeof mode,
                                         ANYPOLL_FILE_MODE_INFORMATION) < 0)
    return 0;
  /* FILE_SYNCHRONOUS_IO_ALERT | FILE_SYNCHRONOUS_IO_NONALERT */
  return (mode & 0x30) == 0;
}

/* Wine 8 quirk: getsockopt() on a listening socket now and then fails with
 * WSAENOTSOCK while a connection is arriving (seen in about 1 of 60 runs of
 * the socket_listener_pending_connection test under the yield strategy,
 * which classifies the socket thousands of times); asked again at once, it
 * answers. A pipe fails every time, so only a second failure makes a
 * handle "not a socket". This costs a pipe one more call per
 * classification. */
static int handle_is_socket(HANDLE h, int *type) {
  for (int attempt = 0; attempt < 2; attempt++) {
    int len = sizeof *type;
    if (getsockopt((SOCKET)h, SOL_SOCKET, SO_TYPE, (char *)type, &len) == 0)
      return 1;
    if (WSAGetLastError() != WSAENOTSOCK)
      return 0;
  }
  return 0;
}

void anypoll__classify(SOCKET fd, struct anypoll__item *item) {
  item->handle = INVALID_HANDLE_VALUE;
  item->readable = item->writable = item->async = item->stream = 0;
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
  /* msvcrt returns -1 (EBADF) for descriptors that are not open, and -2
   * for 0..2 when the process has no standard handle. */
  intptr_t os = _get_osfhandle((int)fd);
  if (os == -1 || os == -2 || os == 0)
    return;
  HANDLE h = (HANDLE)os;
  item->handle = h;

  DWORD type = GetFileType(h);
  DWORD mode;
  int socktype;
  switch (type) {
  case FILE_TYPE_PIPE:
    if (handle_is_socket(h, &socktype)) {
      item->kind = ANYPOLL_KIND_SOCKET;
      item->stream = socktype == SOCK_STREAM;
    } else {
      ACCESS_MASK access = handle_access(h);
      item->kind = ANYPOLL_KIND_PIPE;
      item->readable = (access & FILE_READ_DATA) != 0;
      item->writable = (access & FILE_WRITE_DATA) != 0;
    }
    return;
  case FILE_TYPE_CHAR:
    /* Consoles are recognised by asking them, not by the handle's bit
     * pattern, which stopped identifying them in Windows 8. */
    if (GetConsoleMode(h, &mode)) {
      DWORD pending;
      item->kind = GetNumberOfConsoleInputEvents(h, &pending)
                       ? ANYPOLL_KIND_CONSOLE_IN
                       : ANYPOLL_KIND_CONSOLE_OUT;
    } else {
      item->kind = ANYPOLL_KIND_FILE;
    }
    return;
  case FILE_TYPE_DISK:
    item->kind = ANYPOLL_KIND_FILE;
    return;
  default:
    /* FILE_TYPE_UNKNOWN is also what a closed handle gives; only a handle
     * that answered without error is a device we can treat as a file. */
    item->kind = GetLastError() == NO_ERROR ? ANYPOLL_KIND_FILE
                                            : ANYPOLL_KIND_INVALID;
    return;
  }
}
