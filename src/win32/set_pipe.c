/* anypoll_pipe on Windows, for now: a C runtime pipe (_pipe) in binary
 * mode whose handles are not inherited by child processes, as POSIX's is
 * close-on-exec. Its ends are synchronous handles, so a set waits on them
 * as on any _pipe() pipe; an overlapped-capable pipe, which a set could
 * wait on without a helper thread, is to replace this file. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>

#include "win.h"

/* 64 KiB, the size of a Linux pipe's buffer. */
#define ANYPOLL_PIPE_SIZE 65536

int anypoll_pipe(int fds[2]) {
  if (fds == NULL) {
    errno = EFAULT;
    return -1;
  }
  return _pipe(fds, ANYPOLL_PIPE_SIZE, _O_BINARY | _O_NOINHERIT);
}
