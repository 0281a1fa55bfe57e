/* The default set backend on Windows, for now: the portable one
 * (src/set_poll.c). The I/O completion port backend is to replace this
 * file with its own definition of anypoll__set_default_backend. */
#include "../set.h"

ANYPOLL__INTERNAL const struct anypoll__set_backend
    anypoll__set_default_backend = { "poll", anypoll__set_poll_create,
                                     anypoll__set_poll_destroy,
                                     anypoll__set_poll_ctl,
                                     anypoll__set_poll_wait };
