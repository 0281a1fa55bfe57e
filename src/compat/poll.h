/* SPDX-License-Identifier: MIT */
/* poll() with the interface of gnulib's and git's compat/poll/poll.h, done by
 * anypoll. With poll.c beside it, this replaces a project's compat/poll
 * (or gnulib's poll module) as it stands: same struct, same bit values, same
 * prototype, so nothing else in the program changes.
 *
 * Windows: struct pollfd { int fd; short events; short revents; } where fd
 * is a C runtime descriptor, the POLL* values of the POSIX systems (POLLIN
 * 0x1 ... POLLWRBAND 0x200), nfds_t unsigned long, and
 * int poll(struct pollfd *, nfds_t, int).
 *
 * Winsock (Vista and later) has a struct pollfd and POLL* macros of its own,
 * with a SOCKET fd and other values. This header includes <winsock2.h>
 * itself, before its own definitions, so that it works whether the program
 * includes <winsock2.h> before it or after it (the second inclusion is then
 * empty); Winsock's POLL* give way to the ones below, and its struct stays
 * reachable as WSAPOLLFD while `struct pollfd` names this one (a macro
 * renames the tag, as gnulib's header does on Vista).
 *
 * Elsewhere: the system's <sys/poll.h>, whose layout and values on Linux are
 * the same as above, and poll() becomes rpl_poll (gnulib's name for a
 * replaced poll), anypoll's POSIX backend. */
#ifndef ANYPOLL_COMPAT_POLL_H
#define ANYPOLL_COMPAT_POLL_H

#ifdef _WIN32
/* ANYPOLL_WINSOCK2_INCLUDE: tools/amalgamate.py puts here the lines of
 * include/anypoll.h that include <winsock2.h> (quietly after <windows.h>),
 * so that they are written once. */

/* Winsock declares struct pollfd together with POLLRDNORM (_WIN32_WINNT
 * 0x0600 and later); the tag is then taken, so this header's struct gets
 * another one, and every later `struct pollfd` of the program means it. */
#  ifdef POLLRDNORM
#    undef pollfd
#    define pollfd anypoll_compat_pollfd
#  endif
#  undef POLLIN
#  undef POLLPRI
#  undef POLLOUT
#  undef POLLERR
#  undef POLLHUP
#  undef POLLNVAL
#  undef POLLRDNORM
#  undef POLLRDBAND
#  undef POLLWRNORM
#  undef POLLWRBAND

#  define POLLIN     0x0001 /* data to read (normal or priority band) */
#  define POLLPRI    0x0002 /* urgent data to read */
#  define POLLOUT    0x0004 /* writing will not block */
#  define POLLERR    0x0008 /* an error (reported, never asked for) */
#  define POLLHUP    0x0010 /* hung up (reported, never asked for) */
#  define POLLNVAL   0x0020 /* not an open descriptor (reported) */
#  define POLLRDNORM 0x0040 /* normal data to read */
#  define POLLRDBAND 0x0080 /* priority band data to read */
#  define POLLWRNORM 0x0100 /* same as POLLOUT */
#  define POLLWRBAND 0x0200 /* priority band data may be written */

struct pollfd {
  int fd;        /* a C runtime descriptor; negative: entry ignored */
  short events;  /* what to wait for */
  short revents; /* what happened */
};

typedef unsigned long nfds_t;

/* "Wait forever", where POSIX's name space rules allow the extra name. */
#  if !defined(INFTIM) && !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE)
#    define INFTIM (-1)
#  endif

#else /* !_WIN32 */
#  include <sys/poll.h>
/* glibc shows these four only to X/Open programs; gnulib's header has them
 * always. Their values are the Linux kernel's. */
#  if defined(__linux__) && !defined(POLLRDNORM)
#    define POLLRDNORM 0x0040
#    define POLLRDBAND 0x0080
#    define POLLWRNORM 0x0100
#    define POLLWRBAND 0x0200
#  endif
#  undef poll
#  define poll rpl_poll
#endif /* _WIN32 */

#ifdef __cplusplus
extern "C" {
#endif
extern int poll(struct pollfd *fds, nfds_t nfds, int timeout);
#ifdef __cplusplus
}
#endif

#endif /* ANYPOLL_COMPAT_POLL_H */
