/* SPDX-License-Identifier: MIT */
/* The whole-call rules every backend follows, on the simplest descriptors. */
#include <errno.h>
#include <stdint.h>
#ifndef _WIN32
#  include <signal.h>
#  include <sys/wait.h>
#  include <unistd.h>
#endif

#include "test.h"

TEST(timeout_zero_nothing_ready) {
  int p[2];
  tp_pipe(p);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 0);
  ASSERT_EQ(fd.revents, 0);
  tp_close(p[0]);
  tp_close(p[1]);
}

TEST(pipe_data_pollin) {
  int p[2];
  tp_pipe(p);
  ASSERT_EQ(tp_write(p[1], "abc", 3), 3);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  /* Polling consumed nothing. */
  char buf[8];
  ASSERT_EQ(tp_read(p[0], buf, sizeof buf), 3);
  tp_close(p[0]);
  tp_close(p[1]);
}

TEST(pipe_writer_closed_pollhup) {
  int p[2];
  tp_pipe(p);
  tp_close(p[1]);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  ASSERT_EQ(fd.revents, POLLHUP);
  tp_close(p[0]);
}

TEST(invalid_fd_pollnval) {
  struct pollfd fd;
  tp_pfd(&fd, tp_unused_fd(), POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  ASSERT_EQ(fd.revents, POLLNVAL);
}

/* POSIX gives errno a meaning only after a failure, but a program may test
 * errno after a successful call (or keep a value across one), so a call
 * that succeeds leaves errno as it found it: also one that found a closed
 * descriptor, which the Windows backend learns from a failing lookup
 * (EBADF). EDOM is a value no poll() path ever sets. */
TEST(success_leaves_errno) {
  /* q first: a pipe made after p is closed could reuse p's numbers. */
  int q[2];
  tp_pipe(q);
  int p[2];
  tp_pipe(p);
  int closed = p[0];
  tp_close(p[0]);
  tp_close(p[1]);
  struct pollfd fd;
  tp_pfd(&fd, closed, POLLIN);
  errno = EDOM;
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  ASSERT_EQ(fd.revents, POLLNVAL);
  ASSERT_EQ(errno, EDOM);
  /* With a timed wait too, and beside an entry that times out. */
  struct pollfd two[2];
  tp_pfd(&two[0], q[0], POLLIN);
  tp_pfd(&two[1], closed, POLLIN);
  errno = EDOM;
  ASSERT_EQ(tp_poll(two, 2, 20), 1);
  ASSERT_EQ(two[0].revents, 0);
  ASSERT_EQ(two[1].revents, POLLNVAL);
  ASSERT_EQ(errno, EDOM);
  /* And a plain timeout. */
  errno = EDOM;
  ASSERT_EQ(tp_poll(two, 1, 0), 0);
  ASSERT_EQ(errno, EDOM);
  tp_close(q[0]);
  tp_close(q[1]);
}

TEST(negative_fd_ignored) {
  int p[2];
  tp_pipe(p);
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  struct pollfd fds[3];
  tp_pfd(&fds[0], -1, POLLIN);
  tp_pfd(&fds[1], p[0], POLLIN);
  tp_pfd(&fds[2], -5, POLLIN | POLLOUT);
  ASSERT_EQ(tp_poll(fds, 3, 0), 1);
  ASSERT_EQ(fds[0].revents, 0);
  ASSERT_EQ(fds[1].revents, POLLIN);
  ASSERT_EQ(fds[2].revents, 0);
  /* Only ignored entries: a timed wait that times out. */
  ASSERT_EQ(tp_poll(fds, 1, 20), 0);
  ASSERT_EQ(fds[0].revents, 0);
  tp_close(p[0]);
  tp_close(p[1]);
}

TEST(nfds_zero_sleeps_for_timeout) {
  double start = tp_now_ms();
  ASSERT_EQ(tp_poll(NULL, 0, 50), 0);
  double elapsed = tp_now_ms() - start;
  /* Never early: the wait must last the whole timeout. */
  ASSERT_GE(elapsed, 50);
}

TEST(null_fds_with_nfds_efault) {
  errno = 0;
  ASSERT_EQ(tp_poll(NULL, 1, 0), -1);
  ASSERT_EQ(errno, EFAULT);
}

/* An fds pointer to memory the program does not have (the first pages of
 * the address space are never mapped, on Linux below mmap_min_addr, on
 * Windows the first 64 KiB): -1 with EFAULT, as Linux's poll gives, instead
 * of a crash. POSIX's select backend copies the entries into fd_sets
 * itself and is not covered (docs/deviations.md). */
TEST(wild_fds_pointer_efault) {
#ifndef _WIN32
  if (tp_backend == ANYPOLL_BACKEND_SELECT) {
    /* The expected difference, stated: the select backend reads the
     * entries itself, so a wild pointer faults there as it would in any
     * user-space poll emulation (docs/deviations.md). Asserted in a child,
     * so that the fault is the one expected and nothing else. */
    pid_t child = fork();
    ASSERT(child >= 0);
    if (child == 0) {
      /* The default action, not a sanitizer's report-and-exit handler. */
      signal(SIGSEGV, SIG_DFL);
      tp_poll((struct pollfd *)(uintptr_t)0x1000, 1, 0);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT(WIFSIGNALED(status));
    ASSERT_EQ(WTERMSIG(status), SIGSEGV);
    return;
  }
#endif
  struct pollfd *wild = (struct pollfd *)(uintptr_t)0x1000;
  errno = 0;
  ASSERT_EQ(tp_poll(wild, 2, 0), -1);
  ASSERT_EQ(errno, EFAULT);
  errno = 0;
  ASSERT_EQ(tp_poll(wild, 1, 10), -1);
  ASSERT_EQ(errno, EFAULT);
  /* An array whose end runs past the program's memory: the first entry is
   * fine, the last is not. A read-only array: revents cannot be written. */
  static const struct pollfd read_only[1] = { { 0, POLLIN, 0 } };
  errno = 0;
  ASSERT_EQ(tp_poll((struct pollfd *)(uintptr_t)read_only, 1, 0), -1);
  ASSERT_EQ(errno, EFAULT);
}

TEST(unknown_backend_einval) {
  struct pollfd fd;
  tp_pfd(&fd, -1, POLLIN);
  errno = 0;
  ASSERT_EQ(anypoll_poll_with(99, &fd, 1, 0), -1);
  ASSERT_EQ(errno, EINVAL);
  errno = 0;
  ASSERT_EQ(anypoll_backend_from_name("no-such-backend"), -1);
  ASSERT_EQ(errno, EINVAL);
}
