/* Declarations shared by the POSIX backend files. */
#ifndef ANYPOLL_POSIX_H
#define ANYPOLL_POSIX_H

#include "../internal.h"

ANYPOLL__INTERNAL
anypoll__poll_fn anypoll__posix_poll;
ANYPOLL__INTERNAL
anypoll__poll_fn anypoll__posix_select;

#endif
