/* SPDX-License-Identifier: MIT */
/* The contract between the shared front end (src/anypoll.c) and the
 * platform backends. Nothing declared here is exported from the library. */
#ifndef ANYPOLL_INTERNAL_H
#define ANYPOLL_INTERNAL_H

#include "anypoll.h"

/* Linkage of the library's internal names. ANYPOLL__INTERNAL goes before
 * every declaration of an internal function and every definition of an
 * internal object, ANYPOLL__INTERNAL_DATA before the declarations of
 * internal objects in headers. In the library they give external linkage
 * (kept out of the shared library's exports by hidden visibility); the
 * one-file release dist/anypoll.c defines both as static, so a program that
 * compiles it in gets no anypoll__ symbols. */
#ifndef ANYPOLL__INTERNAL
#  define ANYPOLL__INTERNAL
#endif
#ifndef ANYPOLL__INTERNAL_DATA
#  define ANYPOLL__INTERNAL_DATA extern
#endif

/* A backend's poll. The front end has already checked the arguments:
 * fds is non-NULL whenever nfds > 0, and nfds is within the platform limit.
 * A backend must fill in every entry's revents (0 for negative fds), return
 * the number of entries with non-zero revents, and on failure return -1 with
 * errno set and leave no helper, handle or memory behind. */
typedef int anypoll__poll_fn(struct pollfd *fds, anypoll_nfds_t nfds,
                             int timeout_ms);

/* The platform's backend for each enum anypoll_backend value but sleep1 and
 * yield (the front end takes those from src/legacy.c), or NULL where that
 * backend does not exist on this platform. Provided by exactly one of
 * src/posix/backends.c or src/win32/backends.c. */
ANYPOLL__INTERNAL
anypoll__poll_fn *anypoll__backend(int backend);

/* Whether the nfds entries at fds are all in memory the caller may read and
 * write. Windows: the pages are asked of the memory manager (VirtualQuery),
 * so that a wild pointer gives EFAULT as on Linux instead of an access
 * violation. POSIX: always 1 (the kernel's poll reports EFAULT itself). */
ANYPOLL__INTERNAL
int anypoll__fds_accessible(const struct pollfd *fds, anypoll_nfds_t nfds);

/* The historical strategies (src/legacy.c): check every entry without
 * waiting, and when nothing is ready either sleep 1 ms or yield the CPU,
 * then check again until the timeout. The platform supplies the two
 * primitives below. */
ANYPOLL__INTERNAL
int anypoll__legacy_sleep1(struct pollfd *fds, anypoll_nfds_t nfds,
                           int timeout_ms);
ANYPOLL__INTERNAL
int anypoll__legacy_yield(struct pollfd *fds, anypoll_nfds_t nfds,
                          int timeout_ms);

/* Checks every entry once without waiting, as a backend with timeout 0.
 * Returns the count of ready entries or -1 with errno. */
ANYPOLL__INTERNAL
int anypoll__check_now(struct pollfd *fds, anypoll_nfds_t nfds);

/* Sleeps about 1 ms (yield == 0) or gives up the rest of the time slice
 * (yield != 0). Returns 0, or -1 with errno EINTR when interrupted. */
ANYPOLL__INTERNAL
int anypoll__nap(int yield);

/* A monotonic clock in microseconds (QueryPerformanceCounter on Windows:
 * GetTickCount64 lags behind it, under Wine by up to a timer tick). */
ANYPOLL__INTERNAL
long long anypoll__now_us(void);

/* anypoll_spawn's checks common to every platform, made before anything
 * else: 0, or -1 with errno EINVAL (a NULL argument, an unknown stdio
 * value). src/anypoll.c. */
ANYPOLL__INTERNAL
int anypoll__spawn_args_ok(const char *file, char *const argv[],
                           const int stdio[3], const int *pipes,
                           const int *proc);

#endif /* ANYPOLL_INTERNAL_H */
