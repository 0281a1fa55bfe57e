/* SPDX-License-Identifier: MIT */
/* Starting a Windows child process for pollcat's test child pccat (its
 * --relay and --closed): the command line, anonymous pipes and
 * CreateProcess, as a plain Windows program does it. pollcat itself starts
 * its children with anypoll_spawn. */
#ifndef POLLCAT_WINPROC_H
#define POLLCAT_WINPROC_H

#include <windows.h>

/* The pipes to a child: 1 MiB, so that each copy moves more. */
#define PC_CHILD_PIPE_SIZE 1048576

/* An anonymous pipe whose child end is inheritable and whose other end,
 * ours, is not (only the child's ends may leak into it). ours_writes says
 * which end is ours. TRUE, or FALSE with GetLastError set. */
BOOL pc_win_pipe(HANDLE *read_end, HANDLE *write_end, int ours_writes);

/* Starts argv[0] with argv as its command line (quoted for the Microsoft
 * C runtime, CommandLineToArgvW) and in, out, err as its standard handles
 * (inheritable, or NULL for a stream the child does not get). Returns the
 * process handle, or NULL with GetLastError set. */
HANDLE pc_win_start(char **argv, HANDLE in, HANDLE out, HANDLE err);

#endif
