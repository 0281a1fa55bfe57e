/* SPDX-License-Identifier: MIT */
/* <winsock2.h> and <windows.h> first, then poll.h: the order of git's
 * git-compat-util.h and of gnulib's poll.c. Winsock's pollfd and POLL*
 * are already defined when poll.h comes. */
#ifdef _WIN32
#  ifndef _WIN32_WINNT
#    define _WIN32_WINNT 0x0600
#  endif
#  define WIN32_LEAN_AND_MEAN
#  include <winsock2.h>
#  include <windows.h>
#endif
#include "poll.h"
#include "consumer.h"

#ifdef _WIN32
/* Winsock's own struct stays reachable under its typedef. */
_Static_assert(sizeof(((WSAPOLLFD *)0)->fd) == sizeof(SOCKET),
               "WSAPOLLFD is Winsock's");
#endif

#define CC_ORDER cc_winsock_first
#define CC_NAME "winsock2.h first"
#include "checks.inc"
