/* SPDX-License-Identifier: MIT */
/* Waiting and waking: each case makes a descriptor ready (or not) while the
 * call waits, from another thread, and checks the exact result. */
#include <errno.h>
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

TEST(socket_wakes_on_send) {
  int s[2];
  tp_tcp_pair(s);
  struct pollfd fd;
  tp_pfd(&fd, s[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 0);
  ASSERT_EQ(fd.revents, 0);
  struct tp_later l;
  tp_thread *t = tp_after(&l, s[1], 50, TP_SEND_BYTE);
  ASSERT_EQ(tp_poll(&fd, 1, -1), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  tp_thread_join(t);
  char c;
  ASSERT_EQ(tp_recv(s[0], &c, 1), 1);
  ASSERT_EQ(c, 's');
  /* A connected socket with room is writable. */
  tp_pfd(&fd, s[0], POLLIN | POLLOUT);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 1);
  ASSERT_EQ(fd.revents, POLLOUT);
  tp_close(s[0]);
  tp_close(s[1]);
}

TEST(socket_peer_shutdown_is_readable) {
  int s[2];
  tp_tcp_pair(s);
  struct pollfd fd;
  tp_pfd(&fd, s[0], POLLIN);
  struct tp_later l;
  tp_thread *t = tp_after(&l, s[1], 50, TP_SHUTDOWN_WR);
  /* Linux: end-of-file is POLLIN; POLLHUP needs both directions shut. */
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  tp_thread_join(t);
  char c;
  ASSERT_EQ(tp_recv(s[0], &c, 1), 0);
  /* The other direction still works. */
  ASSERT_EQ(tp_send(s[0], "r", 1), 1);
  ASSERT_EQ(tp_recv(s[1], &c, 1), 1);
  tp_close(s[0]);
  tp_close(s[1]);
}

TEST(socket_listener_pending_connection) {
  int port;
  int l = tp_tcp_listener(&port);
  struct pollfd fd;
  tp_pfd(&fd, l, POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 0);
  struct tp_later lt;
  tp_thread *t = tp_after(&lt, port, 50, TP_CONNECT_TO);
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  tp_thread_join(t);
  tp_close(tp_tcp_accept(l));
  tp_close(l);
}

/* Linux's tcp_poll gives a socket in TCP_CLOSE POLLHUP (and POLLOUT): a
 * wait on a socket nobody connected returns at once, not at its timeout. */
TEST(socket_never_connected_is_hup) {
  int s = tp_tcp_socket();
  struct pollfd fd;
  tp_pfd(&fd, s, POLLIN | POLLOUT);
  ASSERT_EQ(tp_poll(&fd, 1, 10000), 1);
  ASSERT_EQ(fd.revents, POLLOUT | POLLHUP);
  tp_pfd(&fd, s, POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 10000), 1);
  ASSERT_EQ(fd.revents, POLLHUP);
  tp_close(s);
}

TEST(socket_connect_refused) {
  int port;
  int l = tp_tcp_listener(&port);
  tp_close(l); /* nothing listens on port now */
  int c = tp_tcp_connect_nb(port);
  struct pollfd fd;
  tp_pfd(&fd, c, POLLIN | POLLOUT);
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLIN | POLLOUT | POLLERR | POLLHUP);
  tp_close(c);
}

TEST(socket_connect_completes_pollout) {
  int port;
  int l = tp_tcp_listener(&port);
  int c = tp_tcp_connect_nb(port);
  struct pollfd fd;
  tp_pfd(&fd, c, POLLOUT);
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLOUT);
  int a = tp_tcp_accept(l);
  tp_close(a);
  tp_close(c);
  tp_close(l);
}

TEST(socket_reset_by_peer) {
  int s[2];
  tp_tcp_pair(s);
  tp_close_reset(s[1]);
  struct pollfd fd;
  tp_pfd(&fd, s[0], POLLIN | POLLOUT);
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLIN | POLLOUT | POLLERR | POLLHUP);
  tp_close(s[0]);
}

TEST(socket_oob_pollpri) {
  int s[2];
  tp_tcp_pair(s);
  struct pollfd fd;
  tp_pfd(&fd, s[0], POLLPRI);
  ASSERT_EQ(tp_poll(&fd, 1, 0), 0);
  ASSERT_EQ(tp_send_oob(s[1], "!", 1), 1);
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLPRI);
  tp_close(s[0]);
  tp_close(s[1]);
}

/* Waiting must not change the socket's mode (WSAEventSelect would have made
 * it non-blocking for good). */
TEST(socket_blocking_mode_preserved) {
  int s[2];
  tp_tcp_pair(s);
  struct pollfd fd;
  tp_pfd(&fd, s[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 20), 0);
  ASSERT_EQ(tp_socket_is_nonblocking(s[0]), 0);
  tp_socket_set_nonblocking(s[0], 1);
  ASSERT_EQ(tp_poll(&fd, 1, 20), 0);
  ASSERT_EQ(tp_socket_is_nonblocking(s[0]), 1);
  tp_socket_set_nonblocking(s[0], 0);
  struct tp_later l;
  tp_thread *t = tp_after(&l, s[1], 30, TP_SEND_BYTE);
  ASSERT_EQ(tp_poll(&fd, 1, -1), 1);
  tp_thread_join(t);
  char c;
  ASSERT_EQ(tp_recv(s[0], &c, 1), 1);
  ASSERT_EQ(tp_socket_is_nonblocking(s[0]), 0);
  tp_close(s[0]);
  tp_close(s[1]);
}

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
