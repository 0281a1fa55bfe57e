/* SPDX-License-Identifier: MIT */
/* The native POSIX backend: the kernel's own poll(), which is the reference
 * every other backend is checked against. */
#include <errno.h>
#include <limits.h>
#include <sys/resource.h>

#include "posix.h"

ANYPOLL__INTERNAL
int anypoll__posix_poll(struct pollfd *fds, anypoll_nfds_t nfds,
                        int timeout_ms) {
  /* The kernel fails nfds above RLIMIT_NOFILE with EINVAL before it reads
   * the array, but takes nfds as 32 bits (2^32 + 1 would become 1), and
   * instrumentation such as ASan's reads the array first. So the limit is
   * checked here, before anything is read; below 64 entries, where no
   * ordinary limit is, the kernel's own check is left to stand rather than
   * adding a system call to every small call. */
  if (nfds > 64) {
    struct rlimit rl;
    if (nfds > UINT_MAX ||
        (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
         nfds > rl.rlim_cur)) {
      errno = EINVAL;
      return -1;
    }
  }
  /* POSIX gives only -1 as "forever"; Linux accepts any negative value, but
   * other kernels may reject it with EINVAL. */
  return poll(fds, nfds, timeout_ms < 0 ? -1 : timeout_ms);
}
