/* SPDX-License-Identifier: MIT */
/* poll.h first, then <winsock2.h>, <windows.h> and the C runtime headers:
 * the Windows headers must neither clash with poll.h's struct pollfd nor
 * bring Winsock's POLL* values back. */
#include "poll.h"
#ifdef _WIN32
#  include <winsock2.h>
#  include <ws2tcpip.h>
#  include <windows.h>
#  include <io.h>
#endif
#include "consumer.h"

#define CC_ORDER cc_compat_first
#define CC_NAME "poll.h first"
#include "checks.inc"
