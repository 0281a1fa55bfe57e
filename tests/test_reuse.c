/* SPDX-License-Identifier: MIT */
/* A descriptor closed between two calls whose number comes back as another
 * kind of object. Whatever a backend remembers about an entry (its kind, a
 * pipe's mode, a socket's base handle) must not outlive the descriptor:
 * each call below waits (so every wake-up source is armed and disarmed),
 * then the number is given to something else and asked about again. */
#include <string.h>

#include "test.h"

/* A new descriptor takes the lowest number free (POSIX; the C runtime on
 * Windows does the same), and n is the lowest below: each object is made
 * right after n is closed, and lands on it. (A socket is not duplicated
 * onto n instead: closing the original would end its connection.) */
static void lands_on(int fd, int n) {
  ASSERT_EQ(fd, n);
}

/* A connected socket at n, its peer returned. */
static int socket_at(int n) {
  int port;
  int l = tp_tcp_listener(&port);
  int c = tp_tcp_connect_nb(port);
  ASSERT(tp_wait_socket(l, 5000));
  tp_close(n);
  lands_on(tp_tcp_accept(l), n);
  tp_close(l);
  return c;
}

static short poll_one(int fd, short events, int timeout, int want) {
  struct pollfd p;
  tp_pfd(&p, fd, events);
  ASSERT_EQ(tp_poll(&p, 1, timeout), want);
  return p.revents;
}

TEST(reuse_descriptor_changes_kind) {
  int p[2], q[2], r[2];
  tp_pipe(p);
  int n = p[0]; /* the number that changes kind */
  char buf[8];

  /* An idle pipe: the call arms a wait on it and times out. */
  ASSERT_EQ(poll_one(n, POLLIN, 20, 0), 0);

  /* A connected socket with data, then idle (its data read), waited on. */
  int peer = socket_at(n);
  ASSERT_EQ(tp_send(peer, "abc", 3), 3);
  ASSERT(tp_wait_socket(n, 5000));
  ASSERT_EQ(poll_one(n, POLLIN | POLLOUT, 1000, 1), POLLIN | POLLOUT);
  ASSERT_EQ(tp_recv(n, buf, sizeof buf), 3);
  ASSERT_EQ(poll_one(n, POLLIN, 20, 0), 0);

  /* A file. */
  tp_close(n);
  lands_on(tp_temp_file(0), n);
  ASSERT_EQ(poll_one(n, POLLIN | POLLOUT, 1000, 1), POLLIN | POLLOUT);

  /* A pipe's read end with data, then idle and waited on. */
  tp_close(n);
  tp_pipe(q);
  lands_on(q[0], n);
  ASSERT_EQ(tp_write(q[1], "x", 1), 1);
  ASSERT_EQ(poll_one(n, POLLIN | POLLOUT, 1000, 1), POLLIN);
  ASSERT_EQ(tp_read(n, buf, 1), 1);
  ASSERT_EQ(poll_one(n, POLLIN, 20, 0), 0);

  /* A socket that never connected: a hang-up, not an idle socket. */
  tp_close(n);
  lands_on(tp_tcp_socket(), n);
  ASSERT_EQ(poll_one(n, POLLIN | POLLOUT, 1000, 1), POLLOUT | POLLHUP);

  /* A pipe's write end, whose reader is open. */
  tp_pipe(r);
  tp_close(n);
  ASSERT_EQ(tp_dup_to(r[1], n), n);
  ASSERT_EQ(poll_one(n, POLLIN | POLLOUT, 1000, 1), POLLOUT);

  /* A socket whose peer has closed, then nothing at all. */
  tp_close(peer);
  peer = socket_at(n);
  tp_close(peer);
  ASSERT(tp_wait_socket(n, 5000));
  ASSERT_EQ(poll_one(n, POLLIN, 1000, 1), POLLIN);
  tp_close(n);
  ASSERT_EQ(poll_one(n, POLLIN, 1000, 1), POLLNVAL);

  tp_close(p[1]);
  tp_close(q[1]);
  tp_close(r[0]);
  tp_close(r[1]);
}

/* The same swaps while the number is one entry of several, with an idle
 * socket and an idle pipe beside it, so that entries are counted and
 * matched to their results by position. */
TEST(reuse_descriptor_in_mixed_call) {
  int p[2], idle_p[2], idle_s[2];
  tp_pipe(p);
  int n = p[0];
  tp_pipe(idle_p);
  tp_tcp_pair(idle_s);
  int peer = -1;
  struct pollfd fds[3];
  for (int round = 0; round < 4; round++) {
    /* round 0: n is an idle pipe; 1: a socket with data; 2: a file;
     * 3: a pipe with data */
    int q[2];
    if (round == 1) {
      peer = socket_at(n);
      ASSERT_EQ(tp_send(peer, "abc", 3), 3);
      ASSERT(tp_wait_socket(n, 5000));
    } else if (round == 2) {
      tp_close(n);
      lands_on(tp_temp_file(0), n);
    } else if (round == 3) {
      tp_close(n);
      tp_pipe(q);
      lands_on(q[0], n);
      ASSERT_EQ(tp_write(q[1], "x", 1), 1);
    }
    tp_pfd(&fds[0], idle_s[0], POLLIN);
    tp_pfd(&fds[1], n, POLLIN);
    tp_pfd(&fds[2], idle_p[0], POLLIN);
    int want = round == 0 ? 0 : 1;
    ASSERT_EQ(tp_poll(fds, 3, round == 0 ? 20 : 1000), want);
    ASSERT_EQ(fds[0].revents, 0);
    ASSERT_EQ(fds[1].revents, round == 0 ? 0 : POLLIN);
    ASSERT_EQ(fds[2].revents, 0);
    if (round == 3)
      tp_close(q[1]);
  }
  tp_close(n);
  tp_close(peer);
  tp_close(p[1]);
  tp_close(idle_p[0]);
  tp_close(idle_p[1]);
  tp_close(idle_s[0]);
  tp_close(idle_s[1]);
}
