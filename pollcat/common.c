/* SPDX-License-Identifier: MIT */
/* What every portable file of pollcat uses and none of them calls back
 * into: the options as parsed (filled in by options.c's main) and the
 * messages. The bottom of pollcat's portable files (common.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

struct options opt = { 0, 0, ANYPOLL_BACKEND_DEFAULT, -1, -1, AF_UNSPEC, 0, NULL };

void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("pollcat: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  fflush(stderr);
  va_end(ap);
}

void usage_error(const char *fmt, const char *arg) {
  fputs("pollcat: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs(" (pollcat --help for usage)\n", stderr);
  exit(PC_EXIT_USAGE);
}
