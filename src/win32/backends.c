/* SPDX-License-Identifier: MIT */
/* The Windows backend table, and the primitives the historical strategies
 * use. */
#include <errno.h>

#include "win.h"

anypoll__poll_fn *anypoll__backend(int backend) {
  switch (backend) {
  case ANYPOLL_BACKEND_DEFAULT:
  case ANYPOLL_BACKEND_EVENT:
    return anypoll__win_event_poll;
  default:
    return NULL;
  }
}

int anypoll__check_now(struct pollfd *fds, anypoll_nfds_t nfds) {
  return anypoll__win_event_poll(fds, nfds, 0);
}

int anypoll__nap(int yield) {
  if (yield) {
    SwitchToThread();
    return 0;
  }
  /* Alertable, as git's compat/poll does: a queued APC ends the wait. */
  if (SleepEx(1, TRUE) == WAIT_IO_COMPLETION) {
    errno = EINTR;
    return -1;
  }
  return 0;
}

long long anypoll__now_us(void) {
  LARGE_INTEGER t, f;
  QueryPerformanceCounter(&t);
  QueryPerformanceFrequency(&f);
  return (long long)(t.QuadPart / f.QuadPart * 1000000 +
                     t.QuadPart % f.QuadPart * 1000000 / f.QuadPart);
}

/* A wild fds pointer would take an access violation on the first entry the
 * call touches; Linux's poll returns EFAULT instead. VirtualQuery answers
 * for a whole region of pages with the same state and protection, so an
 * array on the stack or in one heap block costs one call: a system call on
 * Windows, and answered inside the process under Wine (no wineserver
 * request: bench/requests-count counts none more). Pages must be committed
 * and writable (revents is written), and not guard pages. */
int anypoll__fds_accessible(const struct pollfd *fds, anypoll_nfds_t nfds) {
  if (nfds == 0 || nfds > ANYPOLL_MAX_NFDS)
    return 1; /* nothing touched; or EINVAL from the backend */
  uintptr_t at = (uintptr_t)fds;
  uintptr_t bytes = (uintptr_t)nfds * sizeof *fds;
  if (at + bytes < at)
    return 0;
  uintptr_t end = at + bytes;
  const DWORD writable = PAGE_READWRITE | PAGE_WRITECOPY |
                         PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY;
  while (at < end) {
    MEMORY_BASIC_INFORMATION info;
    if (VirtualQuery((const void *)at, &info, sizeof info) == 0)
      return 0;
    if (info.State != MEM_COMMIT || (info.Protect & writable) == 0 ||
        (info.Protect & (PAGE_GUARD | PAGE_NOACCESS)) != 0)
      return 0;
    uintptr_t region_end = (uintptr_t)info.BaseAddress + info.RegionSize;
    if (region_end <= at)
      return 0;
    at = region_end;
  }
  return 1;
}
