/* The native POSIX backend: the kernel's own poll(), which is the reference
 * every other backend is checked against. */
#include "posix.h"

ANYPOLL__INTERNAL
int anypoll__posix_poll(struct pollfd *fds, anypoll_nfds_t nfds,
                        int timeout_ms) {
  /* POSIX gives only -1 as "forever"; Linux accepts any negative value, but
   * other kernels may reject it with EINVAL. */
  return poll(fds, nfds, timeout_ms < 0 ? -1 : timeout_ms);
}
