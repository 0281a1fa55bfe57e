/* SPDX-License-Identifier: MIT */
/* Many threads on one pipe, and duplicates of it. On Windows a call that
 * asks a pipe anything while another thread's wait has a zero-byte read
 * pending on it would wait for that read (the file-object lock); Wine does
 * not model that lock, so the Windows tests link the library's lock model
 * (src/win32/model.c), which ends the process when such a call is made.
 * These cases therefore fail under Wine on code that would hang on Windows,
 * and check natively that the same programs behave as Linux says. */
#include <stdatomic.h>

#include "test.h"

/* One call waits with timeout 100 on a pipe another thread waits on for
 * ever: it returns 0, never early. Windows would not return at all before
 * data arrives if the call touched the pipe behind the other thread's
 * read, and no data comes until every such call has returned: the lock
 * model ends that process (status 86) under Wine, and a call that hangs
 * meets CTest's timeout. No upper bound on the time taken: a loaded
 * machine (sanitizers, a stalled CI runner) can take any time to run the
 * thread again after its timeout. */
static void poll_100_returns(int fd_num) {
  struct pollfd fd;
  tp_pfd(&fd, fd_num, POLLIN);
  double start = tp_now_ms();
  ASSERT_EQ(tp_poll(&fd, 1, 100), 0);
  ASSERT_EQ(fd.revents, 0);
  double took = tp_now_ms() - start;
  ASSERT_GE(took, 99);
  tp_pfd(&fd, fd_num, POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 0);
  ASSERT_EQ(fd.revents, 0);
}

TEST(pipe_threads_timeouts_forever_and_100) {
  int p[2];
  tp_pipe(p);
  struct tp_forever f = { p[0], -2, 0 };
  tp_thread *t = tp_thread_start(tp_poll_forever, &f);
  tp_sleep_ms(100); /* the other call is waiting by now */
  for (int i = 0; i < 3; i++)
    poll_100_returns(p[0]);
  ASSERT_EQ(f.result, -2); /* still waiting */
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  tp_thread_join(t);
  ASSERT_EQ(f.result, 1);
  ASSERT_EQ(f.revents, POLLIN);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 100), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  tp_close(p[0]);
  tp_close(p[1]);
}

/* A duplicate of the descriptor (another handle to the same pipe on
 * Windows) polled by a second thread while the first waits on the
 * original, and the other way round. */
TEST(pipe_dup_polled_while_other_thread_waits) {
  int p[2];
  tp_pipe(p);
  int d = tp_dup_to(p[0], tp_unused_fd());
  ASSERT_GE(d, 0);
  for (int round = 0; round < 2; round++) {
    int waited = round == 0 ? p[0] : d, polled = round == 0 ? d : p[0];
    struct tp_forever f = { waited, -2, 0 };
    tp_thread *t = tp_thread_start(tp_poll_forever, &f);
    tp_sleep_ms(100);
    poll_100_returns(polled);
    /* Both wait at once, then one write wakes both. */
    struct pollfd fd;
    tp_pfd(&fd, polled, POLLIN);
    struct tp_later l;
    tp_thread *w = tp_after(&l, p[1], 100, TP_WRITE_BYTE);
    ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
    ASSERT_EQ(fd.revents, POLLIN);
    tp_thread_join(w);
    tp_thread_join(t);
    ASSERT_EQ(f.result, 1);
    ASSERT_EQ(f.revents, POLLIN);
    char c;
    ASSERT_EQ(tp_read(polled, &c, 1), 1);
    ASSERT_EQ(c, 'w');
  }
  tp_close(d);
  tp_close(p[0]);
  tp_close(p[1]);
}

/* Four threads on two shared pipes (each also through a duplicate), with
 * timeouts 0, 1, 10 and 30 ms, while the main thread makes one pipe
 * readable and drains it again; a fifth call waits for ever until the end.
 * Bounded: 40 calls per thread. Every call returns and reports only what
 * can be true; how long a call took is not checked (a call that hangs
 * meets CTest's timeout, and a loaded machine can take any time to run a
 * thread again). */
struct stresser {
  int fds[4];
  int timeout;
  int calls;
  int bad;
};

static void stress_main(void *arg) {
  struct stresser *s = arg;
  for (int i = 0; i < 40; i++) {
    struct pollfd fd[4];
    for (int k = 0; k < 4; k++)
      tp_pfd(&fd[k], s->fds[(i + k) % 4], POLLIN);
    int r = tp_poll(fd, 4, s->timeout);
    if (r < 0 || r > 4)
      s->bad++;
    for (int k = 0; k < 4; k++)
      if (fd[k].revents != 0 && fd[k].revents != POLLIN)
        s->bad++;
    s->calls++;
  }
}

TEST(stress_threads_mixed_timeouts_shared_pipes) {
  int p[2], q[2];
  tp_pipe(p);
  tp_pipe(q);
  int pd = tp_dup_to(p[0], tp_unused_fd());
  ASSERT_GE(pd, 0);
  int qd = tp_dup_to(q[0], tp_unused_fd());
  ASSERT_GE(qd, 0);
  struct tp_forever f = { qd, -2, 0 };
  tp_thread *ft = tp_thread_start(tp_poll_forever, &f);
  static const int timeouts[4] = { 0, 1, 10, 30 };
  struct stresser s[4];
  tp_thread *t[4];
  for (int i = 0; i < 4; i++) {
    s[i].fds[0] = p[0];
    s[i].fds[1] = q[0];
    s[i].fds[2] = pd;
    s[i].fds[3] = qd;
    s[i].timeout = timeouts[i];
    s[i].calls = s[i].bad = 0;
    t[i] = tp_thread_start(stress_main, &s[i]);
  }
  /* Data comes and goes on p while the threads poll. */
  for (int i = 0; i < 20; i++) {
    ASSERT_EQ(tp_write(p[1], "x", 1), 1);
    tp_sleep_ms(3);
    char c;
    ASSERT_EQ(tp_read(p[0], &c, 1), 1);
    tp_sleep_ms(7);
  }
  for (int i = 0; i < 4; i++) {
    tp_thread_join(t[i]);
    ASSERT_EQ(s[i].calls, 40);
    ASSERT_EQ(s[i].bad, 0);
  }
  ASSERT_EQ(f.result, -2);
  ASSERT_EQ(tp_write(q[1], "y", 1), 1);
  tp_thread_join(ft);
  ASSERT_EQ(f.result, 1);
  ASSERT_EQ(f.revents, POLLIN);
  tp_close(pd);
  tp_close(qd);
  tp_close(p[0]);
  tp_close(p[1]);
  tp_close(q[0]);
  tp_close(q[1]);
}

/* One thread writes a byte to a pipe and, a millisecond later, reads it
 * back, over and over, while another polls the read end with timeout 0:
 * every answer is "readable" or "not ready", never a hang-up, as the writer
 * stays open throughout. (The select backend took a pipe drained between
 * its select and its byte count for one whose writer had gone. Without the
 * pause, a writer that drains at once can still fool it: see
 * docs/deviations.md.) Bounded: 3000 calls; the writer runs until they are
 * done. */
struct drainer {
  int fds[2];
  atomic_int stop;
  int failed;
};

static void write_and_drain(void *arg) {
  struct drainer *d = arg;
  char c;
  while (!d->stop) {
    if (tp_write(d->fds[1], "x", 1) != 1) {
      d->failed = 1;
      break;
    }
    tp_sleep_ms(1);
    if (tp_read(d->fds[0], &c, 1) != 1) {
      d->failed = 1;
      break;
    }
  }
}

TEST(pipe_drained_by_other_thread_is_never_hup) {
  struct drainer d;
  tp_pipe(d.fds);
  d.stop = 0;
  d.failed = 0;
  tp_thread *t = tp_thread_start(write_and_drain, &d);
  int bad = 0, bad_result = 0, bad_revents = 0;
  for (int i = 0; i < 3000; i++) {
    struct pollfd p;
    tp_pfd(&p, d.fds[0], POLLIN);
    int r = tp_poll(&p, 1, 0);
    if (r != (p.revents != 0) || (p.revents != 0 && p.revents != POLLIN)) {
      bad++;
      bad_result = r;
      bad_revents = p.revents;
    }
  }
  d.stop = 1;
  tp_thread_join(t);
  ASSERT_EQ(d.failed, 0);
  ASSERT_EQ(bad_revents, 0);
  ASSERT_EQ(bad_result, 0);
  ASSERT_EQ(bad, 0);
  tp_close(d.fds[0]);
  tp_close(d.fds[1]);
}

/* A descriptor and its duplicate in one call, both idle, then both made
 * readable by one write; and a second pipe beside them whose handle is
 * the only one to its pipe. On Windows the call must start one zero-byte
 * read for the pipe and its duplicate, not two (the second would queue for
 * the file-object lock, where no cancel reaches it; the lock model ends the
 * test if it starts), while the sole handle is compared only with other
 * calls' reads. Both pipes are polled through several calls in a row. */
TEST(pipe_and_dup_in_one_call) {
  int p[2], q[2];
  tp_pipe(p);
  tp_pipe(q);
  int d = tp_dup_to(p[0], tp_unused_fd());
  ASSERT_GE(d, 0);
  for (int round = 0; round < 3; round++) {
    struct pollfd fd[3];
    tp_pfd(&fd[0], q[0], POLLIN);
    tp_pfd(&fd[1], p[0], POLLIN);
    tp_pfd(&fd[2], d, POLLIN);
    ASSERT_EQ(tp_poll(fd, 3, 50), 0);
    struct tp_later l;
    tp_thread *w = tp_after(&l, p[1], 50, TP_WRITE_BYTE);
    /* The strategies that check in a loop may see the byte arrive between
     * the two entries of the pipe: one or both are reported, each POLLIN. */
    int r = tp_poll(fd, 3, 5000);
    tp_thread_join(w);
    ASSERT_GE(r, 1);
    ASSERT_EQ(fd[0].revents, 0);
    ASSERT_EQ(r, (fd[1].revents == POLLIN) + (fd[2].revents == POLLIN));
    ASSERT_EQ(fd[1].revents | fd[2].revents, POLLIN);
    ASSERT_EQ(tp_poll(fd, 3, 0), 2);
    ASSERT_EQ(fd[0].revents, 0);
    ASSERT_EQ(fd[1].revents, POLLIN);
    ASSERT_EQ(fd[2].revents, POLLIN);
    char c;
    ASSERT_EQ(tp_read(d, &c, 1), 1);
    ASSERT_EQ(c, 'w');
  }
  tp_close(d);
  tp_close(p[0]);
  tp_close(p[1]);
  tp_close(q[0]);
  tp_close(q[1]);
}
