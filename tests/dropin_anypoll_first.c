/* SPDX-License-Identifier: MIT */
/* The drop-in header before <winsock2.h> and <windows.h>. */
#include <anypoll/poll.h>
#ifdef _WIN32
#  include <winsock2.h>
#  include <windows.h>
#endif

int dropin_other_order(void);

int dropin_other_order(void) {
  struct pollfd fd;
  fd.fd = -1;
  fd.events = POLLIN;
  fd.revents = 1;
  return poll(&fd, 1, 0) == 0 && fd.revents == 0 ? 0 : 1;
}
