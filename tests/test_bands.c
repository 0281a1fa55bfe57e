/* SPDX-License-Identifier: MIT */
/* Events a socket never reports (Linux's tcp_poll sets neither POLLRDBAND
 * nor POLLWRBAND) asked alone, on a socket that is readable and writable:
 * the call must wait out its timeout asleep, not wake on the data or the
 * room it was not asked about and go round again. */
#include "test.h"

/* The historical strategies check in a loop by design (yield never
 * sleeps): for them only the result is checked. */
static int sleeps_while_waiting(void) {
  return tp_backend != ANYPOLL_BACKEND_SLEEP1 &&
         tp_backend != ANYPOLL_BACKEND_YIELD;
}

static void waits_asleep(int fd, short events) {
  struct pollfd p;
  tp_pfd(&p, fd, events);
  double cpu = tp_cpu_ms();
  ASSERT_EQ(tp_poll(&p, 1, 1000), 0);
  ASSERT_EQ(p.revents, 0);
  /* Asleep: well under 10% of one CPU over the second. */
  if (sleeps_while_waiting())
    ASSERT_LT(tp_cpu_ms() - cpu, 100);
}

TEST(socket_band_only_waits_asleep) {
  int s[2];
  tp_tcp_pair(s);
  ASSERT_EQ(tp_send(s[1], "abc", 3), 3);
  ASSERT(tp_wait_socket(s[0], 5000));
  waits_asleep(s[0], POLLRDBAND);
  waits_asleep(s[0], POLLWRBAND);
  /* Still readable and writable when asked as Linux reports it. */
  struct pollfd p;
  tp_pfd(&p, s[0], POLLRDNORM | POLLWRNORM);
  ASSERT_EQ(tp_poll(&p, 1, 1000), 1);
  ASSERT_EQ(p.revents, POLLRDNORM | POLLWRNORM);
  tp_close(s[0]);
  tp_close(s[1]);
}

/* Pipes and regular files: Linux's pipe_poll and a file's default mask give
 * POLLIN | POLLRDNORM and POLLOUT | POLLWRNORM, never a band bit, so the
 * band bits asked alone come back empty (Winsock's POLLIN includes
 * POLLRDBAND: a check that masked with POLLIN gave it back). */
static short check_now(int fd, short events) {
  struct pollfd p;
  tp_pfd(&p, fd, events);
  ASSERT_GE(tp_poll(&p, 1, 0), 0);
  return p.revents;
}

TEST(pipe_and_file_band_bits_as_linux) {
  int fds[2];
  tp_pipe(fds);
  ASSERT_EQ(tp_write(fds[1], "x", 1), 1);
  ASSERT_EQ(check_now(fds[0], POLLRDBAND), 0);
  ASSERT_EQ(check_now(fds[0], POLLRDNORM), POLLRDNORM);
  ASSERT_EQ(check_now(fds[0], POLLIN), POLLIN);
  ASSERT_EQ(check_now(fds[1], POLLWRBAND), 0);
  ASSERT_EQ(check_now(fds[1], POLLWRNORM), POLLWRNORM);
  tp_close(fds[0]);
  tp_close(fds[1]);

  int f = tp_temp_file(0);
  ASSERT_EQ(check_now(f, POLLRDBAND | POLLWRBAND), 0);
  ASSERT_EQ(check_now(f, POLLRDNORM | POLLWRNORM), POLLRDNORM | POLLWRNORM);
  ASSERT_EQ(check_now(f, POLLIN | POLLOUT), POLLIN | POLLOUT);
  tp_close(f);
}
