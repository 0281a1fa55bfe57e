/* SPDX-License-Identifier: MIT */
/* Waiting and waking on sockets: each case makes a TCP connection ready
 * (or not) while the call waits, from another thread, and checks the exact
 * result. */
#include "test.h"

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
