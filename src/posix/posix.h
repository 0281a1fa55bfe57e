/* SPDX-License-Identifier: MIT */
/* Declarations shared by the POSIX backend files. */
#ifndef ANYPOLL_POSIX_H
#define ANYPOLL_POSIX_H

#include <sys/types.h>

#include "../internal.h"

ANYPOLL__INTERNAL
anypoll__poll_fn anypoll__posix_poll;
ANYPOLL__INTERNAL
anypoll__poll_fn anypoll__posix_select;

/* Test hook (select.c): when set, called after each round of the select
 * backend's loop that found nothing, before the next select(). */
ANYPOLL__INTERNAL_DATA void (*volatile anypoll__test_select_between_rounds)(void);

/* proc.c: a process descriptor for the child pid, registered: 0 and
 * *proc, or -1 with errno (EMFILE, ENOMEM, EAGAIN) and nothing made. */
ANYPOLL__INTERNAL
int anypoll__proc_new(pid_t pid, int *proc);
/* proc.c: anypoll_close calls it before closing fd, so that a process
 * descriptor's entry goes with it. */
ANYPOLL__INTERNAL
void anypoll__proc_forget(int fd);
/* Test switch (proc.c): nonzero makes anypoll_spawn use the fallback of
 * systems without pidfd_open (a reaper thread per child) on Linux too. */
ANYPOLL__INTERNAL_DATA int anypoll__spawn_use_reaper;

#endif
