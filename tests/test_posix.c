/* SPDX-License-Identifier: MIT */
/* POSIX only: terminals (pseudo-terminals), signals, and the select()
 * backend's own corner cases. Each case runs on every POSIX backend and
 * expects what the kernel's poll() gives. */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE /* openpty */
#endif
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "posix/posix.h"
#include "test.h"

/* ---- select backend: a descriptor closed between two rounds ------------- */

static int round_fd = -1;

static void close_between_rounds(void) {
  if (round_fd >= 0) {
    close(round_fd);
    round_fd = -1;
  }
}

/* A descriptor closed after the first check and before the wait is
 * POLLNVAL at once: the call must not block (with -1, for ever) on the
 * other entries. The select backend's first round checks without waiting;
 * its test hook closes the descriptor right after that round, so the next
 * select() fails with EBADF. Other backends see it closed before the call.
 * The pipe gets a byte only after 1 s: a call that waited reports 2. */
TEST(closed_between_rounds_pollnval) {
  int a[2], b[2];
  tp_pipe(a);
  tp_pipe(b);
  struct pollfd fds[2];
  tp_pfd(&fds[0], a[0], POLLIN);
  tp_pfd(&fds[1], b[0], POLLIN);
  if (tp_backend == ANYPOLL_BACKEND_SELECT) {
    round_fd = a[0];
    anypoll__test_select_between_rounds = close_between_rounds;
  } else {
    tp_close(a[0]);
  }
  struct tp_later later;
  tp_thread *t = tp_after(&later, b[1], 1000, TP_WRITE_BYTE);
  ASSERT_EQ(tp_poll(fds, 2, -1), 1);
  ASSERT_EQ(fds[0].revents, POLLNVAL);
  ASSERT_EQ(fds[1].revents, 0);
  ASSERT_EQ(round_fd, -1); /* the hook ran (select) or was never armed */
  anypoll__test_select_between_rounds = NULL;
  tp_thread_join(t);
  tp_close(a[1]);
  tp_close(b[0]);
  tp_close(b[1]);
}

/* ---- No SIGPIPE from a probe --------------------------------------------
 * The select backend tells a hang-up of a connection-oriented socket by a
 * zero-byte send, which fails with EPIPE once the sending side is shut and,
 * without MSG_NOSIGNAL, raises SIGPIPE too. With SIGPIPE at its default
 * action, that kills the process. The test build anypoll_test_nosignal
 * forces the path of systems without MSG_NOSIGNAL (tests/CMakeLists.txt). */
TEST(shut_socket_probe_no_sigpipe) {
  ASSERT(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
  int s[2], u[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, u), 0);
  /* s[0]: data queued, then the peer gone. u[0]: shut for writing here,
   * then the peer gone, nothing queued. */
  ASSERT_EQ(send(s[1], "x", 1, 0), 1);
  tp_close(s[1]);
  ASSERT_EQ(shutdown(u[0], SHUT_WR), 0);
  tp_close(u[1]);
  struct pollfd fds[2];
  tp_pfd(&fds[0], s[0], POLLIN);
  tp_pfd(&fds[1], u[0], POLLIN);
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(tp_poll(fds, 2, 1000), 2);
    ASSERT_EQ(fds[0].revents, POLLIN | POLLHUP);
    ASSERT_EQ(fds[1].revents, POLLIN | POLLHUP);
  }
  /* Nothing left pending for the program either. */
  sigset_t pending;
  ASSERT_EQ(sigpending(&pending), 0);
  ASSERT_EQ(sigismember(&pending, SIGPIPE), 0);
  /* A SIGPIPE the program has pending already stays pending. */
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &pipe_only, &old), 0);
  ASSERT_EQ(raise(SIGPIPE), 0);
  ASSERT_EQ(tp_poll(fds, 2, 1000), 2);
  ASSERT_EQ(sigpending(&pending), 0);
  ASSERT_EQ(sigismember(&pending, SIGPIPE), 1);
  int sig = 0;
  ASSERT_EQ(sigwait(&pipe_only, &sig), 0);
  ASSERT_EQ(sig, SIGPIPE);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
  tp_close(s[0]);
  tp_close(u[0]);
}

/* ---- Thread cancellation ----------------------------------------------- */

#define CANCEL_ENTRIES 70 /* above the select backend's stack array (64) */

struct cancel_poll {
  struct pollfd fds[CANCEL_ENTRIES];
  atomic_int started;
};

static void *poll_forever_main(void *arg) {
  struct cancel_poll *c = arg;
  c->started = 1;
  (void)tp_poll(c->fds, CANCEL_ENTRIES, -1);
  return NULL;
}

/* A thread cancelled inside anypoll_poll (poll, select and nanosleep are
 * cancellation points) ends there and leaves nothing behind: with more
 * entries than the select backend keeps on its stack, its heap array is
 * freed by the cancellation (LeakSanitizer, in the sanitize preset, fails
 * the test on a leak). */
TEST(poll_thread_cancellation_frees_entries) {
  int p[2];
  tp_pipe(p);
  struct cancel_poll c;
  c.started = 0;
  for (int i = 0; i < CANCEL_ENTRIES; i++)
    tp_pfd(&c.fds[i], p[0], POLLIN);
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, poll_forever_main, &c), 0);
  while (!c.started)
    tp_sleep_ms(1);
  tp_sleep_ms(300); /* inside its wait by now: nothing is ever ready */
  ASSERT_EQ(pthread_cancel(t), 0);
  void *res;
  ASSERT_EQ(pthread_join(t, &res), 0);
  ASSERT(res == PTHREAD_CANCELED);
  /* The pipe is as it was: the cancelled call took nothing. */
  struct pollfd q;
  tp_pfd(&q, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&q, 1, 0), 0);
  ASSERT_EQ(q.revents, 0);
  tp_close(p[0]);
  tp_close(p[1]);
}

/* ---- Terminals ------------------------------------------------------------ */

/* What the kernel's poll() says of fd now. */
static short kernel_revents(int fd, short events) {
  struct pollfd p = { fd, events, 0 };
  ASSERT_EQ(poll(&p, 1, 0), p.revents != 0);
  return p.revents;
}

/* End-of-file typed on a terminal in canonical mode (Ctrl-D, VEOF): read()
 * returns 0 at once, so Linux's poll says POLLIN. select() says readable
 * while FIONREAD says 0, which is also how a gone peer looks. */
TEST(tty_eof_is_pollin) {
  int m, s;
  ASSERT_EQ(openpty(&m, &s, NULL, NULL, NULL), 0);
  struct termios t;
  ASSERT_EQ(tcgetattr(s, &t), 0);
  ASSERT(t.c_lflag & ICANON);
  char eof = (char)t.c_cc[VEOF];
  ASSERT_EQ(write(m, &eof, 1), 1);
  struct pollfd p;
  tp_pfd(&p, s, POLLIN);
  /* The line discipline takes the byte over asynchronously. */
  ASSERT_EQ(tp_poll(&p, 1, 5000), 1);
  ASSERT_EQ(p.revents, POLLIN);
  ASSERT_EQ(kernel_revents(s, POLLIN), POLLIN);
  char buf[8];
  ASSERT_EQ(read(s, buf, sizeof buf), 0);
  tp_pfd(&p, s, POLLIN);
  ASSERT_EQ(tp_poll(&p, 1, 0), 0);
  ASSERT_EQ(p.revents, 0);

  /* The same after part of a line: "ab" then VEOF ends the read with the
   * two bytes (FIONREAD 2). */
  ASSERT_EQ(write(m, "ab", 2), 2);
  ASSERT_EQ(write(m, &eof, 1), 1);
  tp_pfd(&p, s, POLLIN);
  ASSERT_EQ(tp_poll(&p, 1, 5000), 1);
  ASSERT_EQ(p.revents, POLLIN);
  ASSERT_EQ(read(s, buf, sizeof buf), 2);

  /* The master closed: the slave is hung up, and everything is reported. */
  tp_close(m);
  short want = kernel_revents(s, POLLIN | POLLOUT);
  ASSERT_EQ(want, POLLIN | POLLOUT | POLLERR | POLLHUP);
  tp_pfd(&p, s, POLLIN | POLLOUT);
  ASSERT_EQ(tp_poll(&p, 1, 1000), 1);
  ASSERT_EQ(p.revents, want);
  tp_close(s);
}

/* The master of a pseudo-terminal whose slave has closed reads like a
 * terminal in canonical mode (tcgetattr on a master answers with the
 * slave's settings) but is at a hang-up, not at an end-of-file: POLLHUP. */
TEST(pty_master_slave_closed_pollhup) {
  int m, s;
  ASSERT_EQ(openpty(&m, &s, NULL, NULL, NULL), 0);
  tp_close(s);
  short want = kernel_revents(m, POLLIN | POLLOUT);
  ASSERT_EQ(want & (POLLIN | POLLHUP), POLLHUP);
  struct pollfd p;
  tp_pfd(&p, m, POLLIN | POLLOUT);
  ASSERT_EQ(tp_poll(&p, 1, 1000), 1);
  ASSERT_EQ(p.revents, want);
  tp_close(m);
}
