/* SPDX-License-Identifier: MIT */
/* The contract between spawn.c (anypoll_spawn, the process descriptor) and
 * cmdline.c (what CreateProcessW is given). */
#ifndef ANYPOLL_SPAWN_H
#define ANYPOLL_SPAWN_H

#include "win.h"

/* s in the ANSI code page as UTF-16 (malloc'd), or NULL with errno EINVAL
 * (not valid in that code page) or ENOMEM. */
ANYPOLL__INTERNAL
WCHAR *anypoll__spawn_widen(const char *s);
/* The program file names: *path (malloc'd) its full path, *batch whether
 * it is a .bat or .cmd. 0, or -1 with errno ENOENT, EACCES, EINVAL,
 * ENOMEM. */
ANYPOLL__INTERNAL
int anypoll__spawn_resolve(const char *file, WCHAR **path, int *batch);
/* The command line for argv (malloc'd), for a batch file through cmd.exe.
 * 0, or -1 with errno EINVAL (an argument that cannot reach the child
 * intact), E2BIG, ENOMEM. */
ANYPOLL__INTERNAL
int anypoll__spawn_cmdline(const WCHAR *path, int batch, char *const argv[],
                           WCHAR **line);
/* envp as a UTF-16 environment block (malloc'd). 0, or -1 with errno. */
ANYPOLL__INTERNAL
int anypoll__spawn_environment(char *const envp[], WCHAR **block);

/* ---- The process descriptor (spawn_proc.c) -------------------------------
 * One child: its descriptor (the read end of an anypoll_pipe pipe), the
 * pipe's write end, the process, the wait. */
struct proc {
  struct proc *next;
  int fd;          /* the descriptor: the pipe's read end */
  HANDLE read_end; /* its handle, which recognises the descriptor */
  HANDLE write_end; /* written once, when the child exits */
  HANDLE process;
  PTP_WAIT wait; /* the thread-pool wait, or NULL */
  DWORD pid;
};
/* A thread-pool wait whose callback writes p's byte (not yet set on the
 * process: SetThreadpoolWait), or NULL with GetLastError. */
ANYPOLL__INTERNAL
PTP_WAIT anypoll__spawn_proc_wait_new(struct proc *p);
/* Ends p's wait (waiting for its callback), closes its handles (the child
 * is not touched) and frees it; p is in no table. */
ANYPOLL__INTERNAL
void anypoll__spawn_proc_free(struct proc *p);
/* Puts p in the table: its descriptor is one from now on. */
ANYPOLL__INTERNAL
void anypoll__spawn_proc_add(struct proc *p);

#endif /* ANYPOLL_SPAWN_H */
