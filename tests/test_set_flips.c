/* SPDX-License-Identifier: MIT */
/* The watch set under load, continued (test_set_stress.c): registrations
 * whose direction a mod flips at every step. ANYPOLL_STRESS_SCALE and
 * ANYPOLL_STRESS_SEED as in test_stress.c. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "stress.h"

/* Sockets whose registration flips direction at every step: each sends a
 * chunk when the set reports it writable, then is modified to wait for
 * the echo, read when reported readable, and modified back. A report must
 * carry only the direction asked for by the last mod (a result of the
 * poll issued before the mod must not leak through), and every echoed
 * byte must come back as sent. */

#define FLIP_PAIRS 8

struct flip_pair {
  int a, b;          /* a in the set, b echoed by its own thread */
  int sending;       /* registered for POLLOUT (else POLLIN) */
  long rounds;       /* round trips still to make */
  unsigned char out[1024];
  long len, got;     /* the chunk in flight, and how much came back */
};

static void flip_echo_main(void *arg) {
  struct flip_pair *p = arg;
  unsigned char buf[1024];
  for (;;) {
    long n = tp_recv(p->b, buf, sizeof buf);
    ASSERT_GE(n, 0);
    if (n == 0)
      break;
    for (long off = 0; off < n;) {
      long w = tp_send(p->b, buf + off, (size_t)(n - off));
      ASSERT_GT(w, 0);
      off += w;
    }
  }
  tp_shutdown_wr(p->b);
}

TEST(stress_set_mod_flips_direction) {
  static struct flip_pair pr[FLIP_PAIRS];
  anypoll_set *set = tp_set_new();
  tp_thread *et[FLIP_PAIRS];
  uint64_t r = rnd_init(stress_seed() + 11);
  long rounds = 100 * stress_scale();
  for (int i = 0; i < FLIP_PAIRS; i++) {
    int fds[2];
    tp_tcp_pair(fds);
    pr[i].a = fds[0];
    pr[i].b = fds[1];
    pr[i].sending = 1;
    pr[i].rounds = rounds;
    ASSERT_EQ(anypoll_set_add(set, pr[i].a, POLLOUT, &pr[i]), 0);
    et[i] = tp_thread_start(flip_echo_main, &pr[i]);
  }
  struct watchdog wd;
  watchdog_start(&wd, "stress_set_mod_flips_direction", 30000, NULL);
  static const int timeouts[] = { 0, 5, -1 };
  int done = 0;
  long waits = 0, reports = 0;
  while (done < FLIP_PAIRS) {
    struct anypoll_event ev[4];
    int n = anypoll_set_wait(set, ev, 1 + (int)(rnd(&r) % 4),
                             timeouts[rnd(&r) % 3]);
    ASSERT_GE(n, 0);
    waits++;
    for (int i = 0; i < n; i++) {
      struct flip_pair *p = ev[i].data;
      reports++;
      atomic_fetch_add(&wd.progress, 1);
      ASSERT_EQ(ev[i].fd, p->a);
      if (p->sending) {
        ASSERT_EQ(ev[i].events, (unsigned)POLLOUT);
        p->len = 1 + (long)(rnd(&r) % sizeof p->out);
        for (long k = 0; k < p->len; k++)
          p->out[k] = (unsigned char)rnd(&r);
        for (long off = 0; off < p->len;) {
          long w = tp_send(p->a, p->out + off, (size_t)(p->len - off));
          ASSERT_GT(w, 0);
          off += w;
        }
        p->got = 0;
        p->sending = 0;
        ASSERT_EQ(anypoll_set_mod(set, p->a, POLLIN, p), 0);
        continue;
      }
      ASSERT_EQ(ev[i].events, (unsigned)POLLIN);
      unsigned char buf[1024];
      long k = tp_recv(p->a, buf, (size_t)(p->len - p->got));
      ASSERT_GT(k, 0);
      ASSERT_EQ(memcmp(buf, p->out + p->got, (size_t)k), 0);
      p->got += k;
      if (p->got < p->len)
        continue; /* the rest of the echo: still POLLIN */
      if (--p->rounds == 0) {
        ASSERT_EQ(anypoll_set_del(set, p->a), 0);
        done++;
      } else {
        p->sending = 1;
        ASSERT_EQ(anypoll_set_mod(set, p->a, POLLOUT, p), 0);
      }
    }
  }
  watchdog_stop(&wd);
  for (int i = 0; i < FLIP_PAIRS; i++) {
    tp_shutdown_wr(pr[i].a);
    tp_thread_join(et[i]);
    char c;
    ASSERT_EQ(tp_recv(pr[i].a, &c, 1), 0);
  }
  ASSERT_EQ(anypoll_set_free(set), 0);
  for (int i = 0; i < FLIP_PAIRS; i++) {
    tp_close(pr[i].a);
    tp_close(pr[i].b);
  }
  printf("stress_set_mod_flips_direction (%s): %d socket pairs x %ld round "
         "trips, a mod at every step; %ld waits, %ld reports\n",
         tp_set_backend_name(), FLIP_PAIRS, rounds, waits, reports);
}
