/* Win32 error codes to errno, in one table. */
#include <errno.h>

#include "win.h"

static const struct {
  DWORD win;
  int posix;
} error_map[] = {
  { ERROR_NOT_ENOUGH_MEMORY, ENOMEM },
  { ERROR_OUTOFMEMORY, ENOMEM },
  { ERROR_NO_SYSTEM_RESOURCES, EAGAIN },
  { ERROR_TOO_MANY_OPEN_FILES, EMFILE },
  { ERROR_INVALID_HANDLE, EBADF },
  { ERROR_INVALID_PARAMETER, EINVAL },
  { ERROR_ACCESS_DENIED, EACCES },
  { ERROR_BROKEN_PIPE, EPIPE },
  { ERROR_NO_DATA, EPIPE },
  { ERROR_OPERATION_ABORTED, EINTR },
  { ERROR_CALL_NOT_IMPLEMENTED, ENOSYS },
  { ERROR_NOT_SUPPORTED, ENOSYS },
  { WSAENOBUFS, ENOMEM },
  { WSAEINVAL, EINVAL },
  { WSAENOTSOCK, EBADF },
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
