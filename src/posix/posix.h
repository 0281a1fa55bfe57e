/* Declarations shared by the POSIX backend files. */
#ifndef ANYPOLL_POSIX_H
#define ANYPOLL_POSIX_H

#include "../internal.h"

ANYPOLL__INTERNAL
anypoll__poll_fn anypoll__posix_poll;
/* To be marked ANYPOLL__INTERNAL too once src/posix/select.c defines it: a
 * static function declared but never defined breaks -Werror builds of
 * dist/anypoll.c. */
anypoll__poll_fn anypoll__posix_select;

#endif
