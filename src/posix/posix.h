/* SPDX-License-Identifier: MIT */
/* Declarations shared by the POSIX backend files. */
#ifndef ANYPOLL_POSIX_H
#define ANYPOLL_POSIX_H

#include "../internal.h"

ANYPOLL__INTERNAL
anypoll__poll_fn anypoll__posix_poll;
ANYPOLL__INTERNAL
anypoll__poll_fn anypoll__posix_select;

/* Test hook (select.c): when set, called after each round of the select
 * backend's loop that found nothing, before the next select(). */
ANYPOLL__INTERNAL_DATA void (*volatile anypoll__test_select_between_rounds)(void);

#endif
