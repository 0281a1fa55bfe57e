/* SPDX-License-Identifier: MIT */
/* What git's git-compat-util.h does on Windows with NO_POLL: Vista as the
 * target, <winsock2.h> and <windows.h>, then <poll.h> found through the
 * include path (-I compat/poll), under _POSIX_C_SOURCE as git's mingw
 * build sets it. <windows.h> without WIN32_LEAN_AND_MEAN would bring
 * winsock 1 along, so git defines it; so does this. */
#ifdef _WIN32
#  define _POSIX_C_SOURCE 1
#  ifndef _WIN32_WINNT
#    define _WIN32_WINNT 0x0600
#  endif
#  define WIN32_LEAN_AND_MEAN
#  include <winsock2.h>
#  include <windows.h>
#endif
#include <poll.h>
#include "consumer.h"

#ifdef _WIN32
/* git's poll.h leaves INFTIM out under _POSIX_C_SOURCE; so does this one. */
#  ifdef INFTIM
#    error "INFTIM defined under _POSIX_C_SOURCE"
#  endif
#endif

#define CC_ORDER cc_git_order
#define CC_NAME "git's order"
#include "checks.inc"
