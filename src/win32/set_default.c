/* SPDX-License-Identifier: MIT */
/* The watch set's default backend on Windows: the I/O completion port
 * (set.c). */
#include "set_win.h"

ANYPOLL__INTERNAL const struct anypoll__set_backend
    anypoll__set_default_backend = {
      "iocp", anypoll__set_iocp_create, anypoll__set_iocp_destroy,
      anypoll__set_iocp_ctl, anypoll__set_iocp_wait
    };
