/* SPDX-License-Identifier: MIT */
/* anypoll_poll's timeout and the cost of its back-off on Windows, counted
 * rather than timed (poll.c): entries without a wake-up source (message
 * pipes, write ends) are re-checked on a pause that grows with their
 * number, and a call that times out checks nothing after its deadline.
 * Windows only: Linux has no back-off and no such counters. */
#include <winsock2.h>
#include <windows.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>

#include "test.h"
#include "win32/win.h"

#define MSG_PIPES 200
#define BYTE_PIPES 64

/* The client end of a new message-type pipe, in message read mode: no read
 * of ours may be armed on it, so it is re-checked on the back-off. The
 * server end is left open (the writer stays) in *server. */
static int message_pipe(int i, HANDLE *server) {
  char name[96];
  snprintf(name, sizeof name, "\\\\.\\pipe\\anypoll-test-bound-%lu-%d",
           GetCurrentProcessId(), i);
  *server = CreateNamedPipeA(name, PIPE_ACCESS_DUPLEX,
                             PIPE_TYPE_MESSAGE | PIPE_READMODE_MESSAGE, 1,
                             512, 512, 0, NULL);
  ASSERT(*server != INVALID_HANDLE_VALUE);
  HANDLE c = CreateFileA(name, GENERIC_READ | GENERIC_WRITE, 0, NULL,
                         OPEN_EXISTING, 0, NULL);
  ASSERT(c != INVALID_HANDLE_VALUE);
  DWORD mode = PIPE_READMODE_MESSAGE;
  ASSERT(SetNamedPipeHandleState(c, &mode, NULL, NULL));
  int fd = _open_osfhandle((intptr_t)c, _O_BINARY);
  ASSERT(fd >= 0);
  return fd;
}

static HANDLE servers[MSG_PIPES];
static struct pollfd fds[MSG_PIPES + BYTE_PIPES];

static void open_message_pipes(void) {
  for (int i = 0; i < MSG_PIPES; i++)
    tp_pfd(&fds[i], message_pipe(i, &servers[i]), POLLIN);
}

static void close_message_pipes(void) {
  for (int i = 0; i < MSG_PIPES; i++) {
    tp_close(fds[i].fd);
    CloseHandle(servers[i]);
  }
}

/* An idle 1 s wait on 200 message pipes: each back-off round checks all
 * 200, and rounds are at least 0.5 ms per entry apart (100 ms), so at most
 * 10 rounds fit, plus the one that may straddle the deadline: 2,200 entry
 * checks. With a fixed 16 ms pause (before) a round came every 16 ms plus
 * its own cost: over 12,000 checks, and a round that took longer than the
 * pause meant no pause at all. */
TEST(poll_idle_message_pipes_recheck_budget) {
  open_message_pipes();
  ASSERT_EQ(tp_poll(fds, MSG_PIPES, 0), 0);
  anypoll__test_unarmed_checks = 0;
  ASSERT_EQ(tp_poll(fds, MSG_PIPES, 1000), 0);
  printf("entry checks in an idle 1 s wait on %d message pipes: %ld\n",
         MSG_PIPES, (long)anypoll__test_unarmed_checks);
  ASSERT_GT(anypoll__test_unarmed_checks, 0);
  ASSERT_LE(anypoll__test_unarmed_checks, 11 * MSG_PIPES);
  close_message_pipes();
}

/* A call that times out does not ask its back-off entries again after
 * its deadline (they were found not ready one pause before; asking 400
 * message pipes, two system calls each, took hundreds of milliseconds
 * under Wine on a loaded machine), alone or next to parked reads (byte
 * pipes). Data that comes during a wait is still reported. */
TEST(poll_timeout_no_backoff_checks_after_deadline) {
  open_message_pipes();
  int pipes[BYTE_PIPES][2];
  for (int i = 0; i < BYTE_PIPES; i++) {
    tp_pipe(pipes[i]);
    tp_pfd(&fds[MSG_PIPES + i], pipes[i][0], POLLIN);
  }
  anypoll__test_late_checks = 0;
  ASSERT_EQ(tp_poll(&fds[MSG_PIPES], BYTE_PIPES, 200), 0);
  ASSERT_EQ(tp_poll(fds, MSG_PIPES, 200), 0);
  ASSERT_EQ(tp_poll(fds, MSG_PIPES + BYTE_PIPES, 200), 0);
  printf("back-off entries checked after the deadline: %ld\n",
         (long)anypoll__test_late_checks);
  ASSERT_EQ(anypoll__test_late_checks, 0);

  DWORD n = 0;
  ASSERT(WriteFile(servers[MSG_PIPES / 2], "m", 1, &n, NULL));
  ASSERT_EQ(tp_poll(fds, MSG_PIPES + BYTE_PIPES, 5000), 1);
  ASSERT_EQ(fds[MSG_PIPES / 2].revents, POLLIN);
  ASSERT_EQ(tp_write(pipes[3][1], "b", 1), 1);
  ASSERT_EQ(tp_poll(&fds[MSG_PIPES], BYTE_PIPES, 5000), 1);
  ASSERT_EQ(fds[MSG_PIPES + 3].revents, POLLIN);
  for (int i = 0; i < BYTE_PIPES; i++) {
    tp_close(pipes[i][0]);
    tp_close(pipes[i][1]);
  }
  close_message_pipes();
}
