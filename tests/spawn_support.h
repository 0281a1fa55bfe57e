/* SPDX-License-Identifier: MIT */
/* What the spawn cases (test_spawn.c, test_spawn_io.c) share, defined in
 * spawn_support.c. */
#ifndef ANYPOLL_SPAWN_SUPPORT_H
#define ANYPOLL_SPAWN_SUPPORT_H

#include "test.h"

/* The watchdog of a wait that must end (it never bounds speed). */
#define WATCHDOG_MS 120000

/* Whether the runner asked for the POSIX fallback ("spawnreaper"). */
int spawn_reaper(void);
/* Called first by every case: the mode the runner asked for. */
void spawn_begin(void);
/* The child program's path (under Wine a Unix path, seen on drive Z:). */
const char *child_path(void);
/* Starts the child with steps (NULL-terminated, without argv[0]) and the
 * stdio values in, out, err; asserts that it started. */
void spawn_child(const char *const *steps, int in, int out, int err,
                 int pipes[3], int *proc);
/* Reads fd to its end with anypoll_read; the count, at most cap kept. */
long read_to_end(int fd, char *buf, long cap);
/* anypoll_poll on proc alone: the result, and its revents. */
int poll_proc(int proc, int timeout_ms, short *revents);
/* Waits for POLLIN on proc, then asserts its status (twice). */
void wait_exit(int proc, int expected);
/* Asserts that n bytes at offset follow the child's "write" pattern. */
void check_pattern(const char *buf, long n, long offset);

#endif
