/* SPDX-License-Identifier: MIT */
/* The watch set against defects first seen in its Windows backend (issue
 * 32), stated as what Linux's epoll does and run on every set backend,
 * natively and under Wine: a closed descriptor's handle value reused by a
 * new object is that object, not the pipe it used to be; entries that stay
 * ready do not starve entries whose wake-up comes later; a pipe's write end
 * gets POLLERR when its reader goes, whatever events it asked for. */
#include <string.h>

#ifdef _WIN32
#  include <io.h>
#else
#  include <unistd.h>
#endif

#include "test.h"

static int tag[8]; /* data pointers: &tag[i] */

static int dup_fd(int fd) {
#ifdef _WIN32
  int d = _dup(fd);
#else
  int d = dup(fd);
#endif
  ASSERT(d >= 0);
  return d;
}

/* What anypoll_poll reports for fd and events now, with timeout 0. */
static unsigned poll_now(int fd, unsigned events) {
  struct pollfd p;
  tp_pfd(&p, fd, (short)events);
  ASSERT(anypoll_poll(&p, 1, 0) >= 0);
  return (unsigned short)p.revents;
}

/* ---- A closed descriptor's value reused -------------------------------------
 * A pipe's read end registered under one descriptor, and its other
 * subscriber under a _dup of it: a second set, the same set, or an
 * anypoll_poll waiting in another thread. The first descriptor is deleted
 * and closed, as the header asks, while the other subscriber stays; the
 * next object the program opens takes the freed number (and on Windows the
 * freed handle value, which Windows and Wine hand out again at once). That
 * new object must be reported as itself (data: POLLIN at once), and the
 * remaining subscriber must still be woken by its own pipe. Windows, before
 * the fix: the single helper read on the old pipe went on through the freed
 * handle value, and the new object was taken for "a pipe with our read
 * pending": anypoll_poll(0) gave 0, a second set's wait(1000) gave 0. */

enum other { OTHER_SET, SAME_SET, OTHER_POLL };
enum reuse { REUSE_PIPE, REUSE_NUL };

struct poll_events0 {
  int fd;
  short events;
  atomic_int result; /* -2 while the call waits */
  short revents;
};

static void poll_forever_main(void *arg) {
  struct poll_events0 *p = arg;
  struct pollfd f;
  tp_pfd(&f, p->fd, p->events);
  int r = anypoll_poll(&f, 1, -1);
  p->revents = f.revents;
  p->result = r;
}

/* Waits up to 10 s for a thread's anypoll_poll to return: its result, or -2
 * when it had not returned. */
static int poll_result_within(struct poll_events0 *p) {
  double until = tp_now_ms() + 10000;
  while (p->result == -2 && tp_now_ms() < until)
    tp_sleep_ms(5);
  return p->result;
}

/* The end of a run: the first set freed, the duplicate d, the old pipe's
 * write end and the new object (q[1] is -1 for the null device) closed. */
static void run_free(anypoll_set *a, int d, int old_w, const int q[2]) {
  ASSERT_EQ(anypoll_set_free(a), 0);
  tp_close(d);
  tp_close(old_w);
  tp_close(q[0]);
  if (q[1] >= 0)
    tp_close(q[1]);
}

/* One run; 0 when the new object did not get the freed number and handle
 * value (another thread of the process, a helper of ours or one of Wine's,
 * took the value first): everything is then closed, and the caller tries
 * again. */
static int reused_value_once(enum other other, enum reuse reuse) {
  int p[2];
  tp_pipe(p);
  int d = dup_fd(p[0]);
  anypoll_set *a = tp_set_new();
  anypoll_set *b = NULL;
  struct anypoll_event out[4];
  ASSERT_EQ(anypoll_set_add(a, p[0], POLLIN, &tag[0]), 0);
  /* The first subscriber arms first: on Windows the helper's read goes
   * through p[0]'s handle. */
  ASSERT_EQ(anypoll_set_wait(a, out, 4, 0), 0);
  struct poll_events0 poller = { d, POLLIN, -2, 0 };
  tp_thread *t = NULL;
  switch (other) {
  case OTHER_SET:
    b = tp_set_new();
    ASSERT_EQ(anypoll_set_add(b, d, POLLIN, &tag[1]), 0);
    ASSERT_EQ(anypoll_set_wait(b, out, 4, 0), 0);
    break;
  case SAME_SET:
    ASSERT_EQ(anypoll_set_add(a, d, POLLIN, &tag[1]), 0);
    ASSERT_EQ(anypoll_set_wait(a, out, 4, 0), 0);
    break;
  case OTHER_POLL:
    t = tp_thread_start(poll_forever_main, &poller);
    tp_sleep_ms(200); /* inside its wait, sharing the read */
    ASSERT_EQ(poller.result, -2);
    break;
  }
#ifdef _WIN32
  intptr_t old = _get_osfhandle(p[0]);
#endif
  int old_fd = p[0];
  ASSERT_EQ(anypoll_set_del(a, p[0]), 0);
  tp_close(p[0]);

  int q[2] = { -1, -1 };
  if (reuse == REUSE_PIPE) {
    tp_pipe(q);
    ASSERT_EQ(tp_write(q[1], "abcd", 4), 4);
  } else {
    q[0] = tp_null_device();
  }
  /* The freed number (and handle value) went to the new object: what this
   * test is about. */
  int reused = q[0] == old_fd;
#ifdef _WIN32
  reused = reused && _get_osfhandle(q[0]) == old;
#endif
  if (!reused) {
    switch (other) {
    case OTHER_SET:
      ASSERT_EQ(anypoll_set_free(b), 0);
      break;
    case SAME_SET:
      ASSERT_EQ(anypoll_set_del(a, d), 0);
      break;
    case OTHER_POLL:
      ASSERT_EQ(tp_write(p[1], "z", 1), 1); /* ends the poll */
      tp_thread_join(t);
      break;
    }
    run_free(a, d, p[1], q);
    return 0;
  }
  ASSERT_EQ(poll_now(q[0], POLLIN), (unsigned)POLLIN);
  anypoll_set *c = tp_set_new();
  ASSERT_EQ(anypoll_set_add(c, q[0], POLLIN, &tag[2]), 0);
  ASSERT_EQ(anypoll_set_wait(c, out, 4, 1000), 1);
  ASSERT_EQ(out[0].fd, q[0]);
  ASSERT_EQ(out[0].events, (unsigned)POLLIN);
  /* And with no timeout, in another thread (a watchdog: before the fix it
   * returned only once the old pipe got a byte). */
  struct poll_events0 fresh = { q[0], POLLIN, -2, 0 };
  tp_thread *ft = tp_thread_start(poll_forever_main, &fresh);
  int fresh_result = poll_result_within(&fresh);
  if (fresh_result == -2)
    ASSERT_EQ(tp_write(p[1], "!", 1), 1); /* lets it end, then fails */
  tp_thread_join(ft);
  ASSERT_EQ(fresh_result, 1);
  ASSERT_EQ(fresh.revents, POLLIN);
  ASSERT_EQ(anypoll_set_del(c, q[0]), 0);
  ASSERT_EQ(anypoll_set_free(c), 0);

  /* The old pipe's remaining subscriber still gets its wake-up. */
  ASSERT_EQ(tp_write(p[1], "z", 1), 1);
  switch (other) {
  case OTHER_SET:
    ASSERT_EQ(anypoll_set_wait(b, out, 4, 5000), 1);
    ASSERT_EQ(out[0].fd, d);
    ASSERT_EQ(out[0].events, (unsigned)POLLIN);
    ASSERT_EQ(anypoll_set_del(b, d), 0);
    ASSERT_EQ(anypoll_set_free(b), 0);
    break;
  case SAME_SET:
    ASSERT_EQ(anypoll_set_wait(a, out, 4, 5000), 1);
    ASSERT_EQ(out[0].fd, d);
    ASSERT_EQ(out[0].events, (unsigned)POLLIN);
    ASSERT_EQ(anypoll_set_del(a, d), 0);
    break;
  case OTHER_POLL:
    ASSERT_EQ(poll_result_within(&poller), 1);
    tp_thread_join(t);
    ASSERT_EQ(poller.revents, POLLIN);
    break;
  }
  run_free(a, d, p[1], q);
  return 1;
}

/* Tries until a run had the value reused (at most 20 runs; a run where it
 * was not proves nothing and is not counted). */
static void reused_value(enum other other, enum reuse reuse) {
  int runs = 0;
  while (!reused_value_once(other, reuse))
    ASSERT_LT(++runs, 20);
}

TEST(set_freed_value_reused_by_pipe_is_the_pipe) {
  reused_value(OTHER_SET, REUSE_PIPE);
  reused_value(SAME_SET, REUSE_PIPE);
  reused_value(OTHER_POLL, REUSE_PIPE);
}

TEST(set_freed_value_reused_by_null_device_is_ready) {
  reused_value(OTHER_SET, REUSE_NUL);
  reused_value(SAME_SET, REUSE_NUL);
  reused_value(OTHER_POLL, REUSE_NUL);
}

/* ---- Entries that stay ready do not starve the others ----------------------
 * `writers` pipes' write ends asked for POLLOUT (always ready: room), and
 * one idle read end that then gets a byte. anypoll_set(3): when more are
 * ready than max, successive waits rotate, every ready entry reported
 * within ceil(ready/max) waits. Windows, before the fix: the write ends,
 * checked without waiting, filled every wait, and the read end, whose
 * readiness comes through the completion port, was never reported (0 of
 * 20 waits; Linux: every wait in which its turn comes). */
static void fair_with_always_ready(int writers, int max) {
  anypoll_set *set = tp_set_new();
  int w[4][2], r[2];
  struct anypoll_event out[4];
  for (int i = 0; i < writers; i++) {
    tp_pipe(w[i]);
    ASSERT_EQ(anypoll_set_add(set, w[i][1], POLLOUT, &tag[i]), 0);
  }
  tp_pipe(r);
  /* ANYPOLL_UNSHARED: on Windows the read end of _pipe() is inheritable,
   * and without the flag the set would peek at it every 16 ms instead of
   * parking the read whose post this case is about (anypoll_set(3), "Other
   * processes"). */
  ASSERT_EQ(anypoll_set_add(set, r[0], POLLIN | ANYPOLL_UNSHARED, &tag[7]), 0);
  /* Idle: only the write ends, in turn; enough waits that the read end has
   * been checked and armed (it waits behind them when they fill max). */
  for (int k = 0; k < 4; k++) {
    int n = anypoll_set_wait(set, out, max, 1000);
    ASSERT_EQ(n, max);
    for (int i = 0; i < n; i++) {
      ASSERT(out[i].data != &tag[7]);
      ASSERT_EQ(out[i].events, (unsigned)POLLOUT);
    }
  }
  ASSERT_EQ(tp_write(r[1], "x", 1), 1);
  /* Its wake-up has reached the set once anypoll_poll sees the byte: on
   * Windows the helper read both wait on ends by posting to the set's
   * port first (one read per pipe, shared). */
  struct pollfd pf;
  tp_pfd(&pf, r[0], POLLIN);
  ASSERT_EQ(anypoll_poll(&pf, 1, -1), 1);
  const int ready = writers + 1;
  const int window = (ready + max - 1) / max;
  int last_seen[8];
  for (int i = 0; i < 8; i++)
    last_seen[i] = -1;
  int reads = 0;
  for (int k = 0; k < 20; k++) {
    int n = anypoll_set_wait(set, out, max, 1000);
    ASSERT_EQ(n, max);
    for (int i = 0; i < n; i++) {
      int id = (int)((int *)out[i].data - tag);
      ASSERT(id == 7 || (id >= 0 && id < writers));
      ASSERT_EQ(out[i].events, id == 7 ? (unsigned)POLLIN : (unsigned)POLLOUT);
      last_seen[id] = k;
      reads += id == 7;
    }
    /* Every entry within the last `window` waits, from the first window
     * after the byte on. */
    if (k + 1 >= window) {
      for (int i = 0; i < writers; i++)
        ASSERT_GE(last_seen[i], k + 1 - window);
      ASSERT_GE(last_seen[7], k + 1 - window);
    }
  }
  /* Round-robin: 20 waits hand out 20 * max reports, evenly. */
  ASSERT_EQ(reads, 20 * max / ready);
  ASSERT_EQ(anypoll_set_free(set), 0);
  for (int i = 0; i < writers; i++) {
    tp_close(w[i][0]);
    tp_close(w[i][1]);
  }
  tp_close(r[0]);
  tp_close(r[1]);
}

TEST(set_fair_always_ready_and_woken_max1) { fair_with_always_ready(1, 1); }

TEST(set_fair_always_ready_and_woken_max4) { fair_with_always_ready(4, 4); }

/* ---- More ready than one removal takes --------------------------------------
 * 200 anypoll_pipe read ends, each holding a byte: one wait with room for
 * all reports all 200, as epoll does; and with max 64 every one is
 * reported within ceil(200/64) = 4 waits. Windows, before the fix: a wait
 * took at most 64 packets out of the port beside what its check list
 * held, so the first waits gave 128, then 192 (review: with 500 ends and
 * max 64, 180 never reported within 8 waits). */
#define MANY_READY 200

TEST(set_many_ready_in_one_wait_and_fair) {
  static int p[MANY_READY][2];
  static struct anypoll_event out[MANY_READY + 8];
  static int seen[MANY_READY];
  anypoll_set *set = tp_set_new();
  for (int i = 0; i < MANY_READY; i++) {
    ASSERT_EQ(anypoll_pipe(p[i]), 0);
    ASSERT_EQ(anypoll_set_add(set, p[i][0], POLLIN, &p[i][0]), 0);
  }
  ASSERT_EQ(anypoll_set_wait(set, out, MANY_READY + 8, 0), 0); /* armed */
  for (int i = 0; i < MANY_READY; i++)
    ASSERT_EQ(anypoll_write(p[i][1], "x", 1), 1);
  tp_sleep_ms(200); /* every wake-up has come (Windows: its packet) */
  ASSERT_EQ(anypoll_set_wait(set, out, MANY_READY + 8, 1000), MANY_READY);
  for (int i = 0; i < MANY_READY; i++) {
    ASSERT(out[i].data != NULL);
    ASSERT_EQ(out[i].events, (unsigned)POLLIN);
  }
  /* Level-triggered, max 64: every one within 4 waits. */
  for (int w = 0; w < 4; w++) {
    int n = anypoll_set_wait(set, out, 64, 1000);
    ASSERT_EQ(n, 64);
    for (int k = 0; k < n; k++) {
      int i = (int)((int (*)[2])out[k].data - p);
      ASSERT(i >= 0 && i < MANY_READY);
      seen[i]++;
    }
  }
  for (int i = 0; i < MANY_READY; i++)
    ASSERT(seen[i] >= 1);
  for (int i = 0; i < MANY_READY; i++) {
    ASSERT_EQ(anypoll_set_del(set, p[i][0]), 0);
    ASSERT_EQ(anypoll_close(p[i][0]), 0);
    ASSERT_EQ(anypoll_close(p[i][1]), 0);
  }
  ASSERT_EQ(anypoll_set_free(set), 0);
}

/* ---- A write end's POLLERR ----------------------------------------------------
 * POLLERR is reported whether asked or not: a pipe's write end registered
 * for nothing, or for POLLIN (which a write end never has), gets it as soon
 * as its reader goes, as Linux reports it. Windows, before the fix: such a
 * write end had no wake-up source at all, so the set's wait(1000) gave 0,
 * and anypoll_poll with events 0 saw it only at its timeout (with -1, never). */
TEST(set_write_end_pollerr_without_pollout) {
  const unsigned asked[2] = { 0, POLLIN };
  for (int i = 0; i < 2; i++) {
    int p[2];
    tp_pipe(p);
    anypoll_set *set = tp_set_new();
    struct anypoll_event out[4];
    ASSERT_EQ(anypoll_set_add(set, p[1], asked[i], &tag[i]), 0);
    ASSERT_EQ(anypoll_set_wait(set, out, 4, 0), 0);
    ASSERT_EQ(anypoll_set_wait(set, out, 4, 50), 0);
    tp_close(p[0]);
    ASSERT_EQ(anypoll_set_wait(set, out, 4, 1000), 1);
    ASSERT_EQ(out[0].fd, p[1]);
    ASSERT(out[0].data == &tag[i]);
    ASSERT_EQ(out[0].events, (unsigned)POLLERR);
    ASSERT_EQ(out[0].events, poll_now(p[1], asked[i]));
    ASSERT_EQ(anypoll_set_del(set, p[1]), 0);
    ASSERT_EQ(anypoll_set_free(set), 0);
    tp_close(p[1]);
  }
  /* anypoll_poll(events 0, -1) in another thread, under a watchdog. */
  for (int i = 0; i < 2; i++) {
    int p[2];
    tp_pipe(p);
    struct poll_events0 f = { p[1], (short)asked[i], -2, 0 };
    tp_thread *t = tp_thread_start(poll_forever_main, &f);
    tp_sleep_ms(100); /* inside its wait, most likely */
    ASSERT_EQ(f.result, -2);
    tp_close(p[0]);
    ASSERT_EQ(poll_result_within(&f), 1);
    tp_thread_join(t);
    ASSERT_EQ(f.revents, POLLERR);
    tp_close(p[1]);
  }
}

/* ---- No bits asked: the wait sleeps ---------------------------------------
 * Entries registered for events that are not true now (nothing at all, or
 * a read end's POLLIN on a write end) while something else about them is
 * (data in a read end, room in a write end): a wait reports nothing, and
 * waits out its timeout asleep, as epoll does. Windows: a read end holding
 * data that was not asked for ends every zero-byte read of ours at once,
 * and re-arming that read for ever would spin. */
TEST(set_pipe_no_bits_asked_waits_asleep) {
  int p[2], q[2];
  tp_pipe(p);
  tp_pipe(q);
  ASSERT_EQ(tp_write(p[1], "abc", 3), 3);
  anypoll_set *set = tp_set_new();
  struct anypoll_event out[4];
  ASSERT_EQ(anypoll_set_add(set, p[0], 0, &tag[0]), 0);
  ASSERT_EQ(anypoll_set_add(set, q[1], 0, &tag[1]), 0);
  ASSERT_EQ(anypoll_set_add(set, q[0], POLLOUT, &tag[2]), 0);
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 0), 0);
  double cpu = tp_cpu_ms();
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 1000), 0);
  /* Asleep: well under 10% of one CPU over the second. */
  ASSERT_LT(tp_cpu_ms() - cpu, 100);
  /* Nothing consumed; still reported when asked. */
  ASSERT_EQ(anypoll_set_mod(set, p[0], POLLIN, &tag[0]), 0);
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 1000), 1);
  ASSERT_EQ(out[0].fd, p[0]);
  ASSERT_EQ(out[0].events, (unsigned)POLLIN);
  ASSERT_EQ(anypoll_set_free(set), 0);
  char b[4];
  ASSERT_EQ(tp_read(p[0], b, sizeof b), 3);
  tp_close(p[0]);
  tp_close(p[1]);
  tp_close(q[0]);
  tp_close(q[1]);
}

/* ---- Two waiters, one entry that stays ready ---------------------------------
 * Level-triggered: two threads asleep in one set's wait, then a descriptor
 * that is ready and stays so (a write end with room) is added: both see it,
 * as with epoll (each wait reports what is ready when it looks). Windows:
 * the add wakes one waiter, which wakes the next as it leaves with ready
 * entries still listed. */
struct two_waiter {
  anypoll_set *set;
  struct anypoll_event out[2];
  atomic_int result;
};

static void two_waiter_main(void *arg) {
  struct two_waiter *w = arg;
  w->result = anypoll_set_wait(w->set, w->out, 2, 20000);
}

TEST(set_two_waiters_see_entry_that_stays_ready) {
  anypoll_set *set = tp_set_new();
  int idle[2], w[2];
  tp_pipe(idle);
  tp_pipe(w);
  ASSERT_EQ(anypoll_set_add(set, idle[0], POLLIN, &tag[0]), 0);
  struct two_waiter a = { set, { { 0, 0, NULL } }, -2 };
  struct two_waiter b = { set, { { 0, 0, NULL } }, -2 };
  tp_thread *ta = tp_thread_start(two_waiter_main, &a);
  tp_thread *tb = tp_thread_start(two_waiter_main, &b);
  tp_sleep_ms(200); /* both asleep in the set, most likely */
  ASSERT_EQ(anypoll_set_add(set, w[1], POLLOUT, &tag[1]), 0);
  tp_thread_join(ta);
  tp_thread_join(tb);
  ASSERT_EQ(a.result, 1);
  ASSERT_EQ(b.result, 1);
  ASSERT(a.out[0].data == &tag[1] && a.out[0].events == (unsigned)POLLOUT);
  ASSERT(b.out[0].data == &tag[1] && b.out[0].events == (unsigned)POLLOUT);
  ASSERT_EQ(anypoll_set_free(set), 0);
  tp_close(idle[0]);
  tp_close(idle[1]);
  tp_close(w[0]);
  tp_close(w[1]);
}
