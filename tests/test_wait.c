/* SPDX-License-Identifier: MIT */
/* Waiting and waking on pipes: each case makes a pipe ready (or not) while
 * the call waits, from another thread or another process, and checks the
 * exact result. Sockets: test_wait_socket.c; timeouts and calls of many
 * entries, kinds or threads: test_wait_calls.c. */
#include <string.h>

#include "test.h"

TEST(pipe_wakes_on_write_from_thread) {
  int p[2];
  tp_pipe(p);
  struct tp_later l;
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  double start = tp_now_ms();
  tp_thread *t = tp_after(&l, p[1], 50, TP_WRITE_BYTE);
  ASSERT_EQ(tp_poll(&fd, 1, -1), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  /* It really waited for the write rather than returning at once. */
  ASSERT_GE(tp_now_ms() - start, 40);
  tp_thread_join(t);
  char c;
  ASSERT_EQ(tp_read(p[0], &c, 1), 1);
  ASSERT_EQ(c, 'w');
  tp_close(p[0]);
  tp_close(p[1]);
}

TEST(pipe_wakes_on_writer_close) {
  int p[2];
  tp_pipe(p);
  struct tp_later l;
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  tp_thread *t = tp_after(&l, p[1], 50, TP_CLOSE_FD);
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLHUP);
  tp_thread_join(t);
  tp_close(p[0]);
}

TEST(pipe_data_then_writer_closed) {
  int p[2];
  tp_pipe(p);
  ASSERT_EQ(tp_write(p[1], "ab", 2), 2);
  tp_close(p[1]);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  /* Linux reports both while unread data outlives the writer; select()
   * cannot see the hang-up until the data is read (docs/deviations.md). */
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  if (tp_backend == ANYPOLL_BACKEND_SELECT)
    ASSERT_EQ(fd.revents, POLLIN);
  else
    ASSERT_EQ(fd.revents, POLLIN | POLLHUP);
  char buf[4];
  ASSERT_EQ(tp_read(p[0], buf, sizeof buf), 2);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  ASSERT_EQ(fd.revents, POLLHUP);
  /* POLLHUP is reported even when nothing was asked. */
  fd.events = 0;
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  ASSERT_EQ(fd.revents, POLLHUP);
  tp_close(p[0]);
}

TEST(pipe_write_end_reader_closed) {
  int p[2];
  tp_pipe(p);
  tp_close(p[0]);
  struct pollfd fd;
  tp_pfd(&fd, p[1], POLLOUT);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  ASSERT_EQ(fd.revents, POLLOUT | POLLERR);
  fd.events = 0;
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  ASSERT_EQ(fd.revents, POLLERR);
  tp_close(p[1]);
}

struct blocked_reader {
  int fd;
  long got;
  char buf[65536];
};

static void read_64k(void *arg) {
  struct blocked_reader *r = arg;
  r->got = tp_read(r->fd, r->buf, sizeof r->buf);
}

/* The trap git for Windows fell into: while the reader sits in a large
 * read on an empty pipe, Windows reports no write quota, yet a write would
 * complete at once. */
TEST(pipe_pollout_while_reader_blocked) {
  int p[2];
  tp_pipe(p);
  static struct blocked_reader r;
  r.fd = p[0];
  r.got = 0;
  tp_thread *t = tp_thread_start(read_64k, &r);
  tp_sleep_ms(100); /* let the reader block */
  struct pollfd fd;
  tp_pfd(&fd, p[1], POLLOUT);
  ASSERT_EQ(tp_poll(&fd, 1, 2000), 1);
  ASSERT_EQ(fd.revents, POLLOUT);
  ASSERT_EQ(tp_write(p[1], "0123456789", 10), 10);
  tp_thread_join(t);
  ASSERT_EQ(r.got, 10);
  ASSERT_EQ(memcmp(r.buf, "0123456789", 10), 0);
  tp_close(p[0]);
  tp_close(p[1]);
}

struct waiter {
  int fd;
  int result;
  short revents;
};

static void wait_forever(void *arg) {
  struct waiter *w = arg;
  struct pollfd fd;
  tp_pfd(&fd, w->fd, POLLIN);
  w->result = tp_poll(&fd, 1, -1);
  w->revents = fd.revents;
}

/* A call parked on a pipe must not hold up other calls on the same pipe
 * (on Windows a pending synchronous read blocks every query of the pipe). */
TEST(pipe_two_threads_do_not_block_each_other) {
  int p[2];
  tp_pipe(p);
  struct waiter w = { p[0], 0, 0 };
  tp_thread *t = tp_thread_start(wait_forever, &w);
  tp_sleep_ms(100); /* the other call is waiting by now */
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  for (int i = 0; i < 20; i++) {
    ASSERT_EQ(tp_poll(&fd, 1, 0), 0);
    ASSERT_EQ(fd.revents, 0);
    ASSERT_EQ(tp_poll(&fd, 1, 5), 0);
  }
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  tp_thread_join(t);
  ASSERT_EQ(w.result, 1);
  ASSERT_EQ(w.revents, POLLIN);
  tp_close(p[0]);
  tp_close(p[1]);
}

/* After a call returns, nothing of it is left pending on the pipe: the
 * caller's own blocking read completes as soon as data arrives, and closing
 * the descriptor does not hang. */
TEST(pipe_reads_after_poll_do_not_hang) {
  int p[2];
  tp_pipe(p);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 30), 0);
  struct tp_later l;
  tp_thread *t = tp_after(&l, p[1], 50, TP_WRITE_BYTE);
  char c = 0;
  ASSERT_EQ(tp_read(p[0], &c, 1), 1);
  ASSERT_EQ(c, 'w');
  tp_thread_join(t);
  ASSERT_EQ(tp_poll(&fd, 1, 30), 0);
  tp_close(p[0]);
  tp_close(p[1]);
}

/* Each round: two new idle pipes and a short timeout, so the call arms a
 * wait on both read ends and cancels both when the timeout expires; then
 * data on one, so a call reports it while the wait on the other is
 * cancelled. On Windows a cancelled helper read used to free its
 * bookkeeping twice: a heap corruption that crashed within a few hundred
 * rounds, once new pipes made the allocator hand the block out again. */
TEST(pipe_waits_cancelled_repeatedly) {
  for (int i = 0; i < 500; i++) {
    int a[2], b[2];
    tp_pipe(a);
    tp_pipe(b);
    struct pollfd fds[2];
    tp_pfd(&fds[0], a[0], POLLIN);
    tp_pfd(&fds[1], b[0], POLLIN);
    ASSERT_EQ(tp_poll(fds, 2, 1), 0);
    ASSERT_EQ(fds[0].revents, 0);
    ASSERT_EQ(fds[1].revents, 0);
    ASSERT_EQ(tp_write(a[1], "x", 1), 1);
    ASSERT_EQ(tp_poll(fds, 2, -1), 1);
    ASSERT_EQ(fds[0].revents, POLLIN);
    ASSERT_EQ(fds[1].revents, 0);
    tp_close(a[0]);
    tp_close(a[1]);
    tp_close(b[0]);
    tp_close(b[1]);
  }
}

/* The write comes from another process, which then exits: POLLIN first,
 * POLLHUP once the last writer is gone. */
TEST(pipe_wakes_on_write_from_child) {
  int p[2];
  tp_pipe(p);
  tp_child *c = tp_child_writer(p[1], 50, 50);
  tp_close(p[1]);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, -1), 1);
  /* The child may already have exited when the call looks. */
  ASSERT(fd.revents == POLLIN || fd.revents == (POLLIN | POLLHUP));
  char ch = 0;
  ASSERT_EQ(tp_read(p[0], &ch, 1), 1);
  ASSERT_EQ(ch, 'c');
  ASSERT_EQ(tp_poll(&fd, 1, -1), 1);
  ASSERT_EQ(fd.revents, POLLHUP);
  tp_child_wait(c);
  tp_close(p[0]);
}

/* The writer vanishes mid-wait (killed, not exiting cleanly). */
TEST(pipe_hup_when_child_killed) {
  int p[2];
  tp_pipe(p);
  tp_child *c = tp_child_writer(p[1], 0, 60000);
  tp_close(p[1]);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 10000), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  char ch;
  ASSERT_EQ(tp_read(p[0], &ch, 1), 1);
  struct tp_later k;
  tp_thread *t = tp_kill_after(&k, c, 100);
  ASSERT_EQ(tp_poll(&fd, 1, -1), 1);
  ASSERT_EQ(fd.revents, POLLHUP);
  tp_thread_join(t);
  tp_child_wait(c);
  tp_close(p[0]);
}
