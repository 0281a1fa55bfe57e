/* SPDX-License-Identifier: MIT */
/* anypoll_pipe on POSIX: pipe() with close-on-exec, set atomically with
 * pipe2() where the system has it, so that a child started by another
 * thread between the two calls cannot inherit the ends. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "posix.h"

#if defined(__linux__) || defined(__FreeBSD__) || defined(__NetBSD__) ||    \
    defined(__OpenBSD__) || defined(__DragonFly__)
/* glibc declares pipe2 only under _GNU_SOURCE, which the library does not
 * define (it builds with _DEFAULT_SOURCE, and dist/anypoll.c cannot define
 * it after the program's own includes). The declaration is the system's. */
int pipe2(int fds[2], int flags);

int anypoll_pipe(int fds[2]) {
  if (fds == NULL) {
    errno = EFAULT;
    return -1;
  }
  return pipe2(fds, O_CLOEXEC);
}
#else
int anypoll_pipe(int fds[2]) {
  if (fds == NULL) {
    errno = EFAULT;
    return -1;
  }
  if (pipe(fds) != 0)
    return -1;
  /* Not atomic: a fork and exec in another thread between pipe() and here
   * inherits the ends. Systems with pipe2() take the branch above. */
  if (fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
    int saved = errno;
    close(fds[0]);
    close(fds[1]);
    errno = saved;
    return -1;
  }
  return 0;
}
#endif
