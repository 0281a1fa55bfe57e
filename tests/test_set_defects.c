/* SPDX-License-Identifier: MIT */
/* The watch set's promises where always-ready entries (regular files, the
 * null device: what epoll refuses and the Linux backend keeps itself) meet
 * the rest: no busy wait for an entry that asks for nothing it can report,
 * a level that wakes every waiter, and the rotation's bound counted over
 * every ready entry. Run once per set backend, natively and under Wine. */
#include <errno.h>
#include <string.h>

#include "test.h"

static int mark[64]; /* data pointers: &mark[i] */

static unsigned bits_now(int fd, unsigned events) {
  struct pollfd p;
  tp_pfd(&p, fd, (short)events);
  ASSERT(anypoll_poll(&p, 1, 0) >= 0);
  return (unsigned short)p.revents;
}

/* A 1 s wait that reports nothing, and the CPU it cost the process: a few
 * milliseconds when it sleeps, and when it loops instead, as much of a
 * CPU-second as the machine gives it (over 200 ms on a loaded 2-CPU host).
 * A count, not a speed: an idle process's CPU time does not grow with the
 * machine's load. */
static double idle_wait_cpu_ms(anypoll_set *set) {
  struct anypoll_event out[4];
  double c0 = tp_cpu_ms();
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 1000), 0);
  return tp_cpu_ms() - c0;
}

#define IDLE_CPU_CEILING_MS 100

/* An always-ready entry registered with no bits it can report (events 0,
 * POLLPRI alone, or paused by a mod to 0) is not ready: a wait sleeps, as
 * anypoll_poll does on the same descriptor. */
TEST(set_no_bits_asked_waits_asleep) {
  anypoll_set *set = tp_set_new();
  int file = tp_temp_file(0);
  int null = tp_null_device();
  ASSERT_EQ(bits_now(file, 0), 0u);
  ASSERT_EQ(bits_now(null, POLLPRI), 0u);
  ASSERT_EQ(anypoll_set_add(set, file, 0, &mark[0]), 0);
  ASSERT_EQ(anypoll_set_add(set, null, POLLPRI, &mark[1]), 0);
  double cpu = idle_wait_cpu_ms(set);
  printf("events 0 and POLLPRI: %.0f ms of CPU in a 1 s wait\n", cpu);
  ASSERT_LT(cpu, IDLE_CPU_CEILING_MS);
  /* Asked for POLLIN: ready; paused again by a mod to 0: asleep. */
  struct anypoll_event out[4];
  ASSERT_EQ(anypoll_set_mod(set, file, POLLIN, &mark[2]), 0);
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 1000), 1);
  ASSERT_EQ(out[0].fd, file);
  ASSERT_EQ(out[0].events, bits_now(file, POLLIN));
  ASSERT(out[0].data == &mark[2]);
  ASSERT_EQ(anypoll_set_mod(set, file, 0, &mark[3]), 0);
  cpu = idle_wait_cpu_ms(set);
  printf("after a mod to 0: %.0f ms of CPU in a 1 s wait\n", cpu);
  ASSERT_LT(cpu, IDLE_CPU_CEILING_MS);
  ASSERT_EQ(anypoll_set_free(set), 0);
  tp_close(file);
  tp_close(null);
}

/* ---- Two waiters and an always-ready entry ------------------------------- */

struct dwaiter {
  anypoll_set *set;
  atomic_int result; /* -2 while waiting */
  struct anypoll_event out[4];
};

static void dwait_main(void *arg) {
  struct dwaiter *w = arg;
  w->result = anypoll_set_wait(w->set, w->out, 4, -1);
}

/* An always-ready entry added while two threads wait is ready for both:
 * level-triggered, so each wakes and reports it. The waits have no
 * timeout (one that ended at its timeout would report the entry then, and
 * hide a waiter left asleep); a waiter still asleep after 30 s fails. */
TEST(set_two_waiters_always_ready_both_wake) {
  anypoll_set *set = tp_set_new();
  int idle[2];
  tp_pipe(idle);
  ASSERT_EQ(anypoll_set_add(set, idle[0], POLLIN, &mark[0]), 0);
  /* An always-ready entry that came and went: what a backend keeps for
   * such entries (epoll: its wake-up eventfd) exists before the waiters. */
  int file = tp_temp_file(0);
  ASSERT_EQ(anypoll_set_add(set, file, POLLIN, &mark[2]), 0);
  ASSERT_EQ(anypoll_set_del(set, file), 0);
  tp_close(file);
  struct dwaiter w[2];
  tp_thread *t[2];
  for (int i = 0; i < 2; i++) {
    w[i].set = set;
    w[i].result = -2;
    t[i] = tp_thread_start(dwait_main, &w[i]);
  }
  /* Both usually asleep by now; a late one finds the entry ready anyway. */
  tp_sleep_ms(300);
  int null = tp_null_device();
  ASSERT_EQ(anypoll_set_add(set, null, POLLIN, &mark[1]), 0);
  for (int k = 0; k < 3000 && (w[0].result == -2 || w[1].result == -2); k++)
    tp_sleep_ms(10);
  for (int i = 0; i < 2; i++) {
    if (w[i].result == -2) {
      printf("waiter %d: still asleep after 30 s\n", i);
      ASSERT(w[i].result != -2);
    }
    tp_thread_join(t[i]);
    printf("waiter %d: %d\n", i, (int)w[i].result);
    ASSERT_EQ(w[i].result, 1);
    ASSERT_EQ(w[i].out[0].fd, null);
    ASSERT_EQ(w[i].out[0].events, bits_now(null, POLLIN));
    ASSERT(w[i].out[0].data == &mark[1]);
  }
  ASSERT_EQ(anypoll_set_free(set), 0);
  tp_close(null);
  tp_close(idle[0]);
  tp_close(idle[1]);
}

/* ---- Fairness with always-ready entries ---------------------------------- */

#define MIX_MAX_ENTRIES 24

struct mix {
  int always, pipes, max;
};

/* With `always` always-ready entries and `pipes` readable pipes, each wait
 * taking at most max, every entry is reported within ceil(ready / max)
 * successive waits, whatever kind it is (the man page's bound): checked
 * as the longest run of waits without it, over 4 rounds of the window. */
static void check_mix(const struct mix *m) {
  anypoll_set *set = tp_set_new();
  int n = m->always + m->pipes;
  int fd[MIX_MAX_ENTRIES], wfd[MIX_MAX_ENTRIES];
  ASSERT(n <= MIX_MAX_ENTRIES);
  for (int i = 0; i < n; i++) {
    if (i < m->always) {
      fd[i] = tp_null_device();
      wfd[i] = -1;
    } else {
      int p[2];
      tp_pipe(p);
      ASSERT_EQ(tp_write(p[1], "x", 1), 1);
      fd[i] = p[0];
      wfd[i] = p[1];
    }
    ASSERT_EQ(anypoll_set_add(set, fd[i], POLLIN, &mark[i]), 0);
  }
  const int window = (n + m->max - 1) / m->max;
  struct anypoll_event out[MIX_MAX_ENTRIES];
  /* Every entry once first: on Windows a pipe's readiness reaches the set
   * through its helper's read, a moment after the write. */
  int seen[MIX_MAX_ENTRIES] = { 0 }, unseen = n;
  for (int k = 0; unseen > 0; k++) {
    ASSERT_LT(k, 100 * window);
    int got = anypoll_set_wait(set, out, m->max, 1000);
    ASSERT_GE(got, 0);
    for (int j = 0; j < got; j++) {
      int i = (int)((int *)out[j].data - mark);
      ASSERT(i >= 0 && i < n);
      if (!seen[i]++)
        unseen--;
    }
  }
  /* Then the bound, from any start: last[i] is the wait that last
   * reported entry i (-1: before the first measured wait). */
  int last[MIX_MAX_ENTRIES], worst = 0;
  for (int i = 0; i < n; i++)
    last[i] = -1;
  for (int k = 0; k < 4 * window; k++) {
    int got = anypoll_set_wait(set, out, m->max, 1000);
    ASSERT_GE(got, 1);
    ASSERT_LE(got, m->max);
    for (int j = 0; j < got; j++) {
      int i = (int)((int *)out[j].data - mark);
      ASSERT(i >= 0 && i < n);
      ASSERT_EQ(out[j].fd, fd[i]);
      ASSERT_EQ(out[j].events, bits_now(fd[i], POLLIN));
      if (k - last[i] > worst)
        worst = k - last[i];
      last[i] = k;
    }
  }
  for (int i = 0; i < n; i++)
    if (4 * window - last[i] > worst)
      worst = 4 * window - last[i];
  printf("%d always-ready + %d pipes, max %d: worst gap %d waits, bound %d\n",
         m->always, m->pipes, m->max, worst, window);
  ASSERT_LE(worst, window);
  ASSERT_EQ(anypoll_set_free(set), 0);
  for (int i = 0; i < n; i++) {
    tp_close(fd[i]);
    if (wfd[i] >= 0)
      tp_close(wfd[i]);
  }
}

TEST(set_fair_with_always_ready_entries) {
  static const struct mix mixes[] = {
    { 1, 20, 1 }, { 20, 1, 1 }, { 3, 4, 2 }, { 4, 3, 2 }, { 5, 5, 3 },
    { 2, 6, 4 },
  };
  for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++)
    check_mix(&mixes[i]);
}
