/* SPDX-License-Identifier: MIT */
/* Win32 error codes to errno, in one table.
 *
 * Every errno that anypoll_poll can return is listed in include/anypoll.h
 * (and man/man3/anypoll_poll.3); a Win32 error reaches the caller only
 * through here, so the table maps onto that list and nothing else. What
 * has no closer meaning in it (an access or pipe error where no such error
 * is expected: a wait that failed) is EIO, "the system failed
 * unexpectedly", rather than an errno that poll() documents for something
 * else (EPIPE, EACCES and EMFILE never come out of poll()). */
#include <errno.h>

#include "win.h"

static const struct {
  DWORD win;
  int posix;
} error_map[] = {
  { ERROR_NOT_ENOUGH_MEMORY, ENOMEM },
  { ERROR_OUTOFMEMORY, ENOMEM },
  { WSAENOBUFS, ENOMEM },
  /* Out of kernel objects or handles: what EAGAIN stands for here. */
  { ERROR_NO_SYSTEM_RESOURCES, EAGAIN },
  { ERROR_TOO_MANY_OPEN_FILES, EAGAIN },
  /* A caller's handle in the wait set closed by another thread after the
   * call classified it. */
  { ERROR_INVALID_HANDLE, EBADF },
  { WSAENOTSOCK, EBADF },
  { ERROR_OPERATION_ABORTED, EINTR },
  { ERROR_CALL_NOT_IMPLEMENTED, ENOSYS },
  { ERROR_NOT_SUPPORTED, ENOSYS },
};

int anypoll__set_errno_win(DWORD error) {
  int e = EIO;
  for (size_t i = 0; i < sizeof error_map / sizeof error_map[0]; i++) {
    if (error_map[i].win == error) {
      e = error_map[i].posix;
      break;
    }
  }
  errno = e;
  return -1;
}
