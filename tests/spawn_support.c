/* SPDX-License-Identifier: MIT */
/* What the spawn cases share (spawn_support.h): the child program, starting
 * it, reading a pipe to its end, waiting for an exit. */
#include <errno.h>
#include <string.h>

#include "spawn_support.h"

#ifndef _WIN32
#  include <signal.h>
/* anypoll__spawn_use_reaper: the fallback of systems without pidfd_open. */
#  include "posix/posix.h"
#endif

int spawn_reaper(void) {
  return tp_spawn_mode != NULL && strcmp(tp_spawn_mode, "spawnreaper") == 0;
}

/* Called first by every case: the mode the runner asked for. */
void spawn_begin(void) {
#ifndef _WIN32
  anypoll__spawn_use_reaper = spawn_reaper();
  /* A write to a pipe whose reader has gone gives EPIPE, not a signal. */
  signal(SIGPIPE, SIG_IGN);
#endif
}

/* The child program's path; under Wine a Unix path, which Wine sees on
 * drive Z:. */
const char *child_path(void) {
#ifdef _WIN32
  static char win[1024];
  const char *path = TP_SPAWN_CHILD;
  size_t n = 0;
  if (path[0] == '/') {
    win[n++] = 'Z';
    win[n++] = ':';
  }
  for (const char *c = path; *c != '\0' && n + 1 < sizeof win; c++)
    win[n++] = *c == '/' ? '\\' : *c;
  win[n] = '\0';
  return win;
#else
  return TP_SPAWN_CHILD;
#endif
}

/* Starts the child with steps (NULL-terminated, without argv[0]). */
void spawn_child(const char *const *steps, int in, int out, int err,
                 int pipes[3], int *proc) {
  char *argv[64];
  int n = 0;
  argv[n++] = (char *)"spawn_child";
  for (; steps[n - 1] != NULL; n++) {
    ASSERT_LT(n, 63);
    argv[n] = (char *)steps[n - 1];
  }
  argv[n] = NULL;
  int stdio[3] = { in, out, err };
  pipes[0] = pipes[1] = pipes[2] = -7;
  *proc = -7;
  int r = anypoll_spawn(child_path(), argv, NULL, stdio, pipes, proc);
  if (r != 0)
    fprintf(stderr, "anypoll_spawn: %s\n", strerror(errno));
  ASSERT_EQ(r, 0);
  ASSERT_GE(*proc, 0);
  for (int i = 0; i < 3; i++) {
    if (stdio[i] == ANYPOLL_STDIO_PIPE)
      ASSERT_GE(pipes[i], 0);
    else
      ASSERT_EQ(pipes[i], -1);
  }
}

/* Reads fd to its end (anypoll_read, as the parent's ends on Windows are
 * overlapped); returns the count, at most cap bytes kept. */
long read_to_end(int fd, char *buf, long cap) {
  long total = 0;
  char chunk[4096];
  for (;;) {
    int n = anypoll_read(fd, chunk, sizeof chunk);
    ASSERT_GE(n, 0);
    if (n == 0)
      return total;
    for (int i = 0; i < n && total + i < cap; i++)
      buf[total + i] = chunk[i];
    total += n;
  }
}

/* Waits on proc alone with anypoll_poll: the result and revents. A generous
 * timeout is the watchdog of a wait that must end (it never bounds speed). */
int poll_proc(int proc, int timeout_ms, short *revents) {
  struct pollfd p;
  tp_pfd(&p, proc, POLLIN);
  int r = anypoll_poll(&p, 1, timeout_ms);
  *revents = p.revents;
  return r;
}

void wait_exit(int proc, int expected) {
  short rev;
  ASSERT_EQ(poll_proc(proc, WATCHDOG_MS, &rev), 1);
  ASSERT_EQ(rev, POLLIN);
  int status = -1;
  ASSERT_EQ(anypoll_proc_wait(proc, &status), 0);
  ASSERT_EQ(status, expected);
  /* A second call gives the same status. */
  status = -1;
  ASSERT_EQ(anypoll_proc_wait(proc, &status), 0);
  ASSERT_EQ(status, expected);
}

void check_pattern(const char *buf, long n, long offset) {
  for (long k = 0; k < n; k++)
    if ((unsigned char)buf[k] != (unsigned char)((offset + k) % 251)) {
      fprintf(stderr, "byte %ld is %d\n", offset + k, (unsigned char)buf[k]);
      ASSERT(!"pattern");
    }
}
