/* SPDX-License-Identifier: MIT */
/* Windows only, the file-object lock: the lock model is live, full-duplex pipes keep
 * POLLOUT while another call's read is pending, read ends whose zero-byte
 * read cannot block are waited on without spinning, and closed descriptors
 * give POLLNVAL under a strict invalid-parameter handler. */
#include <winsock2.h>
#include <windows.h>
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "win32/win.h"

static int pipe_name(wchar_t *name, size_t n, const char *what) {
  static LONG serial;
  return _snwprintf(name, n, L"\\\\.\\pipe\\anypoll-lock-%lu-%hs-%ld",
                    GetCurrentProcessId(), what,
                    InterlockedIncrement(&serial));
}

/* ---- The lock model is live ----------------------------------------------
 * A child process (this program, "--child lock-model ORDER"; see
 * platform_win32.c) makes the forbidden call on purpose; the model must end
 * it with status 86. Without this, a suite linked to the library without
 * the model would pass on code that hangs on Windows. */

TEST(lock_model_fires_both_orders) {
  ASSERT_EQ(tp_child_status("lock-model call-after-read"), 86);
  ASSERT_EQ(tp_child_status("lock-model read-after-call"), 86);
}

/* ---- Full duplex ----------------------------------------------------------- */

/* A full-duplex named pipe: one thread waits for input on the server end
 * for ever, another asks the same end for POLLOUT. No read of ours is
 * armed on a synchronous handle that can write (the waiting thread
 * re-checks it on the back-off), so the write side can be asked and has
 * room; were a read of another call pending, the write side would count
 * as having room (pipe.c), as a write that waits is the lesser evil than a
 * writer held up for as long as the other call waits. */
TEST(duplex_pipe_pollout_while_other_thread_reads) {
  wchar_t name[96];
  pipe_name(name, 96, "duplex");
  HANDLE server = CreateNamedPipeW(
      name, PIPE_ACCESS_DUPLEX, PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT,
      1, 4096, 4096, 0, NULL);
  ASSERT(server != INVALID_HANDLE_VALUE);
  HANDLE client = CreateFileW(name, GENERIC_READ | GENERIC_WRITE, 0, NULL,
                              OPEN_EXISTING, 0, NULL);
  ASSERT(client != INVALID_HANDLE_VALUE);
  int fd = _open_osfhandle((intptr_t)server, _O_RDWR | _O_BINARY);
  ASSERT(fd >= 0);
  struct pollfd p;
  tp_pfd(&p, fd, POLLIN | POLLOUT);
  ASSERT_EQ(tp_poll(&p, 1, 0), 1);
  ASSERT_EQ(p.revents, POLLOUT);
  struct tp_forever f = { fd, -2, 0 };
  tp_thread *t = tp_thread_start(tp_poll_forever, &f);
  tp_sleep_ms(100);
  for (int i = 0; i < 3; i++) {
    tp_pfd(&p, fd, POLLIN | POLLOUT);
    ASSERT_EQ(tp_poll(&p, 1, 100), 1);
    ASSERT_EQ(p.revents, POLLOUT);
  }
  ASSERT_EQ(f.result, -2);
  DWORD n = 0;
  ASSERT(WriteFile(client, "d", 1, &n, NULL));
  tp_thread_join(t);
  ASSERT_EQ(f.result, 1);
  ASSERT_EQ(f.revents, POLLIN);
  CloseHandle(client);
  _close(fd);
}

/* ---- Read ends whose zero-byte read cannot block ---------------------------
 * Each waits 3 s with nothing to report: it must cost at most 30 ms of the
 * process's CPU (1%), where a spin costs most of the time. (Wine counts
 * process time in 10 ms ticks: over a 1 s wait the whole budget was one
 * tick, and a wait that cost a few milliseconds read 20 ms once in a loaded
 * make check.) Then data or a client arriving must still be noticed. */

static void wait_cheaply(int fd) {
  /* A helper thread first, on an ordinary pipe: making one is the pool's
   * one-time cost (about one clock tick of CPU under Wine, which counts
   * process time in 10 ms ticks), not the wait's. */
  int warm[2];
  tp_pipe(warm);
  struct pollfd p;
  tp_pfd(&p, warm[0], POLLIN);
  ASSERT_EQ(tp_poll(&p, 1, 1), 0);
  tp_close(warm[0]);
  tp_close(warm[1]);
  tp_pfd(&p, fd, POLLIN);
  double cpu0 = tp_cpu_ms(), t0 = tp_now_ms();
  ASSERT_EQ(tp_poll(&p, 1, 3000), 0);
  double cpu = tp_cpu_ms() - cpu0;
  printf("CPU during the 3 s wait: %.1f ms\n", cpu);
  ASSERT_EQ(p.revents, 0);
  ASSERT_GE(tp_now_ms() - t0, 2999);
  ASSERT_LE(cpu, 30);
}

struct later_write {
  HANDLE h;
};

static void write_later(void *arg) {
  struct later_write *l = arg;
  tp_sleep_ms(100);
  DWORD n = 0;
  ASSERT(WriteFile(l->h, "n", 1, &n, NULL));
  ASSERT_EQ(n, 1);
}

TEST(nowait_read_end_waits_without_spinning) {
  int p[2];
  tp_pipe(p);
  /* What os.set_blocking(fd, False) does to a pipe in Python on Windows. */
  DWORD mode = PIPE_READMODE_BYTE | PIPE_NOWAIT;
  ASSERT(SetNamedPipeHandleState((HANDLE)_get_osfhandle(p[0]), &mode, NULL,
                                 NULL));
  wait_cheaply(p[0]);
  struct later_write l = { (HANDLE)_get_osfhandle(p[1]) };
  tp_thread *t = tp_thread_start(write_later, &l);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  tp_thread_join(t);
  tp_close(p[0]);
  tp_close(p[1]);
}

static void listening_server(int overlapped) {
  wchar_t name[96];
  pipe_name(name, 96, overlapped ? "listen-ov" : "listen");
  HANDLE server = CreateNamedPipeW(
      name, PIPE_ACCESS_INBOUND | (overlapped ? FILE_FLAG_OVERLAPPED : 0),
      PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT, 1, 4096, 4096, 0, NULL);
  ASSERT(server != INVALID_HANDLE_VALUE);
  int fd = _open_osfhandle((intptr_t)server, _O_RDONLY | _O_BINARY);
  ASSERT(fd >= 0);
  /* No client yet: the zero-byte read fails at once with
   * ERROR_PIPE_LISTENING. */
  wait_cheaply(fd);
  HANDLE client = CreateFileW(name, GENERIC_WRITE, 0, NULL, OPEN_EXISTING, 0,
                              NULL);
  ASSERT(client != INVALID_HANDLE_VALUE);
  struct later_write l = { client };
  tp_thread *t = tp_thread_start(write_later, &l);
  struct pollfd p;
  tp_pfd(&p, fd, POLLIN);
  ASSERT_EQ(tp_poll(&p, 1, 5000), 1);
  ASSERT_EQ(p.revents, POLLIN);
  tp_thread_join(t);
  CloseHandle(client);
  _close(fd);
}

TEST(listening_server_waits_without_spinning) {
  listening_server(0);
}

TEST(listening_overlapped_server_waits_without_spinning) {
  listening_server(1);
}

/* ---- A strict C runtime ----------------------------------------------------
 * The UCRT's default invalid-parameter handler ends the process when
 * _get_osfhandle is given a descriptor that is not open; mingw's start-up
 * code installs a do-nothing one. This installs one that ends the process
 * (status 3), as a strict host would, and polls closed descriptors. Wine's
 * C runtimes never call the handler there; the lock-model library the tests
 * link does, as the UCRT would (src/win32/model.c). */

static void __cdecl aborting_handler(const wchar_t *expr, const wchar_t *func,
                                     const wchar_t *file, unsigned line,
                                     uintptr_t reserved) {
  (void)expr, (void)func, (void)file, (void)line, (void)reserved;
  fprintf(stderr, "invalid-parameter handler called\n");
  fflush(stderr);
  TerminateProcess(GetCurrentProcess(), 3);
}

TEST(closed_descriptor_pollnval_under_strict_handler) {
  int p[2];
  tp_pipe(p);
  int closed = tp_dup_to(p[0], tp_unused_fd());
  ASSERT_GE(closed, 0);
  tp_close(closed);
  _invalid_parameter_handler old =
      _set_invalid_parameter_handler(aborting_handler);
  struct pollfd fds[4];
  tp_pfd(&fds[0], closed, POLLIN);
  tp_pfd(&fds[1], p[0], POLLIN);
  tp_pfd(&fds[2], tp_unused_fd(), POLLIN | POLLOUT);
  tp_pfd(&fds[3], 4000, POLLIN);
  int r = tp_poll(fds, 4, 50);
  /* Still ours, and still in effect afterwards. */
  ASSERT(_get_invalid_parameter_handler() == aborting_handler);
  _set_invalid_parameter_handler(old);
  ASSERT_EQ(r, 3);
  ASSERT_EQ(fds[0].revents, POLLNVAL);
  ASSERT_EQ(fds[1].revents, 0);
  ASSERT_EQ(fds[2].revents, POLLNVAL);
  ASSERT_EQ(fds[3].revents, POLLNVAL);
  tp_close(p[0]);
  tp_close(p[1]);
}

/* ---- A stuck query holds up only its own file object ----------------------
 * A helper must not start its read while a call is querying the same file
 * object, but a query on another pipe must not hold it up: that query may
 * itself be stuck behind somebody else's read (another thread's blocking
 * ReadFile, a child's on an inherited handle) for as long as that read
 * lasts. The first version waited for every query on handles of the same
 * hash bucket of the watch table. Here a query is held open, through the
 * gate, on another pipe's read end whose handle falls in the same bucket as
 * the waited-on pipe's (the hash of pipe.c, repeated), and the wait must
 * still wake on data: within 2.5 s for a write after 50 ms, where a helper
 * held up would leave the call asleep until its 5 s timeout. */

static unsigned bucket_of_handle(HANDLE h) {
  UINT_PTR v = (UINT_PTR)h >> 2;
  return (unsigned)((v ^ (v >> 8)) % 256);
}

TEST(query_on_other_pipe_does_not_hold_up_helper) {
  int p[2];
  tp_pipe(p);
  unsigned target = bucket_of_handle((HANDLE)_get_osfhandle(p[0]));
  HANDLE spare[600][2];
  int n = 0, found = -1;
  while (n < 600 && found < 0) {
    ASSERT(CreatePipe(&spare[n][0], &spare[n][1], NULL, 0));
    if (bucket_of_handle(spare[n][0]) == target)
      found = n;
    n++;
  }
  ASSERT_GE(found, 0);
  struct anypoll__gate held;
  ASSERT_EQ(anypoll__gate_begin(&held, spare[found][0]), 0);
  struct tp_later l;
  tp_thread *t = tp_after(&l, p[1], 50, TP_WRITE_BYTE);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  double start = tp_now_ms();
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  double took = tp_now_ms() - start;
  ASSERT_EQ(fd.revents, POLLIN);
  ASSERT_LT(took, 2500);
  tp_thread_join(t);
  anypoll__gate_end(&held);
  for (int i = 0; i < n; i++) {
    CloseHandle(spare[i][0]);
    CloseHandle(spare[i][1]);
  }
  tp_close(p[0]);
  tp_close(p[1]);
}

/* ---- No read of ours where the program writes -----------------------------
 * A synchronous duplex named pipe, polled for POLLIN for ever by one thread
 * while another thread of the program writes through the same handle: a
 * parked read of ours would hold the file-object lock, and on Windows that
 * WriteFile would wait until data arrived. The write is announced to the
 * lock model as the program's own call, so the model ends the process
 * (status 86) if a read of ours is pending; then the peer's answer must
 * still wake the poll. */
TEST(duplex_sync_pipe_written_while_polled) {
  wchar_t name[96];
  pipe_name(name, 96, "duplex-write");
  HANDLE server = CreateNamedPipeW(
      name, PIPE_ACCESS_DUPLEX, PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT,
      1, 4096, 4096, 0, NULL);
  ASSERT(server != INVALID_HANDLE_VALUE);
  HANDLE client = CreateFileW(name, GENERIC_READ | GENERIC_WRITE, 0, NULL,
                              OPEN_EXISTING, 0, NULL);
  ASSERT(client != INVALID_HANDLE_VALUE);
  int fd = _open_osfhandle((intptr_t)server, _O_RDWR | _O_BINARY);
  ASSERT(fd >= 0);
  struct tp_forever f = { fd, -2, 0 };
  tp_thread *t = tp_thread_start(tp_poll_forever, &f);
  tp_sleep_ms(300); /* long enough for a helper's read to be pending */
  DWORD n = 0;
  anypoll__model_call_begin(server, "the program's WriteFile");
  ASSERT(WriteFile(server, "q", 1, &n, NULL));
  anypoll__model_call_end(server);
  ASSERT_EQ(n, 1);
  ASSERT_EQ(f.result, -2);
  char c = 0;
  ASSERT(ReadFile(client, &c, 1, &n, NULL));
  ASSERT_EQ(c, 'q');
  ASSERT(WriteFile(client, "a", 1, &n, NULL));
  tp_thread_join(t);
  ASSERT_EQ(f.result, 1);
  ASSERT_EQ(f.revents, POLLIN);
  CloseHandle(client);
  _close(fd);
}

/* ---- Zero-length messages -------------------------------------------------
 * A message-type pipe can carry a message of zero bytes; a zero-byte read
 * of ours would complete by consuming it. Here one thread polls the read
 * end for ever while the peer sends a zero-length message and then "xy":
 * once poll reports POLLIN, the program's reads must get the empty message
 * first, then "xy". (A lone zero-length message is reported on Windows,
 * where FSCTL_PIPE_PEEK counts messages; Wine 8 does not count them, so
 * this test lets the second message make the pipe readable.) */
TEST(message_pipe_zero_length_message_kept) {
  wchar_t name[96];
  pipe_name(name, 96, "message");
  HANDLE server = CreateNamedPipeW(
      name, PIPE_ACCESS_INBOUND,
      PIPE_TYPE_MESSAGE | PIPE_READMODE_MESSAGE | PIPE_WAIT, 1, 4096, 4096, 0,
      NULL);
  ASSERT(server != INVALID_HANDLE_VALUE);
  HANDLE client = CreateFileW(name, GENERIC_WRITE, 0, NULL, OPEN_EXISTING, 0,
                              NULL);
  ASSERT(client != INVALID_HANDLE_VALUE);
  int fd = _open_osfhandle((intptr_t)server, _O_RDONLY | _O_BINARY);
  ASSERT(fd >= 0);
  struct tp_forever f = { fd, -2, 0 };
  tp_thread *t = tp_thread_start(tp_poll_forever, &f);
  tp_sleep_ms(200);
  DWORD n = 1;
  ASSERT(WriteFile(client, "", 0, &n, NULL));
  ASSERT_EQ(n, 0);
  tp_sleep_ms(100);
  ASSERT(WriteFile(client, "xy", 2, &n, NULL));
  tp_thread_join(t);
  ASSERT_EQ(f.result, 1);
  ASSERT_EQ(f.revents, POLLIN);
  char buf[16];
  n = 99;
  ASSERT(ReadFile(server, buf, sizeof buf, &n, NULL));
  ASSERT_EQ(n, 0);
  ASSERT(ReadFile(server, buf, sizeof buf, &n, NULL));
  ASSERT_EQ(n, 2);
  ASSERT(memcmp(buf, "xy", 2) == 0);
  CloseHandle(client);
  _close(fd);
}

/* ---- A cancel that keeps missing ------------------------------------------
 * On Windows, a helper's read queued for the file-object lock behind a
 * synchronous read that is not ours has no I/O request yet, and every
 * CancelSynchronousIo finds nothing for as long as that other read lasts;
 * the disarm used to retry every millisecond for ever. Wine has no such
 * lock, so the tests' fault hook makes every cancel miss. The call must
 * still return, soon after its 50 ms timeout, having tried a bounded
 * number of cancels, with the entry not ready; the helper it leaves behind
 * ends when its read does (data here), and the pipe then works as usual. */
struct timed_poll {
  int fd;
  atomic_int done;
  int result;
  short revents;
};

static void poll_50ms(void *arg) {
  struct timed_poll *tp = arg;
  struct pollfd p;
  tp_pfd(&p, tp->fd, POLLIN);
  tp->result = tp_poll(&p, 1, 50);
  tp->revents = p.revents;
  tp->done = 1;
}

TEST(pipe_disarm_bounded_when_cancel_misses) {
  int p[2];
  tp_pipe(p);
  anypoll__test_cancel_tries = 0;
  anypoll__test_cancel_misses = 1;
  struct timed_poll tp = { p[0], 0, -2, 0 };
  tp_thread *t = tp_thread_start(poll_50ms, &tp);
  /* Generous: a bounded disarm returns within a few hundred ms even on a
   * loaded machine; an unbounded one never does. */
  double start = tp_now_ms();
  while (!tp.done && tp_now_ms() - start < 10000)
    tp_sleep_ms(10);
  ASSERT(tp.done);
  tp_thread_join(t);
  anypoll__test_cancel_misses = 0;
  ASSERT_EQ(tp.result, 0);
  ASSERT_EQ(tp.revents, 0);
  printf("cancel attempts: %ld\n", (long)anypoll__test_cancel_tries);
  ASSERT_LE(anypoll__test_cancel_tries, 20);
  /* The detached helper's read ends on data; nothing is consumed. */
  ASSERT_EQ(tp_write(p[1], "k", 1), 1);
  struct pollfd fd;
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 5000), 1);
  ASSERT_EQ(fd.revents, POLLIN);
  char c = 0;
  ASSERT_EQ(tp_read(p[0], &c, 1), 1);
  ASSERT_EQ(c, 'k');
  tp_pfd(&fd, p[0], POLLIN);
  ASSERT_EQ(tp_poll(&fd, 1, 20), 0);
  ASSERT_EQ(fd.revents, 0);
  tp_close(p[0]);
  tp_close(p[1]);
}

/* ---- An overlapped pipe closed under a wait --------------------------------
 * One thread waits 500 ms on an overlapped named pipe's read end; another
 * closes that descriptor after 100 ms while a duplicate of its handle stays
 * open, so the file object lives on and the overlapped read armed through
 * the closed handle stays pending. A cancel through the closed handle
 * cannot reach it: the disarm used to wait on its status word every
 * millisecond (1,000 wake-ups a second) until the read ended some other
 * way, seconds later under Wine. The call must return by its timeout (a
 * generous bound: 3 s), report the closed entry (POLLNVAL, or POLLHUP),
 * and cost little CPU (the spin cost most of the wait). */
struct close_later {
  int fd;
};

static void close_after_100ms(void *arg) {
  struct close_later *c = arg;
  tp_sleep_ms(100);
  _close(c->fd);
}

TEST(overlapped_pipe_closed_mid_wait_with_duplicate_open) {
  wchar_t name[96];
  pipe_name(name, 96, "ov-close");
  HANDLE server = CreateNamedPipeW(
      name, PIPE_ACCESS_INBOUND | FILE_FLAG_OVERLAPPED,
      PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT, 1, 4096, 4096, 0, NULL);
  ASSERT(server != INVALID_HANDLE_VALUE);
  HANDLE client = CreateFileW(name, GENERIC_WRITE, 0, NULL, OPEN_EXISTING, 0,
                              NULL);
  ASSERT(client != INVALID_HANDLE_VALUE);
  HANDLE keep;
  ASSERT(DuplicateHandle(GetCurrentProcess(), server, GetCurrentProcess(),
                         &keep, 0, FALSE, DUPLICATE_SAME_ACCESS));
  int fd = _open_osfhandle((intptr_t)server, _O_RDONLY | _O_BINARY);
  ASSERT(fd >= 0);
  /* Warm up: a first wait (the call's event, the pool). */
  struct pollfd p;
  tp_pfd(&p, fd, POLLIN);
  ASSERT_EQ(tp_poll(&p, 1, 1), 0);
  struct close_later c = { fd };
  tp_thread *t = tp_thread_start(close_after_100ms, &c);
  double cpu0 = tp_cpu_ms(), t0 = tp_now_ms();
  tp_pfd(&p, fd, POLLIN);
  int n = tp_poll(&p, 1, 500);
  double took = tp_now_ms() - t0, cpu = tp_cpu_ms() - cpu0;
  tp_thread_join(t);
  printf("closed mid-wait: %d, revents %#x after %.0f ms, CPU %.1f ms\n", n,
         p.revents, took, cpu);
  ASSERT_LT(took, 3000);
  ASSERT_LE(cpu, 100);
  ASSERT_EQ(n, 1);
  ASSERT(p.revents == POLLNVAL || p.revents == POLLHUP);
  CloseHandle(keep);
  CloseHandle(client);
}
