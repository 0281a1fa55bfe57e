/* SPDX-License-Identifier: MIT */
/* The drop-in header after <winsock2.h> (and <windows.h>): a program
 * written for POSIX poll() compiles and runs unchanged. */
#ifdef _WIN32
#  include <winsock2.h>
#  include <windows.h>
#  include <fcntl.h>
#  include <io.h>
#  define pipe(p) _pipe((p), 4096, _O_BINARY)
#  define write _write
#else
#  include <unistd.h>
#endif
#include <anypoll/poll.h>
#include <stdio.h>

int dropin_other_order(void);
int dropin_windows_first(void);
int dropin_poll_uses(void);

int main(void) {
  int p[2];
  if (pipe(p) != 0)
    return 1;
  if (write(p[1], "x", 1) != 1)
    return 1;
  struct pollfd fds[1];
  nfds_t n = 1;
  fds[0].fd = p[0];
  fds[0].events = POLLIN;
  int r = poll(fds, n, INFTIM);
  if (r != 1 || fds[0].revents != POLLIN) {
    fprintf(stderr, "poll gave %d, revents %#x\n", r, fds[0].revents);
    return 1;
  }
  if (dropin_other_order() != 0 || dropin_windows_first() != 0 ||
      dropin_poll_uses() != 0)
    return 1;
  puts("drop-in poll: ok");
  return 0;
}
