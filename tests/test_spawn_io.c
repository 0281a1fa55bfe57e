/* SPDX-License-Identifier: MIT */
/* anypoll_spawn (issue 36), continued from test_spawn.c: data through the
 * child's pipes (nothing lost, POLLOUT on its stdin, a 20 MiB round trip),
 * its arguments exactly, the streams it gets (a descriptor, the null
 * device, nothing else of the library's), and 64 children in one set.
 * Natively and under Wine; run as test_spawn.c's cases are
 * (TEST_CASE_SPAWN). */
#include <errno.h>
#include <string.h>

#include "spawn_support.h"

#ifndef _WIN32
#  include <unistd.h>
#endif

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
#endif
