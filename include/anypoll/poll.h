/* SPDX-License-Identifier: MIT */
/* Drop-in <poll.h>: include this instead of <poll.h> and a program written
 * for POSIX poll() compiles unchanged on Windows, where poll is a macro
 * for the name anypoll_poll. On POSIX it is <poll.h> plus anypoll as well.
 *
 * It may be included before or after <winsock2.h>. It must not be mixed
 * with code that calls the real poll() in the same translation unit. */
#ifndef ANYPOLL_POLL_H
#define ANYPOLL_POLL_H

#include "../anypoll.h"

#ifdef _WIN32
/* Winsock has struct pollfd and the constants but no nfds_t or INFTIM. */
#  ifndef ANYPOLL_NO_NFDS_T
typedef anypoll_nfds_t nfds_t;
#  endif
/* Object-like, as gnulib's replacement headers define theirs: poll is then
 * a name for anypoll_poll everywhere, so &poll, a function pointer member
 * named poll (declared and called through ops->poll) and a data member of
 * that name all work; a function-like macro would rename calls only. */
#  undef poll
#  define poll anypoll_poll
#endif

/* "Wait forever", from the BSDs; glibc has none. */
#ifndef INFTIM
#  define INFTIM (-1)
#endif

#endif /* ANYPOLL_POLL_H */
