/* SPDX-License-Identifier: MIT */
/* The watch set's Windows backend, on what only Windows has: a helper read
 * shared with anypoll_poll under the lock model, overlapped pipes, and a
 * socket closed before its del, and a synchronous pipe closed before its
 * del, which the lock model forbids. Through the backend's table, as the front
 * end calls it once it has checked the arguments (test_set.c covers the
 * public API on every platform). */
#include <winsock2.h>
#include <windows.h>
#include <fcntl.h>
#include <io.h>
#include <string.h>
#include <tlhelp32.h>

#include "set.h"
#include "test.h"
#include "win32/win.h"

#define B anypoll__set_default_backend

/* A new set of this backend with a new pipe's read end p[0] registered for
 * POLLIN. tp_pipe's handles are inheritable: without ANYPOLL_UNSHARED the
 * set would park no read on it (set_pipe.c, other processes). */
static void *set_with_unshared_pipe(int p[2]) {
  tp_pipe(p);
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, p[0], POLLIN | ANYPOLL_UNSHARED, NULL),
            0);
  return s;
}

/* Deletes p[0] from the set, destroys the set and closes the pipe. */
static void set_and_pipe_done(void *s, int p[2]) {
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, p[0], 0, NULL), 0);
  ASSERT_EQ(B.destroy(s), 0);
  _close(p[0]);
  _close(p[1]);
}

/* The set's read on a pipe is the one anypoll_poll uses: a poll of the same
 * pipe while the set's read is pending shares it (the lock model would end
 * the test on a second read, or on a query behind the read), and the poll's
 * return does not cancel it: the set still sees the write. */
TEST(set_win_read_shared_with_poll) {
  int p[2];
  void *s = set_with_unshared_pipe(p);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 50), 0);
  struct pollfd pf;
  tp_pfd(&pf, p[0], POLLIN);
  ASSERT_EQ(anypoll_poll(&pf, 1, 50), 0);
  ASSERT_EQ(_write(p[1], "x", 1), 1);
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].fd, p[0]);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT_EQ(anypoll_poll(&pf, 1, 0), 1);
  ASSERT_EQ(pf.revents, POLLIN);
  set_and_pipe_done(s, p);
}

/* An overlapped named pipe's read end: waited on with an overlapped read,
 * level-triggered, and POLLHUP once the client is gone. */
TEST(set_win_overlapped_pipe) {
  HANDLE cli;
  int fd = tp_overlapped_pipe("set", &cli);
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, fd, POLLIN, (void *)9), 0);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 100), 0);
  DWORD done;
  ASSERT(WriteFile(cli, "z", 1, &done, NULL) && done == 1);
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT(ev[0].data == (void *)9);
  ASSERT_EQ(B.wait(s, ev, 4, 0), 1); /* still there: reported again */
  ASSERT(CloseHandle(cli));
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].events, (unsigned)(POLLIN | POLLHUP));
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, fd, 0, NULL), 0);
  ASSERT_EQ(B.destroy(s), 0);
  _close(fd);
}

struct del_call {
  void *s;
  int fd;
  int result;
};

static DWORD WINAPI del_thread(void *arg) {
  struct del_call *d = arg;
  d->result = B.ctl(d->s, ANYPOLL__SET_DEL, d->fd, 0, NULL);
  return 0;
}

/* Runs the del of fd in a thread under a 5-second watchdog: the del's
 * result, or -2 when it had not returned by then (release then ends the
 * set's read, so that the thread ends before the test fails). */
static int del_bounded(void *s, int fd, void (*release)(void *), void *arg) {
  struct del_call d = {s, fd, -2};
  HANDLE t = CreateThread(NULL, 0, del_thread, &d, 0, NULL);
  ASSERT(t != NULL);
  DWORD waited = WaitForSingleObject(t, 5000);
  if (waited != WAIT_OBJECT_0) {
    release(arg);
    WaitForSingleObject(t, INFINITE);
  }
  CloseHandle(t);
  return waited == WAIT_OBJECT_0 ? d.result : -2;
}

static void release_handle(void *h) {
  DWORD done;
  WriteFile(h, "z", 1, &done, NULL);
}

static void release_fd(void *fd) { _write(*(int *)fd, "z", 1); }

/* Both closed-before-del cases: fd (data 1) and the pipe other's read end
 * (data 2) in a new set; once the set's read on fd is pending, fd is
 * closed, breaking delete-before-close. Its del must return (release(arg)
 * ends the set's read if not), and the other entry must still be reported.
 * The set is destroyed; the descriptors are the caller's to close. */
static void closed_before_del(int fd, const int other[2],
                              void (*release)(void *), void *arg) {
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, fd, POLLIN, (void *)1), 0);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, other[0], POLLIN, (void *)2), 0);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 50), 0); /* the set's read is pending */
  ASSERT_EQ(_close(fd), 0);           /* breaks delete-before-close */
  ASSERT_EQ(del_bounded(s, fd, release, arg), 0);
  ASSERT_EQ(B.wait(s, ev, 4, 20), 0);
  ASSERT_EQ(_write(other[1], "x", 1), 1);
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].fd, other[0]);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT_EQ(B.destroy(s), 0);
}

/* An overlapped pipe's read end whose descriptor the program closed before
 * the del, while the pipe lives on through a second descriptor (_dup): the
 * del must not wait for the set's pending read to end by itself (data or
 * end-of-file), and the set's other entries keep working. */
TEST(set_win_overlapped_pipe_closed_before_del) {
  HANDLE cli;
  int fd = tp_overlapped_pipe("setdup", &cli);
  int fd2 = _dup(fd);
  ASSERT(fd2 >= 0);
  int p[2];
  tp_pipe(p);
  closed_before_del(fd, p, release_handle, cli);
  CloseHandle(cli);
  _close(fd2);
  _close(p[0]);
  _close(p[1]);
}

/* The same for an anypoll_pipe read end on the set's port: its read is
 * cancelled through the set's own handle, so the del returns at once. */
TEST(set_win_anypipe_closed_before_del) {
  int p[2];
  ASSERT_EQ(anypoll_pipe(p), 0);
  int fd2 = _dup(p[0]);
  ASSERT(fd2 >= 0);
  int q[2];
  tp_pipe(q);
  closed_before_del(p[0], q, release_fd, &p[1]);
  _close(fd2);
  _close(p[1]);
  _close(q[0]);
  _close(q[1]);
}

/* An anypoll_pipe read end that was the pipe's only handle at add: the
 * set's read goes through the program's handle (so that a close ends it).
 * _dup'd after the add and closed before the del, the pipe lives on and the
 * read can no longer be cancelled: the del must not wait for it, the set
 * keeps working, and once data comes the read's packet is collected; a
 * second such read, never ended, must not hold up the set's free. */
TEST(set_win_anypipe_dup_after_add_closed_before_del) {
  int p[2], q[2], x[2];
  ASSERT_EQ(anypoll_pipe(p), 0);
  ASSERT_EQ(anypoll_pipe(x), 0);
  tp_pipe(q);
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, p[0], POLLIN, (void *)1), 0);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, x[0], POLLIN, (void *)3), 0);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, q[0], POLLIN | ANYPOLL_UNSHARED,
                  (void *)2), 0);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 50), 0); /* the reads are pending */
  int fd2 = _dup(p[0]), xd2 = _dup(x[0]);
  ASSERT(fd2 >= 0 && xd2 >= 0);
  ASSERT_EQ(_close(p[0]), 0);
  ASSERT_EQ(_close(x[0]), 0);
  ASSERT_EQ(del_bounded(s, p[0], release_fd, &p[1]), 0);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, x[0], 0, NULL), 0);
  ASSERT_EQ(B.wait(s, ev, 4, 20), 0);
  ASSERT_EQ(_write(q[1], "x", 1), 1);
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].fd, q[0]);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  /* The deleted read's packet: taken and dropped. */
  ASSERT_EQ(_write(p[1], "y", 1), 1);
  char c;
  ASSERT_EQ(_read(q[0], &c, 1), 1);
  ASSERT_EQ(B.wait(s, ev, 4, 100), 0);
  ASSERT_EQ(B.destroy(s), 0); /* x's read is still pending */
  _close(fd2);
  _close(xd2);
  _close(p[1]);
  _close(x[1]);
  _close(q[0]);
  _close(q[1]);
}

/* A socket closed before its del: reported POLLNVAL by every wait until
 * the del, beside a ready pipe in the same wait; nothing hangs. */
TEST(set_win_socket_closed_before_del) {
  int t[2], p[2];
  tp_tcp_pair(t);
  tp_pipe(p);
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, t[0], POLLIN, (void *)1), 0);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, p[0], POLLIN, (void *)2), 0);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 50), 0);
  ASSERT_EQ(closesocket((SOCKET)_get_osfhandle(t[0])), 0);
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].fd, t[0]);
  ASSERT_EQ(ev[0].events, (unsigned)POLLNVAL);
  ASSERT_EQ(_write(p[1], "x", 1), 1);
  /* The pipe's readiness reaches the port through its helper read's post,
   * which may land after a wait has returned the closed socket alone
   * (docs/deviations.md, "The watch set on Windows"); once it has come,
   * both are reported by every wait. */
  double until = tp_now_ms() + 5000;
  for (;;) {
    ASSERT_LT(tp_now_ms(), until);
    int n = B.wait(s, ev, 4, 5000);
    ASSERT_GE(n, 1);
    ASSERT_EQ(ev[0].fd == t[0] ? ev[0].events : ev[n - 1].events,
              (unsigned)POLLNVAL);
    if (n == 2)
      break;
    ASSERT_EQ(ev[0].fd, t[0]);
  }
  for (int round = 0; round < 3; round++) {
    ASSERT_EQ(B.wait(s, ev, 4, 5000), 2);
    unsigned seen = 0;
    for (int i = 0; i < 2; i++)
      seen |= ev[i].fd == t[0] ? (ev[i].events == POLLNVAL) * 1u
                               : (ev[i].events == POLLIN) * 2u;
    ASSERT_EQ(seen, 3u);
  }
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, t[0], 0, NULL), 0);
  ASSERT_EQ(B.destroy(s), 0);
  _close(p[0]);
  _close(p[1]);
  _close(t[1]);
}

/* The threads of this process now (the toolhelp snapshot). */
static int thread_count(void) {
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  ASSERT(snap != INVALID_HANDLE_VALUE);
  THREADENTRY32 te;
  te.dwSize = sizeof te;
  int n = 0;
  if (Thread32First(snap, &te)) {
    do {
      if (te.th32OwnerProcessID == GetCurrentProcessId())
        n++;
    } while (Thread32Next(snap, &te));
  }
  CloseHandle(snap);
  return n;
}

#define ANYPIPES 32

/* anypoll_pipe's read ends wait on the set's port: 32 of them, idle and
 * armed, start no thread at all (a synchronous pipe would park a helper
 * each, an overlapped one of the caller's a thread-pool wait), and a write
 * to one is reported with the bits anypoll_poll gives. */
TEST(set_win_anypipe_no_helper_thread) {
  int p[ANYPIPES][2];
  void *s = B.create();
  ASSERT(s != NULL);
  struct anypoll_event ev[4];
  /* One first, so that whatever a first wait sets up is counted before. */
  ASSERT_EQ(anypoll_pipe(p[0]), 0);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, p[0][0], POLLIN, NULL), 0);
  ASSERT_EQ(B.wait(s, ev, 4, 20), 0);
  int before = thread_count();
  for (int i = 1; i < ANYPIPES; i++) {
    ASSERT_EQ(anypoll_pipe(p[i]), 0);
    ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, p[i][0], POLLIN, NULL), 0);
  }
  ASSERT_EQ(B.wait(s, ev, 4, 50), 0);
  ASSERT_EQ(thread_count(), before);
  ASSERT_EQ(_write(p[7][1], "x", 1), 1);
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].fd, p[7][0]);
  struct pollfd pf;
  tp_pfd(&pf, p[7][0], POLLIN);
  ASSERT_EQ(anypoll_poll(&pf, 1, 0), 1);
  ASSERT_EQ(ev[0].events, (unsigned)(unsigned short)pf.revents);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT_EQ(thread_count(), before);
  char c;
  ASSERT_EQ(anypoll_read(p[7][0], &c, 1), 1);
  ASSERT_EQ(B.wait(s, ev, 4, 20), 0);
  ASSERT_EQ(B.destroy(s), 0);
  for (int i = 0; i < ANYPIPES; i++) {
    _close(p[i][0]);
    _close(p[i][1]);
  }
}

/* A read end belongs to one port for its life: in a second set at the same
 * time it takes the overlapped path (a thread-pool wait), and both sets
 * see the write. After a del from the first set, a third set can take it
 * onto its port again where the system ends associations (Windows 8.1 and
 * later; under Wine it keeps the overlapped path). */
TEST(set_win_anypipe_in_two_sets) {
  int p[2];
  ASSERT_EQ(anypoll_pipe(p), 0);
  void *a = B.create(), *b = B.create();
  ASSERT(a != NULL && b != NULL);
  ASSERT_EQ(B.ctl(a, ANYPOLL__SET_ADD, p[0], POLLIN, (void *)1), 0);
  ASSERT_EQ(B.ctl(b, ANYPOLL__SET_ADD, p[0], POLLIN, (void *)2), 0);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(a, ev, 4, 20), 0);
  ASSERT_EQ(B.wait(b, ev, 4, 20), 0);
  ASSERT_EQ(_write(p[1], "x", 1), 1);
  ASSERT_EQ(B.wait(a, ev, 4, 5000), 1);
  ASSERT(ev[0].data == (void *)1 && ev[0].events == (unsigned)POLLIN);
  ASSERT_EQ(B.wait(b, ev, 4, 5000), 1);
  ASSERT(ev[0].data == (void *)2 && ev[0].events == (unsigned)POLLIN);
  char c;
  ASSERT_EQ(anypoll_read(p[0], &c, 1), 1);
  ASSERT_EQ(B.ctl(a, ANYPOLL__SET_DEL, p[0], 0, NULL), 0);
  ASSERT_EQ(B.destroy(a), 0);
  void *d = B.create();
  ASSERT(d != NULL);
  ASSERT_EQ(B.ctl(d, ANYPOLL__SET_ADD, p[0], POLLIN, (void *)3), 0);
  ASSERT_EQ(B.wait(d, ev, 4, 20), 0);
  ASSERT_EQ(B.wait(b, ev, 4, 20), 0);
  ASSERT_EQ(_write(p[1], "y", 1), 1);
  ASSERT_EQ(B.wait(d, ev, 4, 5000), 1);
  ASSERT(ev[0].data == (void *)3 && ev[0].events == (unsigned)POLLIN);
  ASSERT_EQ(B.wait(b, ev, 4, 5000), 1);
  ASSERT_EQ(B.destroy(b), 0);
  ASSERT_EQ(B.destroy(d), 0);
  _close(p[0]);
  _close(p[1]);
}

/* A program that reads an anypoll_pipe read end with an OVERLAPPED whose
 * event has no low bit sends its completion to the set's port, with the
 * set's key: the set drops that packet without touching it, and goes on
 * reporting the pipe. */
TEST(set_win_anypipe_foreign_packet_dropped) {
  int p[2];
  ASSERT_EQ(anypoll_pipe(p), 0);
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, p[0], POLLIN, NULL), 0);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 20), 0);
  HANDLE h = (HANDLE)_get_osfhandle(p[0]);
  OVERLAPPED ov;
  char got[2];
  HANDLE e = tp_own_overlapped_read(p[0], &ov, got);
  ASSERT_EQ(_write(p[1], "ab", 2), 2);
  ASSERT_EQ(WaitForSingleObject(e, 5000), WAIT_OBJECT_0);
  DWORD n;
  ASSERT(GetOverlappedResult(h, &ov, &n, FALSE) && n == 1);
  /* The foreign packet is in the port; what is left is reported. */
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT_EQ(anypoll_read(p[0], got, 2), 1);
  ASSERT_EQ(B.wait(s, ev, 4, 20), 0);
  CloseHandle(e);
  ASSERT_EQ(B.destroy(s), 0);
  _close(p[0]);
  _close(p[1]);
}

/* ---- Delete before close, enforced by the lock model ----------------------
 * A child process (this program, "--child set-close ORDER"; see
 * platform_win32.c) registers a synchronous pipe's read end, lets the set's
 * zero-byte read park on it, and closes it before its del: on Windows that
 * close waits for the read (the file-object lock) until data or end-of-file
 * comes. Wine lets the close through, so the lock model must end the child
 * with status 86 at the set's next look at the registration: a wait's
 * check, a del or the set's free. "del-first" keeps the rule and must end
 * normally (0). */

int tp_set_close_child(const char *order) {
  int p[2];
  tp_pipe(p);
  void *s = B.create();
  /* Promised unshared, so that the set parks its read (set_pipe.c). */
  if (s == NULL ||
      B.ctl(s, ANYPOLL__SET_ADD, p[0], POLLIN | ANYPOLL_UNSHARED, NULL) != 0)
    return 2;
  struct anypoll_event ev[4];
  if (B.wait(s, ev, 4, 50) != 0)
    return 3;
  Sleep(200); /* the helper's read is parked by now */
  if (strcmp(order, "del-first") == 0) {
    if (B.ctl(s, ANYPOLL__SET_DEL, p[0], 0, NULL) != 0)
      return 4;
    _close(p[0]);
    if (B.wait(s, ev, 4, 50) != 0 || B.destroy(s) != 0)
      return 5;
    _close(p[1]);
    return 0;
  }
  _close(p[0]); /* breaks the rule */
  if (strcmp(order, "wait") == 0)
    B.wait(s, ev, 4, 5000);
  else if (strcmp(order, "del") == 0)
    B.ctl(s, ANYPOLL__SET_DEL, p[0], 0, NULL);
  else if (strcmp(order, "free") == 0)
    B.destroy(s);
  else
    return 2;
  return 0; /* the model did not fire */
}

TEST(set_win_pipe_closed_before_del_model) {
  ASSERT_EQ(tp_child_status("set-close wait"), 86);
  ASSERT_EQ(tp_child_status("set-close del"), 86);
  ASSERT_EQ(tp_child_status("set-close free"), 86);
  ASSERT_EQ(tp_child_status("set-close del-first"), 0);
}

/* A packet the set posts can fail (PostQueuedCompletionStatus takes
 * non-paged pool): the wake-up must come all the same, later. A helper's
 * notification of a synchronous pipe whose post fails once: */
TEST(set_win_failed_post_retried) {
  int p[2];
  void *s = set_with_unshared_pipe(p);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 50), 0); /* the helper's read is parked */
  anypoll__test_post_fails = 1;
  ASSERT_EQ(_write(p[1], "x", 1), 1);
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].fd, p[0]);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT_EQ(anypoll__test_post_fails, 0); /* the failure did happen */
  set_and_pipe_done(s, p);
}

/* Several failed posts at once, and the retry's own posts failing again:
 * the retry lists those anew, retries them 10 ms on, and still posts the
 * rest in its first round. Every pipe is reported. */
TEST(set_win_failed_posts_relisted) {
  enum { N = 4 };
  int p[N][2];
  void *s = B.create();
  ASSERT(s != NULL);
  for (int i = 0; i < N; i++) {
    tp_pipe(p[i]);
    ASSERT_EQ(
        B.ctl(s, ANYPOLL__SET_ADD, p[i][0], POLLIN | ANYPOLL_UNSHARED, NULL),
        0);
  }
  struct anypoll_event ev[N];
  ASSERT_EQ(B.wait(s, ev, N, 50), 0);
  /* The N helpers' posts fail, then the first retry's first two. */
  anypoll__test_post_fails = N + 2;
  for (int i = 0; i < N; i++)
    ASSERT_EQ(_write(p[i][1], "x", 1), 1);
  int seen = 0;
  /* The waits report the pipes already posted again and again (level-
   * triggered) until the retry posts the others, 10 ms on. */
  ULONGLONG until = GetTickCount64() + 5000;
  while (seen != (1 << N) - 1 && GetTickCount64() < until) {
    int n = B.wait(s, ev, N, 5000);
    ASSERT(n >= 0);
    for (int k = 0; k < n; k++)
      for (int i = 0; i < N; i++)
        if (ev[k].fd == p[i][0]) {
          ASSERT_EQ(ev[k].events, (unsigned)POLLIN);
          seen |= 1 << i;
        }
    if (n == 0)
      break;
  }
  ASSERT_EQ(anypoll__test_post_fails, 0);
  ASSERT_EQ(seen, (1 << N) - 1);
  for (int i = 0; i < N; i++) {
    ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, p[i][0], 0, NULL), 0);
    _close(p[i][0]);
    _close(p[i][1]);
  }
  ASSERT_EQ(B.destroy(s), 0);
}

/* A wait in a thread of its own: the set, the timeout, then the result. */
struct wait_call {
  void *s;
  struct anypoll_event ev[4];
  int timeout;
  int result;
};

static DWORD WINAPI wait_thread(void *arg) {
  struct wait_call *w = arg;
  w->result = B.wait(w->s, w->ev, 4, w->timeout);
  return 0;
}

/* ...and an add that must wake a waiter (its entry is ready) whose wake-up
 * post fails once: the waiter still reports it, long before its timeout.
 * Then a set freed while a failed post is listed for its retry (the
 * second set) must neither hang nor touch freed memory. */
TEST(set_win_failed_wake_retried) {
  int idle[2], ready[2];
  tp_pipe(idle);
  tp_pipe(ready);
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, idle[0], POLLIN, NULL), 0);
  struct wait_call w;
  memset(&w, 0, sizeof w);
  w.s = s;
  w.timeout = 10000;
  w.result = -2;
  HANDLE t = CreateThread(NULL, 0, wait_thread, &w, 0, NULL);
  ASSERT(t != NULL);
  Sleep(200); /* the waiter sleeps in the port */
  ASSERT_EQ(_write(ready[1], "y", 1), 1);
  anypoll__test_post_fails = 1;
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, ready[0], POLLIN, (void *)5), 0);
  ASSERT_EQ(WaitForSingleObject(t, 8000), WAIT_OBJECT_0);
  CloseHandle(t);
  ASSERT_EQ(anypoll__test_post_fails, 0);
  ASSERT_EQ(w.result, 1);
  ASSERT_EQ(w.ev[0].fd, ready[0]);
  ASSERT(w.ev[0].data == (void *)5);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, idle[0], 0, NULL), 0);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, ready[0], 0, NULL), 0);
  ASSERT_EQ(B.destroy(s), 0);

  void *s2 = B.create();
  ASSERT(s2 != NULL);
  ASSERT_EQ(
      B.ctl(s2, ANYPOLL__SET_ADD, idle[0], POLLIN | ANYPOLL_UNSHARED, NULL),
      0);
  ASSERT_EQ(B.wait(s2, w.ev, 4, 50), 0);
  anypoll__test_post_fails = 1;
  ASSERT_EQ(_write(idle[1], "z", 1), 1);
  /* The helper's post fails and is listed; free the set before it is due. */
  for (int i = 0; i < 500 && anypoll__test_post_fails != 0; i++)
    Sleep(1);
  ASSERT_EQ(anypoll__test_post_fails, 0);
  ASSERT_EQ(B.ctl(s2, ANYPOLL__SET_DEL, idle[0], 0, NULL), 0);
  ASSERT_EQ(B.destroy(s2), 0);
  for (int i = 0; i < 2; i++) {
    _close(idle[i]);
    _close(ready[i]);
  }
}

/* ---- A zero-length message kept (issue 32) ---------------------------------
 * A zero-byte read on a message-type pipe completes by consuming a
 * zero-length message, which the program would then never read: the set
 * arms none there (anypoll_poll's rule, docs/deviations.md) and re-checks
 * the pipe instead. A writer sends "" then "hello" to a registered message
 * pipe whose read end the set has armed: the program's reads get 0 bytes,
 * then 5. Before the fix the set's zero-byte read (a helper's on the
 * synchronous handle, an overlapped one on the other) ate the empty
 * message: the first read got 5 bytes. */
static DWORD message_read(HANDLE h, int overlapped, char *buf, DWORD len) {
  DWORD n = 99;
  if (!overlapped) {
    ASSERT(ReadFile(h, buf, len, &n, NULL));
    return n;
  }
  OVERLAPPED ov;
  memset(&ov, 0, sizeof ov);
  ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL);
  ASSERT(ov.hEvent != NULL);
  if (!ReadFile(h, buf, len, NULL, &ov))
    ASSERT_EQ(GetLastError(), ERROR_IO_PENDING);
  ASSERT(GetOverlappedResult(h, &ov, &n, TRUE));
  CloseHandle(ov.hEvent);
  return n;
}

static void message_kept(int overlapped) {
  WCHAR name[80];
  wsprintfW(name, L"\\\\.\\pipe\\anypoll-setmsg-%lu-%d", GetCurrentProcessId(),
            overlapped);
  HANDLE srv = CreateNamedPipeW(
      name, PIPE_ACCESS_INBOUND | (overlapped ? FILE_FLAG_OVERLAPPED : 0),
      PIPE_TYPE_MESSAGE | PIPE_READMODE_MESSAGE | PIPE_WAIT, 1, 4096, 4096, 0,
      NULL);
  ASSERT(srv != INVALID_HANDLE_VALUE);
  HANDLE cli = CreateFileW(name, GENERIC_WRITE, 0, NULL, OPEN_EXISTING, 0,
                           NULL);
  ASSERT(cli != INVALID_HANDLE_VALUE);
  int fd = _open_osfhandle((intptr_t)srv, _O_RDONLY | _O_BINARY);
  ASSERT(fd >= 0);
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, fd, POLLIN, (void *)4), 0);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 100), 0); /* armed, idle */
  DWORD n = 1;
  ASSERT(WriteFile(cli, "", 0, &n, NULL));
  ASSERT_EQ(n, 0);
  ASSERT(WriteFile(cli, "hello", 5, &n, NULL));
  ASSERT_EQ(n, 5);
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1);
  ASSERT_EQ(ev[0].fd, fd);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT(ev[0].data == (void *)4);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, fd, 0, NULL), 0);
  char buf[16];
  ASSERT_EQ(message_read(srv, overlapped, buf, sizeof buf), 0);
  ASSERT_EQ(message_read(srv, overlapped, buf, sizeof buf), 5);
  ASSERT(memcmp(buf, "hello", 5) == 0);
  ASSERT_EQ(B.destroy(s), 0);
  CloseHandle(cli);
  _close(fd);
}

TEST(set_win_message_pipe_zero_length_message_kept) {
  message_kept(0);
  message_kept(1);
}

/* An anypoll_pipe read end closed before its del while the set had no read
 * pending on it (after a report, before the next wait), its descriptor and
 * handle value then taken by a synchronous pipe's read end: the next wait
 * must not issue a read on the new, synchronous handle, which would block
 * the waiting thread until that pipe had data, and reports the entry
 * POLLNVAL, as every closed entry until its del. (The 200 ms wait gets
 * 5 s; a write to the new pipe then ends a blocked read, so that the test
 * fails instead of hanging. Before the name check: blocked.) */
TEST(set_win_anypipe_closed_unarmed_value_reused) {
  int p[2];
  ASSERT_EQ(anypoll_pipe(p), 0);
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, p[0], POLLIN, (void *)1), 0);
  ASSERT_EQ(_write(p[1], "x", 1), 1);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 5000), 1); /* reported: no read pending */
  char c;
  ASSERT_EQ(anypoll_read(p[0], &c, 1), 1);
  intptr_t old = _get_osfhandle(p[0]);
  int closed = p[0];
  ASSERT_EQ(_close(p[0]), 0);
  int q[2];
  tp_pipe(q);
  ASSERT_EQ(q[0], closed);
  ASSERT_EQ(_get_osfhandle(q[0]), old);
  struct wait_call w = {s, {{0}}, 200, -2};
  HANDLE t = CreateThread(NULL, 0, wait_thread, &w, 0, NULL);
  ASSERT(t != NULL);
  DWORD waited = WaitForSingleObject(t, 5000);
  if (waited != WAIT_OBJECT_0) {
    _write(q[1], "z", 1);
    WaitForSingleObject(t, INFINITE);
  }
  CloseHandle(t);
  ASSERT_EQ(waited, (DWORD)WAIT_OBJECT_0);
  ASSERT_EQ(w.result, 1);
  ASSERT_EQ(w.ev[0].fd, closed);
  ASSERT_EQ(w.ev[0].events, (unsigned)POLLNVAL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, closed, 0, NULL), 0);
  ASSERT_EQ(B.destroy(s), 0);
  _close(q[0]);
  _close(q[1]);
  _close(p[1]);
}

/* The same with a read pending when the program closes the read end: the
 * close ends the set's read, and before its packet is checked the number
 * and handle value go to a new anypoll_pipe read end holding data. The
 * entry is POLLNVAL, under its own data pointer, and never reports the
 * new pipe's POLLIN (review: 'n=1 [fd3 ev=0x300 data=...1]', the new pipe
 * read as the old entry). */
TEST(set_win_anypipe_closed_armed_value_reused) {
  int p[2], q[2];
  ASSERT_EQ(anypoll_pipe(p), 0);
  void *s = B.create();
  ASSERT(s != NULL);
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_ADD, p[0], POLLIN, (void *)1), 0);
  struct anypoll_event ev[4];
  ASSERT_EQ(B.wait(s, ev, 4, 0), 0); /* the read is pending */
  intptr_t old = _get_osfhandle(p[0]);
  int closed = p[0];
  ASSERT_EQ(_close(p[0]), 0);
  ASSERT_EQ(anypoll_pipe(q), 0);
  ASSERT_EQ(q[0], closed);
  ASSERT_EQ(_get_osfhandle(q[0]), old);
  ASSERT_EQ(anypoll_write(q[1], "x", 1), 1);
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(B.wait(s, ev, 4, 2000), 1);
    ASSERT_EQ(ev[0].fd, closed);
    ASSERT_EQ(ev[0].events, (unsigned)POLLNVAL);
    ASSERT(ev[0].data == (void *)1);
  }
  ASSERT_EQ(B.ctl(s, ANYPOLL__SET_DEL, closed, 0, NULL), 0);
  ASSERT_EQ(B.destroy(s), 0);
  char c;
  ASSERT_EQ(anypoll_read(q[0], &c, 1), 1); /* the new pipe's byte is intact */
  _close(q[0]);
  _close(q[1]);
  _close(p[1]);
}
