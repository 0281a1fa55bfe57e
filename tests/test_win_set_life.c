/* SPDX-License-Identifier: MIT */
/* The watch set's Windows backend over many lifecycles: add, wait and del
 * repeated on one overlapped pipe must never crash (the thread-pool wait
 * that watches its read is unregistered while the read's cancel signals
 * it), and a set that has held ten thousand anypoll_pipe ends one after
 * the other must not have grown. Through the public API. */
#include <winsock2.h>
#include <windows.h>
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "test.h"

/* Cycles and lifecycles: the figures of the issue by default, times
 * ANYPOLL_STRESS_SCALE when it is set (make stress). */
static long life_scale(void) {
  const char *s = getenv("ANYPOLL_STRESS_SCALE");
  long n = s != NULL ? strtol(s, NULL, 10) : 1;
  return n > 0 ? n : 1;
}

/* add, wait(0), del of fd in s, cycles times. The wait arms the read and
 * its wake-up source; the del cancels the read (which signals the event
 * the source waits on) and unregisters the source, racing the signal. */
static void cycle(anypoll_set *s, int fd, long cycles) {
  struct anypoll_event ev[2];
  for (long i = 0; i < cycles; i++) {
    ASSERT_EQ(anypoll_set_add(s, fd, POLLIN, NULL), 0);
    ASSERT_EQ(anypoll_set_wait(s, ev, 2, 0), 0);
    ASSERT_EQ(anypoll_set_del(s, fd), 0);
  }
}

/* One overlapped named pipe, with its client connected and silent. */
TEST(set_win_overlapped_pipe_cycles) {
  HANDLE cli;
  int fd = tp_overlapped_pipe("cycles", &cli);
  anypoll_set *s = anypoll_set_new();
  ASSERT(s != NULL);
  long n = 3000 * life_scale();
  cycle(s, fd, n);
  /* Still watched as before: a write is reported. */
  struct anypoll_event ev[2];
  ASSERT_EQ(anypoll_set_add(s, fd, POLLIN, (void *)4), 0);
  ASSERT_EQ(anypoll_set_wait(s, ev, 2, 0), 0);
  DWORD done;
  ASSERT(WriteFile(cli, "z", 1, &done, NULL) && done == 1);
  ASSERT_EQ(anypoll_set_wait(s, ev, 2, 10000), 1);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT(ev[0].data == (void *)4);
  ASSERT_EQ(anypoll_set_del(s, fd), 0);
  ASSERT_EQ(anypoll_set_free(s), 0);
  printf("%ld cycles of add, wait(0), del on an overlapped named pipe\n", n);
  CloseHandle(cli);
  _close(fd);
}

/* anypoll_pipe's read end: the first add takes it onto the set's port;
 * where the association cannot be ended (Wine, Windows before 8.1), every
 * later add takes the overlapped path with a thread-pool wait. Its write
 * end too (a synchronous handle, registered for POLLOUT: a timer). */
TEST(set_win_anypipe_cycles) {
  int p[2];
  ASSERT_EQ(anypoll_pipe(p), 0);
  anypoll_set *s = anypoll_set_new();
  ASSERT(s != NULL);
  long n = 2000 * life_scale();
  cycle(s, p[0], n);
  struct anypoll_event ev[2];
  ASSERT_EQ(anypoll_set_add(s, p[0], POLLIN, (void *)5), 0);
  ASSERT_EQ(anypoll_set_wait(s, ev, 2, 0), 0);
  ASSERT_EQ(anypoll_write(p[1], "y", 1), 1);
  ASSERT_EQ(anypoll_set_wait(s, ev, 2, 10000), 1);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT(ev[0].data == (void *)5);
  ASSERT_EQ(anypoll_set_del(s, p[0]), 0);
  ASSERT_EQ(anypoll_set_free(s), 0);
  printf("%ld cycles of add, wait(0), del on an anypoll_pipe read end\n", n);
  _close(p[0]);
  _close(p[1]);
}

/* ---- A long-lived set does not grow -------------------------------------- */

/* The bytes in use in the C runtime's heap (its own walk: deterministic,
 * unlike the process's working set). */
static long long crt_heap_used(void) {
  _HEAPINFO hi;
  hi._pentry = NULL;
  long long used = 0;
  int st;
  while ((st = _heapwalk(&hi)) == _HEAPOK)
    if (hi._useflag == _USEDENTRY)
      used += (long long)hi._size;
  ASSERT(st == _HEAPEND || st == _HEAPEMPTY);
  return used;
}

static void lifecycles(anypoll_set *s, long n) {
  struct anypoll_event ev[2];
  for (long i = 0; i < n; i++) {
    int p[2];
    ASSERT_EQ(anypoll_pipe(p), 0);
    ASSERT_EQ(anypoll_set_add(s, p[0], POLLIN, NULL), 0);
    ASSERT_EQ(anypoll_set_wait(s, ev, 2, 0), 0);
    ASSERT_EQ(anypoll_set_del(s, p[0]), 0);
    ASSERT_EQ(_close(p[0]), 0);
    ASSERT_EQ(_close(p[1]), 0);
  }
}

/* 10^4 lifecycles of an anypoll_pipe in one set (pipe, add, wait, del,
 * close), after a warm-up that lets the C runtime's descriptor table and
 * the set's table reach their size: the C runtime's heap must stay within
 * 16 KiB. Where the system cannot end a read end's association with the
 * port (Wine, Windows before 8.1) the set kept a record per pipe it ever
 * held (80 bytes and the heap's own overhead each). */
TEST(set_win_anypipe_lifecycles_heap_flat) {
  anypoll_set *s = anypoll_set_new();
  ASSERT(s != NULL);
  lifecycles(s, 100);
  long long before = crt_heap_used();
  long n = 10000 * life_scale();
  lifecycles(s, n);
  long long after = crt_heap_used();
  printf("%ld lifecycles: C runtime heap in use %lld -> %lld bytes (%+lld)\n",
         n, before, after, after - before);
  ASSERT_LE(after - before, 16 * 1024);
  ASSERT_EQ(anypoll_set_free(s), 0);
}

/* A deleted anypoll_pipe end whose association with the port outlives its
 * del (Wine, Windows before 8.1) still sends the port the completions of
 * the program's own requests that carry an event without the low bit. The
 * set, which kept no record of it, drops that packet, also when the
 * descriptor number has been registered again meanwhile (here with
 * another anypoll_pipe end, _dup2'd onto it), and goes on reporting the
 * registrations it has. */
TEST(set_win_anypipe_stale_packet_after_del) {
  int p[2], q[2];
  ASSERT_EQ(anypoll_pipe(p), 0);
  ASSERT_EQ(anypoll_pipe(q), 0);
  anypoll_set *s = anypoll_set_new();
  ASSERT(s != NULL);
  struct anypoll_event ev[2];
  ASSERT_EQ(anypoll_set_add(s, p[0], POLLIN, NULL), 0);
  ASSERT_EQ(anypoll_set_wait(s, ev, 2, 0), 0);
  ASSERT_EQ(anypoll_set_del(s, p[0]), 0);
  /* The program's own overlapped read through the deleted end's handle. */
  OVERLAPPED ov;
  char got[2];
  HANDLE e = tp_own_overlapped_read(p[0], &ov, got);
  /* The same number, another pipe, in the same set. */
  int keep = _dup(p[0]);
  ASSERT(keep >= 0);
  ASSERT_EQ(_dup2(q[0], p[0]), 0);
  ASSERT_EQ(anypoll_set_add(s, p[0], POLLIN, (void *)7), 0);
  ASSERT_EQ(anypoll_set_wait(s, ev, 2, 0), 0);
  ASSERT_EQ(_write(p[1], "a", 1), 1);
  ASSERT_EQ(WaitForSingleObject(e, 5000), WAIT_OBJECT_0);
  DWORD n;
  ASSERT(GetOverlappedResult((HANDLE)_get_osfhandle(keep), &ov, &n, FALSE) &&
         n == 1);
  /* Its packet is in the port (where the association stands): dropped. */
  ASSERT_EQ(anypoll_set_wait(s, ev, 2, 50), 0);
  ASSERT_EQ(anypoll_write(q[1], "b", 1), 1);
  ASSERT_EQ(anypoll_set_wait(s, ev, 2, 10000), 1);
  ASSERT_EQ(ev[0].fd, p[0]);
  ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
  ASSERT(ev[0].data == (void *)7);
  ASSERT_EQ(anypoll_set_del(s, p[0]), 0);
  ASSERT_EQ(anypoll_set_free(s), 0);
  CloseHandle(e);
  _close(keep);
  _close(p[0]);
  _close(p[1]);
  _close(q[0]);
  _close(q[1]);
}

/* ---- Threads over many cycles -------------------------------------------- */

/* The add, wait(0), del cycles of set_win_anypipe_cycles must not leave a
 * thread per cycle behind, even for a while: the process's threads are
 * counted every 100 cycles and must stay within a small ceiling over what
 * there was before (the pool's helpers and the thread pool's workers and
 * wait threads are each reused). */
TEST(set_win_anypipe_cycles_threads_bounded) {
  int p[2];
  ASSERT_EQ(anypoll_pipe(p), 0);
  anypoll_set *s = anypoll_set_new();
  ASSERT(s != NULL);
  cycle(s, p[0], 10); /* the pool's threads exist */
  int before = tp_thread_count();
  int most = before;
  for (int i = 0; i < 20; i++) {
    cycle(s, p[0], 100);
    int now = tp_thread_count();
    if (now > most)
      most = now;
  }
  printf("threads: %d before, at most %d over 2000 cycles\n", before, most);
  ASSERT_LE(most, before + 8);
  ASSERT_EQ(anypoll_set_free(s), 0);
  _close(p[0]);
  _close(p[1]);
}

/* ---- Close before del, number reused ------------------------------------- */

/* An anypoll_pipe read end closed before its del, its number then taken by
 * a regular file: POLLNVAL until the del (not the file's state, not
 * nothing), and a mod of the entry fails with ENOENT, the number naming
 * another object (as on Linux, where epoll has dropped it), leaving it
 * POLLNVAL; del works and the file can be added then. (A _pipe read end
 * closed before its del is what the lock model forbids: that close waits
 * for the set's read on Windows.) Twice: the second time the file is
 * opened before any wait has seen the close. */
TEST(set_win_closed_entry_reused_by_file_mod_fails) {
  for (int kind = 0; kind < 2; kind++) {
    int p[2];
    ASSERT_EQ(anypoll_pipe(p), 0);
    anypoll_set *s = anypoll_set_new();
    ASSERT(s != NULL);
    ASSERT_EQ(anypoll_set_add(s, p[0], POLLIN, (void *)1), 0);
    struct anypoll_event ev[2];
    ASSERT_EQ(anypoll_set_wait(s, ev, 2, 50), 0);
    ASSERT_EQ(_close(p[0]), 0);
    if (kind == 0) {
      ASSERT_EQ(anypoll_set_wait(s, ev, 2, 1000), 1);
      ASSERT_EQ(ev[0].events, (unsigned)POLLNVAL);
    }
    char name[MAX_PATH];
    snprintf(name, sizeof name, "anypoll-reuse-%lu-%d.tmp",
             (unsigned long)GetCurrentProcessId(), kind);
    int f = _open(name, _O_RDWR | _O_CREAT | _O_BINARY | _O_TEMPORARY, 0666);
    ASSERT_EQ(f, p[0]);
    ASSERT_EQ(anypoll_set_wait(s, ev, 2, 50), 1);
    ASSERT_EQ(ev[0].fd, f);
    ASSERT_EQ(ev[0].events, (unsigned)POLLNVAL);
    errno = 0;
    ASSERT_EQ(anypoll_set_mod(s, f, POLLIN, (void *)2), -1);
    ASSERT_EQ(errno, ENOENT);
    ASSERT_EQ(anypoll_set_wait(s, ev, 2, 50), 1);
    ASSERT_EQ(ev[0].events, (unsigned)POLLNVAL);
    ASSERT(ev[0].data == (void *)1);
    ASSERT_EQ(anypoll_set_del(s, f), 0);
    ASSERT_EQ(anypoll_set_add(s, f, POLLIN, (void *)3), 0);
    ASSERT_EQ(anypoll_set_wait(s, ev, 2, 50), 1);
    ASSERT_EQ(ev[0].events, (unsigned)POLLIN);
    ASSERT_EQ(anypoll_set_del(s, f), 0);
    ASSERT_EQ(anypoll_set_free(s), 0);
    _close(f);
    _close(p[1]);
  }
}
