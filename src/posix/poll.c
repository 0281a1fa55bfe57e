/* The native POSIX backend: the kernel's own poll(), which is the reference
 * every other backend is checked against. */
#include <errno.h>
#include <limits.h>

#include "posix.h"

ANYPOLL__INTERNAL
int anypoll__posix_poll(struct pollfd *fds, anypoll_nfds_t nfds,
                        int timeout_ms) {
  /* Linux's system call takes nfds as 32 bits: 2^32 + 1 would become 1. */
  if (nfds > UINT_MAX) {
    errno = EINVAL;
    return -1;
  }
  /* POSIX gives only -1 as "forever"; Linux accepts any negative value, but
   * other kernels may reject it with EINVAL. */
  return poll(fds, nfds, timeout_ms < 0 ? -1 : timeout_ms);
}
