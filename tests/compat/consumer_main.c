/* SPDX-License-Identifier: MIT */
/* Runs the checks of every include order; prints "compat poll: ok" when all
 * pass (the test's pass condition). */
#include <stdio.h>

#include "consumer.h"

int main(void) {
  struct cc_fds f;
  cc_make_fds(&f);
  int failed = cc_winsock_first(&f) + cc_compat_first(&f) + cc_git_order(&f);
  if (failed != 0) {
    printf("compat poll: %d checks failed\n", failed);
    return 1;
  }
  printf("compat poll: ok\n");
  return 0;
}
