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

#endif /* ANYPOLL_SPAWN_H */
