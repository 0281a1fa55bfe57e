/* SPDX-License-Identifier: MIT */
/* anypoll_spawn and the process descriptor (issue 36), against the public
 * API only, natively and under Wine. The child is tests/spawn_child.c
 * (TP_SPAWN_CHILD, its path from the build). These cases run once
 * (TEST_CASE_SPAWN), not once per poll backend: the cases that wait on a
 * process descriptor in a set do it with both set backends themselves.
 * Natively they run a second time with the POSIX fallback for systems
 * without pidfd_open (backend "spawnreaper": a reaper thread per child). */
#include <errno.h>
#include <string.h>

#include "test.h"

#ifdef _WIN32
#  include <io.h>
#else
#  include <signal.h>
#  include <sys/wait.h>
#  include <unistd.h>
#endif

#ifndef _WIN32
/* anypoll__spawn_use_reaper: the fallback of systems without pidfd_open. */
#  include "posix/posix.h"
#endif

static int spawn_reaper(void) {
  return tp_spawn_mode != NULL && strcmp(tp_spawn_mode, "spawnreaper") == 0;
}

/* Called first by every case: the mode the runner asked for. */
static void spawn_begin(void) {
#ifndef _WIN32
  anypoll__spawn_use_reaper = spawn_reaper();
  /* A write to a pipe whose reader has gone gives EPIPE, not a signal. */
  signal(SIGPIPE, SIG_IGN);
#endif
}

/* The child program's path; under Wine a Unix path, which Wine sees on
 * drive Z:. */
static const char *child_path(void) {
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
static void spawn_child(const char *const *steps, int in, int out, int err,
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
static long read_to_end(int fd, char *buf, long cap) {
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
static int poll_proc(int proc, int timeout_ms, short *revents) {
  struct pollfd p;
  tp_pfd(&p, proc, POLLIN);
  int r = anypoll_poll(&p, 1, timeout_ms);
  *revents = p.revents;
  return r;
}

#define WATCHDOG_MS 120000

static void wait_exit(int proc, int expected) {
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

/* What must not change across a failed spawn (or a finished test). */
struct snapshot {
  long descriptors, probe;
  int threads;
};
static void snap(struct snapshot *s) {
  s->descriptors = tp_descriptor_count();
  s->probe = tp_handle_probe();
  s->threads = tp_thread_count();
}
static void assert_unchanged(const struct snapshot *before) {
  struct snapshot now;
  snap(&now);
  ASSERT_EQ(now.descriptors, before->descriptors);
  ASSERT_EQ(now.probe, before->probe);
  ASSERT_EQ(now.threads, before->threads);
#ifndef _WIN32
  /* No child left behind either, not even a zombie. */
  ASSERT_EQ(waitpid(-1, NULL, WNOHANG), -1);
  ASSERT_EQ(errno, ECHILD);
#endif
}

static void expect_spawn_error(const char *file, char *const argv[],
                               const int stdio[3], int err) {
  int pipes[3] = { -7, -7, -7 }, proc = -7;
  errno = 0;
  ASSERT_EQ(anypoll_spawn(file, argv, NULL, stdio, pipes, &proc), -1);
  if (errno != err)
    fprintf(stderr, "errno %d (%s), expected %d\n", errno, strerror(errno),
            err);
  ASSERT_EQ(errno, err);
}

TEST(spawn_bad_arguments_einval) {
  spawn_begin();
  struct snapshot before;
  snap(&before);
  char *argv[] = { (char *)"spawn_child", NULL };
  const int pipes3[3] = { ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
                          ANYPOLL_STDIO_PIPE };
  int pipes[3], proc;
  expect_spawn_error(NULL, argv, pipes3, EINVAL);
  expect_spawn_error(child_path(), NULL, pipes3, EINVAL);
  expect_spawn_error(child_path(), argv, NULL, EINVAL);
  const int unknown[3] = { ANYPOLL_STDIO_PIPE, -4, ANYPOLL_STDIO_PIPE };
  expect_spawn_error(child_path(), argv, unknown, EINVAL);
  const int unknown2[3] = { ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE, -1000 };
  expect_spawn_error(child_path(), argv, unknown2, EINVAL);
  errno = 0;
  ASSERT_EQ(anypoll_spawn(child_path(), argv, NULL, pipes3, NULL, &proc), -1);
  ASSERT_EQ(errno, EINVAL);
  errno = 0;
  ASSERT_EQ(anypoll_spawn(child_path(), argv, NULL, pipes3, pipes, NULL), -1);
  ASSERT_EQ(errno, EINVAL);
  assert_unchanged(&before);
}

TEST(spawn_not_found_enoent) {
  spawn_begin();
  struct snapshot before;
  snap(&before);
  const int pipes3[3] = { ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
                          ANYPOLL_STDIO_PIPE };
  char *argv[] = { (char *)"x", NULL };
  /* Searched in PATH, and with a directory. */
  expect_spawn_error("anypoll-no-such-program-3f9a", argv, pipes3, ENOENT);
#ifdef _WIN32
  expect_spawn_error("Z:\\anypoll-no-such-dir\\prog.exe", argv, pipes3,
                     ENOENT);
#else
  expect_spawn_error("/anypoll-no-such-dir/prog", argv, pipes3, ENOENT);
#endif
  assert_unchanged(&before);
}

TEST(spawn_bad_stdio_ebadf) {
  spawn_begin();
  struct snapshot before;
  snap(&before);
  char *argv[] = { (char *)"spawn_child", NULL };
  int unused = tp_unused_fd();
  const int bad_out[3] = { ANYPOLL_STDIO_PIPE, unused, ANYPOLL_STDIO_PIPE };
  expect_spawn_error(child_path(), argv, bad_out, EBADF);
  const int bad_in[3] = { unused, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_NULL };
  expect_spawn_error(child_path(), argv, bad_in, EBADF);
  assert_unchanged(&before);
}

TEST(spawn_bad_proc_ebadf) {
  spawn_begin();
  int status = 0;
  int unused = tp_unused_fd();
  errno = 0;
  ASSERT_EQ(anypoll_proc_wait(unused, &status), -1);
  ASSERT_EQ(errno, EBADF);
  errno = 0;
  ASSERT_EQ(anypoll_proc_kill(unused), -1);
  ASSERT_EQ(errno, EBADF);
  errno = 0;
  ASSERT_EQ(anypoll_proc_pid(unused), -1);
  ASSERT_EQ(errno, EBADF);
  /* An open descriptor that is not a process descriptor: a pipe's end. */
  int fds[2];
  tp_pipe(fds);
  errno = 0;
  ASSERT_EQ(anypoll_proc_wait(fds[0], &status), -1);
  ASSERT_EQ(errno, EBADF);
  errno = 0;
  ASSERT_EQ(anypoll_proc_kill(fds[1]), -1);
  ASSERT_EQ(errno, EBADF);
  errno = 0;
  ASSERT_EQ(anypoll_proc_pid(fds[0]), -1);
  ASSERT_EQ(errno, EBADF);
  tp_close(fds[0]);
  tp_close(fds[1]);
  /* status NULL */
  int pipes[3], proc;
  const char *steps[] = { "exit", "3", NULL };
  spawn_child(steps, ANYPOLL_STDIO_NULL, ANYPOLL_STDIO_NULL,
              ANYPOLL_STDIO_NULL, pipes, &proc);
  errno = 0;
  ASSERT_EQ(anypoll_proc_wait(proc, NULL), -1);
  ASSERT_EQ(errno, EINVAL);
  wait_exit(proc, 3);
  ASSERT_EQ(anypoll_close(proc), 0);
  /* A closed process descriptor is no longer one. */
  errno = 0;
  ASSERT_EQ(anypoll_proc_pid(proc), -1);
  ASSERT_EQ(errno, EBADF);
}

TEST(spawn_exit_codes) {
  spawn_begin();
  static const char *const codes[] = { "0", "1", "42", "255" };
  for (int i = 0; i < 4; i++) {
    int pipes[3], proc;
    const char *steps[] = { "exit", codes[i], NULL };
    spawn_child(steps, ANYPOLL_STDIO_NULL, ANYPOLL_STDIO_INHERIT,
                ANYPOLL_STDIO_INHERIT, pipes, &proc);
    ASSERT_GT(anypoll_proc_pid(proc), 0);
    wait_exit(proc, atoi(codes[i]));
    /* Kill after the exit: 0, and the status stays. */
    ASSERT_EQ(anypoll_proc_kill(proc), 0);
    int status = -1;
    ASSERT_EQ(anypoll_proc_wait(proc, &status), 0);
    ASSERT_EQ(status, atoi(codes[i]));
    ASSERT_EQ(anypoll_close(proc), 0);
  }
}

/* The child prints its pid; anypoll_proc_pid gives the same. Its process
 * descriptor reports nothing while it runs (blocked reading its standard
 * input), then POLLIN once it has exited, in anypoll_poll and in a set of
 * each set backend. */
TEST(spawn_proc_pollin_only_after_exit) {
  spawn_begin();
  for (int round = 0; round < 2; round++) {
    tp_set_backend = round == 0 ? NULL : "poll";
    int pipes[3], proc;
    const char *steps[] = { "pid", "cat", "exit", "7", NULL };
    spawn_child(steps, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
                ANYPOLL_STDIO_INHERIT, pipes, &proc);
    char line[64];
    int got = 0;
    while (got == 0 || line[got - 1] != '\n') {
      int n = anypoll_read(pipes[1], line + got, (unsigned)(sizeof line - 1 - got));
      ASSERT_GT(n, 0);
      got += n;
    }
    line[got] = '\0';
    ASSERT_EQ(atol(line), anypoll_proc_pid(proc));

    anypoll_set *set = tp_set_new();
    ASSERT_EQ(anypoll_set_add(set, proc, POLLIN, &proc), 0);
    short rev;
    struct anypoll_event ev[4];
    /* Running: not ready, now or after a wait. */
    ASSERT_EQ(poll_proc(proc, 0, &rev), 0);
    ASSERT_EQ(rev, 0);
    ASSERT_EQ(anypoll_set_wait(set, ev, 4, 0), 0);
    ASSERT_EQ(poll_proc(proc, 200, &rev), 0);
    ASSERT_EQ(anypoll_set_wait(set, ev, 4, 200), 0);
    /* Its input ends: it exits. */
    ASSERT_EQ(anypoll_close(pipes[0]), 0);
    ASSERT_EQ(anypoll_set_wait(set, ev, 4, WATCHDOG_MS), 1);
    ASSERT(ev[0].data == &proc);
    ASSERT_EQ(ev[0].events, POLLIN);
    /* Level-triggered: reported again until the descriptor is closed. */
    ASSERT_EQ(anypoll_set_wait(set, ev, 4, 0), 1);
    ASSERT_EQ(ev[0].events, POLLIN);
    ASSERT_EQ(poll_proc(proc, 0, &rev), 1);
    ASSERT_EQ(rev, POLLIN);
    wait_exit(proc, 7);
    /* Still ready after the wait: POLLIN, and on Linux (a pidfd whose
     * process has been reaped) POLLHUP too. */
    ASSERT_EQ(poll_proc(proc, 0, &rev), 1);
    ASSERT(rev & POLLIN);
    ASSERT_EQ(rev & ~(POLLIN | POLLHUP), 0);
    ASSERT_EQ(anypoll_set_del(set, proc), 0);
    anypoll_set_free(set);
    char rest[16];
    ASSERT_EQ(read_to_end(pipes[1], rest, sizeof rest), 0);
    ASSERT_EQ(anypoll_close(pipes[1]), 0);
    ASSERT_EQ(anypoll_close(proc), 0);
  }
  tp_set_backend = NULL;
}

TEST(spawn_kill_is_137) {
  spawn_begin();
  int pipes[3], proc;
  const char *steps[] = { "forever", NULL };
  spawn_child(steps, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
              ANYPOLL_STDIO_NULL, pipes, &proc);
  short rev;
  ASSERT_EQ(poll_proc(proc, 100, &rev), 0);
  ASSERT_EQ(anypoll_proc_kill(proc), 0);
  wait_exit(proc, 137);
  /* Its ends of the pipes went with it. */
  char buf[8];
  ASSERT_EQ(read_to_end(pipes[1], buf, sizeof buf), 0);
  ASSERT_EQ(anypoll_proc_kill(proc), 0);
  ASSERT_EQ(anypoll_close(pipes[0]), 0);
  ASSERT_EQ(anypoll_close(pipes[1]), 0);
  ASSERT_EQ(anypoll_close(proc), 0);
}

static void check_pattern(const char *buf, long n, long offset) {
  for (long k = 0; k < n; k++)
    if ((unsigned char)buf[k] != (unsigned char)((offset + k) % 251)) {
      fprintf(stderr, "byte %ld is %d\n", offset + k, (unsigned char)buf[k]);
      ASSERT(!"pattern");
    }
}

/* The child writes to its stdout and stderr and exits before the parent
 * reads anything: every byte is still there. Both pipes hold 64 KiB on both
 * platforms, so 32 KiB fit without the child waiting. */
TEST(spawn_exit_before_read_loses_nothing) {
  spawn_begin();
  int pipes[3], proc;
  const char *steps[] = { "write", "32768", "err", "to stderr", "exit",
                          "5", NULL };
  spawn_child(steps, ANYPOLL_STDIO_NULL, ANYPOLL_STDIO_PIPE,
              ANYPOLL_STDIO_PIPE, pipes, &proc);
  wait_exit(proc, 5);
  static char buf[65536];
  ASSERT_EQ(read_to_end(pipes[1], buf, sizeof buf), 32768);
  check_pattern(buf, 32768, 0);
  ASSERT_EQ(read_to_end(pipes[2], buf, sizeof buf), 10);
  ASSERT(memcmp(buf, "to stderr\n", 10) == 0);
  ASSERT_EQ(anypoll_close(pipes[1]), 0);
  ASSERT_EQ(anypoll_close(pipes[2]), 0);
  ASSERT_EQ(anypoll_close(proc), 0);
}

/* A child that writes more than the pipe holds and exits while the parent
 * waits on its output and its exit in one set: every byte arrives, in
 * order, and the exit too, whichever the set reports first. */
TEST(spawn_output_and_exit_in_one_set) {
  spawn_begin();
  for (int round = 0; round < 2; round++) {
    tp_set_backend = round == 0 ? NULL : "poll";
    int pipes[3], proc;
    const char *steps[] = { "write", "3000000", "exit", "0", NULL };
    spawn_child(steps, ANYPOLL_STDIO_NULL, ANYPOLL_STDIO_PIPE,
                ANYPOLL_STDIO_INHERIT, pipes, &proc);
    anypoll_set *set = tp_set_new();
    ASSERT_EQ(anypoll_set_add(set, pipes[1], POLLIN, &pipes[1]), 0);
    ASSERT_EQ(anypoll_set_add(set, proc, POLLIN, &proc), 0);
    long total = 0;
    int out_open = 1, running = 1;
    static char buf[65536];
    while (out_open || running) {
      struct anypoll_event ev[2];
      int n = anypoll_set_wait(set, ev, 2, WATCHDOG_MS);
      ASSERT_GT(n, 0);
      for (int i = 0; i < n; i++) {
        if (ev[i].data == &proc) {
          int status = -1;
          ASSERT_EQ(anypoll_proc_wait(proc, &status), 0);
          ASSERT_EQ(status, 0);
          ASSERT_EQ(anypoll_set_del(set, proc), 0);
          running = 0;
        } else {
          int r = anypoll_read(pipes[1], buf, sizeof buf);
          ASSERT_GE(r, 0);
          check_pattern(buf, r, total);
          total += r;
          if (r == 0) {
            ASSERT_EQ(anypoll_set_del(set, pipes[1]), 0);
            out_open = 0;
          }
        }
      }
    }
    ASSERT_EQ(total, 3000000);
    anypoll_set_free(set);
    ASSERT_EQ(anypoll_close(pipes[1]), 0);
    ASSERT_EQ(anypoll_close(proc), 0);
  }
  tp_set_backend = NULL;
}

/* A child that never reads its standard input: the parent's write end
 * reports POLLOUT while the pipe has room (a write of up to 4 KiB then
 * completes at once), and stops reporting it once the pipe is full. When
 * the child is killed, the write end reports POLLERR and a write fails with
 * EPIPE. */
TEST(spawn_stdin_never_read_pollout_until_full) {
  spawn_begin();
  int pipes[3], proc;
  const char *steps[] = { "forever", NULL };
  spawn_child(steps, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_NULL,
              ANYPOLL_STDIO_NULL, pipes, &proc);
  static char chunk[4096];
  long written = 0;
  short rev;
  struct pollfd p;
  for (;;) {
    tp_pfd(&p, pipes[0], POLLOUT);
    int r = anypoll_poll(&p, 1, 0);
    ASSERT_GE(r, 0);
    if (r == 0)
      break;
    ASSERT_EQ(p.revents, POLLOUT);
    ASSERT_EQ(anypoll_write(pipes[0], chunk, sizeof chunk), (int)sizeof chunk);
    written += (long)sizeof chunk;
    /* A pipe that never fills is a failure, not a hang. */
    ASSERT_LE(written, 64L << 20);
  }
  ASSERT_GE(written, 4096);
  /* Full: no POLLOUT, now or after a wait. */
  tp_pfd(&p, pipes[0], POLLOUT);
  ASSERT_EQ(anypoll_poll(&p, 1, 200), 0);
  ASSERT_EQ(p.revents, 0);
  ASSERT_EQ(poll_proc(proc, 0, &rev), 0);
  ASSERT_EQ(anypoll_proc_kill(proc), 0);
  wait_exit(proc, 137);
  tp_pfd(&p, pipes[0], POLLOUT);
  ASSERT_EQ(anypoll_poll(&p, 1, WATCHDOG_MS), 1);
  ASSERT(p.revents & POLLERR);
  errno = 0;
  ASSERT_EQ(anypoll_write(pipes[0], chunk, 1), -1);
  ASSERT_EQ(errno, EPIPE);
  ASSERT_EQ(anypoll_close(pipes[0]), 0);
  ASSERT_EQ(anypoll_close(proc), 0);
}

/* 20 MiB through the cat-like child, one thread, anypoll_poll on both
 * ends: writes of 4 KiB when POLLOUT is reported, reads when POLLIN is. */
TEST(spawn_cat_round_trip_20mib) {
  spawn_begin();
  int pipes[3], proc;
  const char *steps[] = { "cat", NULL };
  spawn_child(steps, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
              ANYPOLL_STDIO_INHERIT, pipes, &proc);
  const long total = 20L << 20;
  long sent = 0, got = 0;
  static char out[4096], in[65536];
  while (got < total || pipes[1] >= 0) {
    struct pollfd p[2];
    tp_pfd(&p[0], pipes[0], POLLOUT);
    tp_pfd(&p[1], pipes[1], POLLIN);
    int r = anypoll_poll(p, 2, WATCHDOG_MS);
    ASSERT_GT(r, 0);
    if (pipes[0] >= 0 && (p[0].revents & POLLOUT)) {
      long n = total - sent < (long)sizeof out ? total - sent : (long)sizeof out;
      for (long k = 0; k < n; k++)
        out[k] = (char)((sent + k) % 251);
      ASSERT_EQ(anypoll_write(pipes[0], out, (unsigned)n), n);
      sent += n;
      if (sent == total) {
        ASSERT_EQ(anypoll_close(pipes[0]), 0);
        pipes[0] = -1;
      }
    } else if (pipes[0] >= 0) {
      ASSERT_EQ(p[0].revents, 0);
    }
    if (p[1].revents != 0) {
      ASSERT(p[1].revents & (POLLIN | POLLHUP));
      int n = anypoll_read(pipes[1], in, sizeof in);
      ASSERT_GE(n, 0);
      check_pattern(in, n, got);
      got += n;
      ASSERT_LE(got, sent);
      if (n == 0) {
        ASSERT_EQ(anypoll_close(pipes[1]), 0);
        pipes[1] = -1;
      }
    }
  }
  ASSERT_EQ(got, total);
  wait_exit(proc, 0);
  ASSERT_EQ(anypoll_close(proc), 0);
}

/* The arguments reach the child exactly, each one on its own: what the
 * Windows command line's quoting must get right. */
TEST(spawn_argv_exact) {
  spawn_begin();
  static const char *const hard[] = {
    "plain",
    "",
    "two words",
    "tab\there",
    "\"",
    "\"quoted\"",
    "in\"side",
    "back\\slash",
    "two\\\\backslashes",
    "trailing\\",
    "trailing two\\\\",
    "\\\"",
    "\\\\\"",
    "a\\\\\\\"b",
    " ",
    "\t",
    "\\",
    "\\\\\\",
    "ends with quote\"",
    "\"\"",
    "",
    "multiple   spaces",
    "'single'",
    "*",
    "?.txt",
    "%PATH%",
    "&|<>^()",
    "line\nbreak",
    "{}",
    "last\\ \\",
    "",
  };
  const int n = (int)(sizeof hard / sizeof hard[0]);
  const char *steps[64];
  steps[0] = "args";
  for (int i = 0; i < n; i++)
    steps[i + 1] = hard[i];
  steps[n + 1] = NULL;
  int pipes[3], proc;
  spawn_child(steps, ANYPOLL_STDIO_NULL, ANYPOLL_STDIO_PIPE,
              ANYPOLL_STDIO_INHERIT, pipes, &proc);
  static char buf[65536];
  long len = read_to_end(pipes[1], buf, sizeof buf - 1);
  ASSERT_LT(len, (long)sizeof buf - 1);
  buf[len] = '\0';
  char *line = buf;
  for (int i = 0; i < n; i++) {
    char expect[512];
    int m = snprintf(expect, sizeof expect, "%u ", (unsigned)strlen(hard[i]));
    for (const char *c = hard[i]; *c != '\0'; c++)
      m += snprintf(expect + m, sizeof expect - (size_t)m, "%02x",
                    (unsigned char)*c);
    char *nl = strchr(line, '\n');
    ASSERT(nl != NULL);
    *nl = '\0';
    if (strcmp(line, expect) != 0) {
      fprintf(stderr, "argument %d: got \"%s\", expected \"%s\"\n", i, line,
              expect);
      ASSERT(!"argument changed on its way");
    }
    line = nl + 1;
  }
  ASSERT(strcmp(line, "end\n") == 0);
  wait_exit(proc, 0);
  ASSERT_EQ(anypoll_close(pipes[1]), 0);
  ASSERT_EQ(anypoll_close(proc), 0);
}

/* envp replaces the environment; NULL keeps the parent's. */
TEST(spawn_envp) {
  spawn_begin();
  char *argv[] = { (char *)"spawn_child", (char *)"env",
                   (char *)"ANYPOLL_SPAWN_T", NULL };
  char *envp[] = { (char *)"ANYPOLL_SPAWN_T=from envp", NULL };
  int stdio[3] = { ANYPOLL_STDIO_NULL, ANYPOLL_STDIO_PIPE,
                   ANYPOLL_STDIO_INHERIT };
  int pipes[3], proc;
  ASSERT_EQ(anypoll_spawn(child_path(), argv, envp, stdio, pipes, &proc), 0);
  static char buf[256];
  long n = read_to_end(pipes[1], buf, sizeof buf - 1);
  buf[n] = '\0';
  ASSERT(strcmp(buf, "from envp\n") == 0);
  wait_exit(proc, 0);
  ASSERT_EQ(anypoll_close(pipes[1]), 0);
  ASSERT_EQ(anypoll_close(proc), 0);
  /* NULL: the parent's environment, which lacks it. */
  ASSERT_EQ(anypoll_spawn(child_path(), argv, NULL, stdio, pipes, &proc), 0);
  n = read_to_end(pipes[1], buf, sizeof buf - 1);
  buf[n] = '\0';
  ASSERT(strcmp(buf, "(unset)\n") == 0);
  wait_exit(proc, 0);
  ASSERT_EQ(anypoll_close(pipes[1]), 0);
  ASSERT_EQ(anypoll_close(proc), 0);
}

/* A descriptor of the parent as a stream: the child writes into a pipe the
 * test made, and a null device reads as empty. */
TEST(spawn_stdio_descriptor_and_null) {
  spawn_begin();
  int fds[2];
  tp_pipe(fds);
  int pipes[3], proc;
  const char *steps[] = { "readall", "err", "via fd", NULL };
  spawn_child(steps, ANYPOLL_STDIO_NULL, fds[1], fds[1], pipes, &proc);
  tp_close(fds[1]);
  static char buf[256];
  long n = 0;
  for (;;) {
    long r = tp_read(fds[0], buf + n, sizeof buf - 1 - (size_t)n);
    ASSERT_GE(r, 0);
    if (r == 0)
      break;
    n += r;
  }
  buf[n] = '\0';
  ASSERT(strcmp(buf, "0\nvia fd\n") == 0);
  wait_exit(proc, 0);
  tp_close(fds[0]);
  ASSERT_EQ(anypoll_close(proc), 0);
}

/* A second child started while the first one's stdin pipe is open does not
 * get (and so does not keep open) the parent's end of that pipe: the first
 * child sees end-of-file when the parent closes its end, while the second
 * one still runs. */
TEST(spawn_second_child_does_not_keep_first_pipe) {
  spawn_begin();
  int p1[3], proc1, p2[3], proc2;
  const char *cat[] = { "cat", "exit", "3", NULL };
  spawn_child(cat, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
              ANYPOLL_STDIO_INHERIT, p1, &proc1);
  const char *forever[] = { "forever", NULL };
  spawn_child(forever, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
              ANYPOLL_STDIO_PIPE, p2, &proc2);
  ASSERT_EQ(anypoll_write(p1[0], "hi", 2), 2);
  ASSERT_EQ(anypoll_close(p1[0]), 0);
  /* The exit first, under the watchdog: a read would block for ever if
   * the second child held the pipe. */
  wait_exit(proc1, 3);
  char buf[16];
  ASSERT_EQ(read_to_end(p1[1], buf, sizeof buf), 2);
  short rev;
  ASSERT_EQ(poll_proc(proc2, 0, &rev), 0); /* the second one still runs */
  ASSERT_EQ(anypoll_proc_kill(proc2), 0);
  wait_exit(proc2, 137);
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(anypoll_close(p2[i]), 0);
  ASSERT_EQ(anypoll_close(p1[1]), 0);
  ASSERT_EQ(anypoll_close(proc1), 0);
  ASSERT_EQ(anypoll_close(proc2), 0);
}

/* anypoll_close(proc) releases the descriptor and leaves the child alone:
 * it goes on echoing, and ends when its input does. */
TEST(spawn_close_proc_leaves_child) {
  spawn_begin();
  int pipes[3], proc;
  const char *steps[] = { "cat", NULL };
  spawn_child(steps, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
              ANYPOLL_STDIO_INHERIT, pipes, &proc);
  long pid = anypoll_proc_pid(proc);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(anypoll_close(proc), 0);
  ASSERT_EQ(anypoll_write(pipes[0], "still here", 10), 10);
  char buf[16];
  int got = 0;
  while (got < 10) {
    int n = anypoll_read(pipes[1], buf + got, (unsigned)(sizeof buf - got));
    ASSERT_GT(n, 0);
    got += n;
  }
  ASSERT(memcmp(buf, "still here", 10) == 0);
  ASSERT_EQ(anypoll_close(pipes[0]), 0);
  ASSERT_EQ(read_to_end(pipes[1], buf, sizeof buf), 0);
  ASSERT_EQ(anypoll_close(pipes[1]), 0);
#ifndef _WIN32
  /* The child is the program's to reap now. */
  int st;
  ASSERT_EQ(waitpid((pid_t)pid, &st, 0), (pid_t)pid);
  ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#endif
}

/* Slack for the threads a wait on 64 process descriptors may take:
 * none on Linux (pidfd); on Windows a thread pool wait thread per 63
 * process handles. The POSIX fallback takes a reaper thread per child. */
#define SPAWN_THREAD_SLACK 8
#define MANY 64

TEST(spawn_64_children_in_one_set) {
  spawn_begin();
  tp_raise_fd_limit(1024);
  for (int round = 0; round < 2; round++) {
    tp_set_backend = round == 0 ? NULL : "poll";
    int threads_before = tp_thread_count();
    int in[MANY], out[MANY], proc[MANY], status[MANY];
    long bytes[MANY];
    int done_out = 0, done_exit = 0;
    anypoll_set *set = tp_set_new();
    for (int i = 0; i < MANY; i++) {
      char count[16], code[16];
      snprintf(count, sizeof count, "%d", 1000 + i * 997);
      snprintf(code, sizeof code, "%d", i);
      int pipes[3];
      /* Each waits for its input to end and prints "0\n", then its own
       * count of bytes, then exits with its own status: all 64 run at
       * once, and end together once the parent closes their inputs. */
      const char *steps[] = { "readall", "write", count, "exit", code, NULL };
      spawn_child(steps, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE,
                  ANYPOLL_STDIO_INHERIT, pipes, &proc[i]);
      in[i] = pipes[0];
      out[i] = pipes[1];
      bytes[i] = 0;
      status[i] = -1;
      ASSERT_EQ(anypoll_set_add(set, out[i], POLLIN, &out[i]), 0);
      ASSERT_EQ(anypoll_set_add(set, proc[i], POLLIN, &proc[i]), 0);
    }
    int threads_max = tp_thread_count();
    for (int i = 0; i < MANY; i++)
      ASSERT_EQ(anypoll_close(in[i]), 0);
    static char buf[65536];
    while (done_out < MANY || done_exit < MANY) {
      struct anypoll_event ev[16];
      int n = anypoll_set_wait(set, ev, 16, WATCHDOG_MS);
      ASSERT_GT(n, 0);
      int t = tp_thread_count();
      if (t > threads_max)
        threads_max = t;
      for (int k = 0; k < n; k++) {
        int *p = ev[k].data;
        if (p >= out && p < out + MANY) {
          int i = (int)(p - out);
          int r = anypoll_read(out[i], buf, sizeof buf);
          ASSERT_GE(r, 0);
          bytes[i] += r;
          if (r == 0) {
            ASSERT_EQ(anypoll_set_del(set, out[i]), 0);
            ASSERT_EQ(anypoll_close(out[i]), 0);
            done_out++;
          }
        } else {
          ASSERT(p >= proc && p < proc + MANY);
          int i = (int)(p - proc);
          ASSERT_EQ(anypoll_proc_wait(proc[i], &status[i]), 0);
          ASSERT_EQ(anypoll_set_del(set, proc[i]), 0);
          ASSERT_EQ(anypoll_close(proc[i]), 0);
          done_exit++;
        }
      }
    }
    anypoll_set_free(set);
    for (int i = 0; i < MANY; i++) {
      ASSERT_EQ(bytes[i], 2 + 1000 + i * 997);
      ASSERT_EQ(status[i], i);
    }
    int allowed = SPAWN_THREAD_SLACK + (spawn_reaper() ? MANY : 0);
    printf("threads: %d before, at most %d during the wait\n", threads_before,
           threads_max);
    ASSERT_LE(threads_max, threads_before + allowed);
    /* Back to the count before (helper threads may take a moment to end:
     * the watchdog bounds that wait, not its speed). */
    double start = tp_now_ms();
    while (tp_thread_count() > threads_before + SPAWN_THREAD_SLACK) {
      ASSERT_LT(tp_now_ms() - start, WATCHDOG_MS);
      tp_sleep_ms(10);
    }
  }
  tp_set_backend = NULL;
}

#ifndef _WIN32
#  include <fcntl.h>
/* POSIX: the child has its three streams and no other descriptor of the
 * library's: not the parent's ends of its own or another child's pipes,
 * not a process descriptor (nor, in the fallback, the reaper's pipe), not
 * a stdio descriptor the caller passed (only its copy on 0-2). The test's
 * own descriptors are made close-on-exec first, so every descriptor above
 * 2 that the child has would be a leak of ours. */
TEST(spawn_child_gets_only_its_streams) {
  spawn_begin();
  for (int fd = 3; fd < 64; fd++) {
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0)
      fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
  int fds[2];
  ASSERT_EQ(anypoll_pipe(fds), 0);
  int p1[3], proc1;
  const char *cat[] = { "cat", NULL };
  spawn_child(cat, ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE, fds[1], p1, &proc1);
  const char *steps[2 * 61 + 1];
  char numbers[61][4];
  for (int fd = 3; fd < 64; fd++) {
    snprintf(numbers[fd - 3], sizeof numbers[fd - 3], "%d", fd);
    steps[2 * (fd - 3)] = "isopen";
    steps[2 * (fd - 3) + 1] = numbers[fd - 3];
  }
  steps[2 * 61] = NULL;
  int p2[3], proc2;
  char *argv[2 * 61 + 2];
  argv[0] = (char *)"spawn_child";
  for (int i = 0; i <= 2 * 61; i++)
    argv[i + 1] = (char *)steps[i];
  int stdio[3] = { ANYPOLL_STDIO_PIPE, ANYPOLL_STDIO_PIPE, fds[1] };
  ASSERT_EQ(anypoll_spawn(child_path(), argv, NULL, stdio, p2, &proc2), 0);
  /* The parent holds at least these above 2 while the child starts. */
  ASSERT_GE(tp_descriptor_count(), 3 + 8);
  static char buf[8192];
  long n = read_to_end(p2[1], buf, sizeof buf - 1);
  buf[n] = '\0';
  char *line = buf;
  for (int fd = 3; fd < 64; fd++) {
    char expect[32];
    snprintf(expect, sizeof expect, "closed %d\n", fd);
    if (strncmp(line, expect, strlen(expect)) != 0) {
      fprintf(stderr, "the child has descriptor %d: %.20s\n", fd, line);
      ASSERT(!"descriptor inherited");
    }
    line += strlen(expect);
  }
  ASSERT_EQ(*line, '\0');
  wait_exit(proc2, 0);
  ASSERT_EQ(anypoll_close(p1[0]), 0);
  wait_exit(proc1, 0);
  ASSERT_EQ(anypoll_close(p1[1]), 0);
  ASSERT_EQ(anypoll_close(p2[0]), 0);
  ASSERT_EQ(anypoll_close(p2[1]), 0);
  ASSERT_EQ(anypoll_close(proc1), 0);
  ASSERT_EQ(anypoll_close(proc2), 0);
  ASSERT_EQ(anypoll_close(fds[0]), 0);
  ASSERT_EQ(anypoll_close(fds[1]), 0);
}

/* POSIX: the parent's own 1 and 2 given to the child swapped: each
 * stream's source is moved above 2 before any dup2 into 0-2, so that the
 * first dup2 does not overwrite the second one's source. The test's 1 and 2
 * are pipes for the while. */
TEST(spawn_stdio_swapped_streams) {
  spawn_begin();
  int a[2], b[2];
  ASSERT_EQ(anypoll_pipe(a), 0);
  ASSERT_EQ(anypoll_pipe(b), 0);
  int saved1 = dup(1), saved2 = dup(2);
  ASSERT(saved1 >= 0 && saved2 >= 0);
  ASSERT_EQ(dup2(a[1], 1), 1);
  ASSERT_EQ(dup2(b[1], 2), 2);
  char *argv[] = { (char *)"spawn_child", (char *)"out", (char *)"to stdout",
                   (char *)"err", (char *)"to stderr", NULL };
  int stdio[3] = { ANYPOLL_STDIO_NULL, 2, 1 };
  int pipes[3], proc;
  int r = anypoll_spawn(child_path(), argv, NULL, stdio, pipes, &proc);
  ASSERT_EQ(dup2(saved1, 1), 1);
  ASSERT_EQ(dup2(saved2, 2), 2);
  close(saved1);
  close(saved2);
  ASSERT_EQ(r, 0);
  ASSERT_EQ(anypoll_close(a[1]), 0);
  ASSERT_EQ(anypoll_close(b[1]), 0);
  wait_exit(proc, 0);
  char buf[64];
  long n = read_to_end(a[0], buf, sizeof buf - 1);
  buf[n] = '\0';
  ASSERT(strcmp(buf, "to stderr\n") == 0);
  n = read_to_end(b[0], buf, sizeof buf - 1);
  buf[n] = '\0';
  ASSERT(strcmp(buf, "to stdout\n") == 0);
  ASSERT_EQ(anypoll_close(a[0]), 0);
  ASSERT_EQ(anypoll_close(b[0]), 0);
  ASSERT_EQ(anypoll_close(proc), 0);
}

/* POSIX: with SIGCHLD ignored the kernel reaps each child itself as it
 * exits, maybe before anypoll_spawn has opened its descriptor. The spawn
 * still succeeds (the child did run), the descriptor reports POLLIN once
 * the child has gone, and anypoll_proc_wait fails with ECHILD: no status
 * is left to report. */
TEST(spawn_sigchld_ignored) {
  spawn_begin();
  struct sigaction ign, old;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  ASSERT_EQ(sigaction(SIGCHLD, &ign, &old), 0);
  for (int i = 0; i < 50; i++) {
    char *argv[] = { (char *)"spawn_child", (char *)"exit", (char *)"3",
                     NULL };
    int stdio[3] = { ANYPOLL_STDIO_NULL, ANYPOLL_STDIO_INHERIT,
                     ANYPOLL_STDIO_INHERIT };
    int pipes[3], proc = -7;
    int r = anypoll_spawn(child_path(), argv, NULL, stdio, pipes, &proc);
    if (r != 0)
      fprintf(stderr, "spawn %d: %s\n", i, strerror(errno));
    ASSERT_EQ(r, 0);
    short rev;
    ASSERT_EQ(poll_proc(proc, WATCHDOG_MS, &rev), 1);
    ASSERT(rev & POLLIN);
    ASSERT_EQ(rev & ~(POLLIN | POLLHUP), 0);
    int status = -1;
    errno = 0;
    r = anypoll_proc_wait(proc, &status);
    if (r != -1 || errno != ECHILD)
      fprintf(stderr, "wait %d: %d, status %d, %s\n", i, r, status,
              strerror(errno));
    ASSERT_EQ(r, -1);
    ASSERT_EQ(errno, ECHILD);
    ASSERT_EQ(anypoll_close(proc), 0);
  }
  ASSERT_EQ(sigaction(SIGCHLD, &old, NULL), 0);
}
#endif
