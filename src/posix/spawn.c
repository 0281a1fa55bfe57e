/* SPDX-License-Identifier: MIT */
/* anypoll_spawn on POSIX (issue 36); the process descriptor is proc.c's.
 *
 * The child is started with posix_spawnp: it searches PATH as execvp does
 * and reports a failed exec (ENOENT, EACCES, E2BIG) as its result (glibc
 * since 2.24, musl, the BSDs, macOS), and glibc and musl start it with
 * vfork-like speed. Every descriptor made here is close-on-exec from its
 * creation (anypoll_pipe, O_CLOEXEC, F_DUPFD_CLOEXEC), so a child started
 * by any thread gets only the three streams its file actions name, each
 * dup2'ed into place (dup2 clears close-on-exec on the copy). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "posix.h"

extern char **environ;

static void close_all(int *fds, int n) {
  int saved = errno;
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0) {
      close(fds[i]);
      fds[i] = -1;
    }
  errno = saved;
}

/* Starts the child: 0 and *pid, or -1 with errno. child[i] is what the
 * child gets as stream i (-1: the parent's own). */
static int spawn_start(const char *file, char *const argv[],
                       char *const envp[], const int child[3], pid_t *pid) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  int err = posix_spawn_file_actions_init(&fa);
  if (err != 0) {
    errno = err;
    return -1;
  }
  err = posix_spawnattr_init(&attr);
  if (err != 0) {
    posix_spawn_file_actions_destroy(&fa);
    errno = err;
    return -1;
  }
  for (int i = 0; i < 3 && err == 0; i++)
    if (child[i] >= 0)
      err = posix_spawn_file_actions_adddup2(&fa, child[i], i);
  /* The child starts with no signal blocked and every signal's default
   * action, whatever the parent ignores or blocks (a parent that ignores
   * SIGPIPE would otherwise hand that on to a `cat` it runs). */
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  if (err == 0)
    err = posix_spawnattr_setsigmask(&attr, &none);
  if (err == 0)
    err = posix_spawnattr_setsigdefault(&attr, &all);
  if (err == 0)
    err = posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (err == 0)
    err = posix_spawnp(pid, file, &fa, &attr, argv,
                       envp != NULL ? envp : environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) {
    errno = err;
    return -1;
  }
  return 0;
}

int anypoll_spawn(const char *file, char *const argv[], char *const envp[],
                  const int stdio[3], int pipes[3], int *proc) {
  if (anypoll__spawn_args_ok(file, argv, stdio, pipes, proc) != 0)
    return -1;
  for (int i = 0; i < 3; i++) {
    if (stdio[i] >= 0 && fcntl(stdio[i], F_GETFD) == -1) {
      errno = EBADF;
      return -1;
    }
  }
  /* mine: every descriptor made here (the parent's ends first); child[i]:
   * what the child gets as stream i. Whatever goes into a child's stream
   * is first moved to a number above 2, so that no dup2 into 0-2 can
   * overwrite the source of a later one. */
  int mine[10], parent[3] = { -1, -1, -1 }, child[3] = { -1, -1, -1 };
  int nmine = 0, null_fd = -1;
  for (int i = 0; i < 10; i++)
    mine[i] = -1;
  for (int i = 0; i < 3; i++) {
    int src = -1;
    if (stdio[i] == ANYPOLL_STDIO_PIPE) {
      int p[2];
      if (anypoll_pipe(p) != 0)
        goto fail;
      parent[i] = i == 0 ? p[1] : p[0];
      src = i == 0 ? p[0] : p[1];
      mine[nmine++] = parent[i];
      mine[nmine++] = src;
    } else if (stdio[i] == ANYPOLL_STDIO_NULL) {
      if (null_fd < 0) {
        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0)
          goto fail;
        mine[nmine++] = null_fd;
      }
      src = null_fd;
    } else if (stdio[i] >= 0) {
      src = stdio[i];
    }
    if (src >= 0 && src < 3) {
      src = fcntl(src, F_DUPFD_CLOEXEC, 3);
      if (src < 0)
        goto fail;
      mine[nmine++] = src;
    }
    child[i] = src;
  }
  pid_t pid;
  if (spawn_start(file, argv, envp, child, &pid) != 0)
    goto fail;
  /* The child has its copies: the parent keeps only its own ends. */
  for (int i = 0; i < nmine; i++)
    if (mine[i] != parent[0] && mine[i] != parent[1] && mine[i] != parent[2])
      close(mine[i]);
  nmine = 0;
  for (int i = 0; i < 3; i++)
    if (parent[i] >= 0)
      mine[nmine++] = parent[i];
  int fd;
  if (anypoll__proc_new(pid, &fd) != 0) {
    /* Nothing may stay behind, the child included: end it and reap it. */
    int saved = errno;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
    errno = saved;
    goto fail;
  }
  for (int i = 0; i < 3; i++)
    pipes[i] = parent[i];
  *proc = fd;
  return 0;
fail:
  close_all(mine, nmine);
  return -1;
}

