/* SPDX-License-Identifier: MIT */
/* anypoll_read, anypoll_write and anypoll_close on POSIX: read(), write()
 * and close(). They exist for Windows, where an anypoll_pipe read end is
 * opened for overlapped I/O and the C runtime's _read cannot read it, and
 * where a socket wrapped in a descriptor cannot be closed with _close
 * (src/win32/rw.c); a program that uses them reads, writes and closes the
 * same way on every platform. The count is
 * an int, as _read's is: more than INT_MAX is EINVAL on both, as is a
 * NULL buffer with a count. */
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "posix.h"

/* A NULL buffer is refused before the call: read() on an empty pipe
 * would block first and fail with EFAULT only once data came. */
int anypoll_read(int fd, void *buf, unsigned len) {
  if (len > INT_MAX || (buf == NULL && len > 0)) {
    errno = EINVAL;
    return -1;
  }
  return (int)read(fd, buf, len);
}

int anypoll_write(int fd, const void *buf, unsigned len) {
  if (len > INT_MAX || (buf == NULL && len > 0)) {
    errno = EINVAL;
    return -1;
  }
  return (int)write(fd, buf, len);
}

/* A process descriptor's entry (proc.c) is forgotten before the number
 * is closed, so that no other thread can be given the number meanwhile. */
int anypoll_close(int fd) {
  anypoll__proc_forget(fd);
  return close(fd);
}
