/* SPDX-License-Identifier: MIT */
/* Disk files, NUL and character devices other than consoles: always ready,
 * as POSIX specifies for regular files. */
#include "win.h"

short anypoll__file_check(const struct anypoll__item *item, short events) {
  (void)item;
  return (short)(anypoll__readable_bits(events) | (events & POLLOUT));
}
