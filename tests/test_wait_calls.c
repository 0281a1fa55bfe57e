/* SPDX-License-Identifier: MIT */
/* Waiting and waking, the call as a whole: timeouts, every kind in one
 * call, duplicate entries, 4096 entries, and several threads calling at
 * once. */
#include <errno.h>

#include "test.h"

TEST(timeout_positive_never_early) {
  int p[2];
  tp_pipe(p);
  int s[2];
  tp_tcp_pair(s);
  struct pollfd fds[2];
  tp_pfd(&fds[0], p[0], POLLIN);
  tp_pfd(&fds[1], s[0], POLLIN);
  const int timeouts[] = { 1, 7, 30, 100 };
  for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
    double start = tp_now_ms();
    ASSERT_EQ(tp_poll(fds, 2, timeouts[i]), 0);
    ASSERT_GE(tp_now_ms() - start, timeouts[i]);
    ASSERT_EQ(fds[0].revents, 0);
    ASSERT_EQ(fds[1].revents, 0);
  }
  tp_close(p[0]);
  tp_close(p[1]);
  tp_close(s[0]);
  tp_close(s[1]);
}

TEST(timeout_wakes_before_deadline_on_data) {
  int p[2];
  tp_pipe(p);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  struct tp_later l;
  tp_thread *t = tp_after(&l, p[1], 30, TP_WRITE_BYTE);
  /* The data, not the 60 s timeout, ends the wait (CTest's limit of 120 s
   * would catch a call that waited it out). */
  ASSERT_EQ(tp_poll(&fd, 1, 60000), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  tp_thread_join(t);
  tp_close(p[0]);
  tp_close(p[1]);
}

TEST(mixed_kinds_one_call) {
  int idle[2], busy[2], s[2];
  tp_pipe(idle);
  tp_pipe(busy);
  tp_tcp_pair(s);
  struct pollfd fds[6];
  tp_pfd(&fds[0], idle[0], POLLIN);
  tp_pfd(&fds[1], s[0], POLLIN);
  tp_pfd(&fds[2], -1, POLLIN);
  tp_pfd(&fds[3], busy[0], POLLIN);
  tp_pfd(&fds[4], tp_unused_fd(), POLLIN);
  tp_pfd(&fds[5], busy[1], POLLOUT);
  ASSERT_EQ(tp_poll(fds, 6, 0), 2);
  ASSERT_EQ(fds[4].revents, POLLNVAL);
  ASSERT_EQ(fds[5].revents, POLLOUT);
  /* Now wait on the idle ones only, and wake through the socket. */
  struct tp_later l;
  tp_thread *t = tp_after(&l, s[1], 40, TP_SEND_BYTE);
  ASSERT_EQ(tp_poll(fds, 4, -1), 1);
  ASSERT_EQ(fds[0].revents, 0);
  ASSERT_EQ(fds[1].revents, POLLIN);
  ASSERT_EQ(fds[2].revents, 0);
  ASSERT_EQ(fds[3].revents, 0);
  tp_thread_join(t);
  tp_close(idle[0]);
  tp_close(idle[1]);
  tp_close(busy[0]);
  tp_close(busy[1]);
  tp_close(s[0]);
  tp_close(s[1]);
}

TEST(duplicate_entries_each_reported) {
  int p[2];
  tp_pipe(p);
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  struct pollfd fds[3];
  tp_pfd(&fds[0], p[0], POLLIN);
  tp_pfd(&fds[1], p[0], POLLOUT);
  tp_pfd(&fds[2], p[0], POLLIN);
  ASSERT_EQ(tp_poll(fds, 3, 0), 2);
  ASSERT_EQ(fds[0].revents, POLLIN);
  ASSERT_EQ(fds[1].revents, 0);
  ASSERT_EQ(fds[2].revents, POLLIN);
  tp_close(p[0]);
  tp_close(p[1]);
}

/* At least 4096 entries in one call. Windows' msvcrt has at most 2048 C
 * runtime descriptors, so the entries cycle over fewer descriptors: pipe
 * read ends (watched for POLLIN), their write ends (nothing asked, so only
 * an error would report them) and sockets. */
#define MANY_ENTRIES 4096
#define MANY_PIPES 700
#define MANY_SOCKET_PAIRS 40
TEST(many_descriptors_4096) {
  tp_raise_fd_limit(2 * MANY_PIPES + 2 * MANY_SOCKET_PAIRS + 64);
  static int pipes[MANY_PIPES][2];
  static int socks[MANY_SOCKET_PAIRS][2];
  for (int i = 0; i < MANY_PIPES; i++)
    tp_pipe(pipes[i]);
  for (int i = 0; i < MANY_SOCKET_PAIRS; i++)
    tp_tcp_pair(socks[i]);
  static struct pollfd fds[MANY_ENTRIES];
  /* Entry i refers to: pipe read end, pipe write end or socket, in turn. */
  for (int i = 0; i < MANY_ENTRIES; i++) {
    switch (i % 3) {
    case 0:
      tp_pfd(&fds[i], pipes[(i / 3) % MANY_PIPES][0], POLLIN);
      break;
    case 1:
      tp_pfd(&fds[i], pipes[(i / 3) % MANY_PIPES][1], 0);
      break;
    default:
      tp_pfd(&fds[i], socks[(i / 3) % MANY_SOCKET_PAIRS][0], POLLIN);
      break;
    }
  }
  if (tp_backend == ANYPOLL_BACKEND_SELECT) {
    /* select() refuses descriptors beyond FD_SETSIZE (docs/deviations.md). */
    errno = 0;
    ASSERT_EQ(tp_poll(fds, MANY_ENTRIES, 0), -1);
    ASSERT_EQ(errno, EINVAL);
    for (int i = 0; i < MANY_PIPES; i++) {
      tp_close(pipes[i][0]);
      tp_close(pipes[i][1]);
    }
    for (int i = 0; i < MANY_SOCKET_PAIRS; i++) {
      tp_close(socks[i][0]);
      tp_close(socks[i][1]);
    }
    return;
  }
  ASSERT_EQ(tp_poll(fds, MANY_ENTRIES, 0), 0);

  /* Wake through one pipe from another thread: exactly its entries. */
  const int chosen = 567;
  struct tp_later l;
  tp_thread *t = tp_after(&l, pipes[chosen][1], 50, TP_WRITE_BYTE);
  int expected = 0;
  for (int i = 0; i < MANY_ENTRIES; i++)
    expected += i % 3 == 0 && (i / 3) % MANY_PIPES == chosen;
  /* The wait ends with some of the chosen pipe's entries (a scan that
   * races with the write may see it in only the later ones) and no other. */
  int n = tp_poll(fds, MANY_ENTRIES, -1);
  ASSERT_GE(n, 1);
  ASSERT_LE(n, expected);
  for (int i = 0; i < MANY_ENTRIES; i++) {
    int hit = i % 3 == 0 && (i / 3) % MANY_PIPES == chosen;
    if (!hit)
      ASSERT_EQ(fds[i].revents, 0);
  }
  tp_thread_join(t);
  /* Once the write is done, every entry of that pipe and no other. */
  ASSERT_EQ(tp_poll(fds, MANY_ENTRIES, 0), expected);
  for (int i = 0; i < MANY_ENTRIES; i++) {
    int hit = i % 3 == 0 && (i / 3) % MANY_PIPES == chosen;
    ASSERT_EQ(fds[i].revents, hit ? POLLIN : 0);
  }

  /* And through one socket. */
  char c;
  ASSERT_EQ(tp_read(pipes[chosen][0], &c, 1), 1);
  const int sock = 17;
  t = tp_after(&l, socks[sock][1], 50, TP_SEND_BYTE);
  expected = 0;
  for (int i = 0; i < MANY_ENTRIES; i++)
    expected += i % 3 == 2 && (i / 3) % MANY_SOCKET_PAIRS == sock;
  n = tp_poll(fds, MANY_ENTRIES, 10000);
  ASSERT_GE(n, 1);
  ASSERT_LE(n, expected);
  for (int i = 0; i < MANY_ENTRIES; i++) {
    int hit = i % 3 == 2 && (i / 3) % MANY_SOCKET_PAIRS == sock;
    if (!hit)
      ASSERT_EQ(fds[i].revents, 0);
  }
  tp_thread_join(t);
  ASSERT_EQ(tp_poll(fds, MANY_ENTRIES, 0), expected);
  for (int i = 0; i < MANY_ENTRIES; i++) {
    int hit = i % 3 == 2 && (i / 3) % MANY_SOCKET_PAIRS == sock;
    ASSERT_EQ(fds[i].revents, hit ? POLLIN : 0);
  }
  for (int i = 0; i < MANY_PIPES; i++) {
    tp_close(pipes[i][0]);
    tp_close(pipes[i][1]);
  }
  for (int i = 0; i < MANY_SOCKET_PAIRS; i++) {
    tp_close(socks[i][0]);
    tp_close(socks[i][1]);
  }
}

/* Eight threads wait at once on overlapping descriptors; each write wakes
 * every thread that waits on that pipe. */
#define CALLERS 8
struct caller {
  int *fds;
  int count;
  int rounds;
  int woken;
};

static void caller_main(void *arg) {
  struct caller *c = arg;
  struct pollfd fds[4];
  for (int r = 0; r < c->rounds; r++) {
    for (int i = 0; i < c->count; i++)
      tp_pfd(&fds[i], c->fds[i], POLLIN);
    int n = tp_poll(fds, (anypoll_nfds_t)c->count, 10000);
    ASSERT_GE(n, 0);
    c->woken += n > 0;
    tp_sleep_ms(1);
  }
}

TEST(concurrent_callers) {
  int p[4][2];
  for (int i = 0; i < 4; i++)
    tp_pipe(p[i]);
  int sets[CALLERS][2];
  struct caller callers[CALLERS];
  tp_thread *threads[CALLERS];
  for (int i = 0; i < CALLERS; i++) {
    /* Thread i waits on pipes i%4 and (i+1)%4: each pipe has 4 waiters. */
    sets[i][0] = p[i % 4][0];
    sets[i][1] = p[(i + 1) % 4][0];
    callers[i].fds = sets[i];
    callers[i].count = 2;
    callers[i].rounds = 20;
    callers[i].woken = 0;
    threads[i] = tp_thread_start(caller_main, &callers[i]);
  }
  /* Keep every pipe readable until all callers are done; each call then
   * returns at once or wakes on data. */
  tp_sleep_ms(30);
  for (int i = 0; i < 4; i++)
    ASSERT_EQ(tp_write(p[i][1], "c", 1), 1);
  for (int i = 0; i < CALLERS; i++)
    tp_thread_join(threads[i]);
  for (int i = 0; i < CALLERS; i++)
    ASSERT_EQ(callers[i].woken, callers[i].rounds);
  for (int i = 0; i < 4; i++) {
    tp_close(p[i][0]);
    tp_close(p[i][1]);
  }
}
