/* SPDX-License-Identifier: MIT */
/* anypoll_pipe on Windows. The C runtime's _read and _write call ReadFile
 * and WriteFile with no OVERLAPPED, and Microsoft documents that on a
 * handle opened with FILE_FLAG_OVERLAPPED such a call "can incorrectly
 * report that the read operation is complete" (ReadFile, lpOverlapped):
 * the call waits on the file object, which every request on it signals
 * and resets, including the set's own zero-byte read. A pipe whose ends
 * behave for _read and _write as a _pipe() pipe's do must therefore be
 * synchronous, and the set waits on its read end with a parked helper
 * (docs/windows-design.md, "anypoll_pipe"). What it adds to _pipe: the
 * ends are not inherited (close-on-exec, as on POSIX), in binary mode,
 * with a 64 KiB buffer, the Linux default. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>

#include "win.h"

int anypoll_pipe(int fds[2]) {
  if (fds == NULL) {
    errno = EFAULT;
    return -1;
  }
  return _pipe(fds, 65536, _O_BINARY | _O_NOINHERIT);
}
