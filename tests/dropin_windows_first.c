/* SPDX-License-Identifier: MIT */
/* The drop-in header after a full <windows.h> (which brings winsock 1). */
#ifdef _WIN32
#  include <windows.h>
#endif
#include <anypoll/poll.h>

int dropin_windows_first(void);

int dropin_windows_first(void) {
  struct pollfd fd;
  fd.fd = -1;
  fd.events = POLLIN | POLLOUT;
  fd.revents = 1;
  return poll(&fd, 1, 0) == 0 && fd.revents == 0 ? 0 : 1;
}
