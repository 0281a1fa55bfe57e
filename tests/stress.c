/* SPDX-License-Identifier: MIT */
/* What the stress cases share (declared and described in stress.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "stress.h"

long stress_scale(void) {
  const char *s = getenv("ANYPOLL_STRESS_SCALE");
  long n = s != NULL ? strtol(s, NULL, 10) : 1;
  return n > 0 ? n : 1;
}

uint64_t stress_seed(void) {
  const char *s = getenv("ANYPOLL_STRESS_SEED");
  return s != NULL ? strtoull(s, NULL, 10) : 20261203u;
}

/* xorshift64*: small, fast, and the same sequence on every platform. */
uint64_t rnd(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

uint64_t rnd_init(uint64_t seed) {
  return seed * 0x9E3779B97F4A7C15ULL | 1;
}

/* FNV-1a over a byte stream. */
uint64_t hash_bytes(uint64_t h, const unsigned char *p, long n) {
  for (long i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

static void watchdog_main(void *arg) {
  struct watchdog *w = arg;
  long last = -1;
  double since = tp_now_ms();
  while (!atomic_load(&w->stop)) {
    tp_sleep_ms(50);
    long now = atomic_load(&w->progress);
    if (now != last) {
      last = now;
      since = tp_now_ms();
    } else if (tp_now_ms() - since > w->limit_ms) {
      fprintf(stderr, "watchdog: %s made no progress for %d ms (at %ld)\n",
              w->what, w->limit_ms, now);
      if (w->dump != NULL)
        w->dump();
      tp_fail(__FILE__, __LINE__, "no progress: a lost wake-up or a hang", 0,
              0, 0);
    }
  }
}

void watchdog_start(struct watchdog *w, const char *what, int limit_ms,
                    void (*dump)(void)) {
  atomic_init(&w->progress, 0);
  atomic_init(&w->stop, 0);
  /* TP_WATCHDOG_MS lengthens the bound, to attach a debugger to a hang. */
  const char *env = getenv("TP_WATCHDOG_MS");
  w->limit_ms = env != NULL ? atoi(env) : limit_ms;
  w->what = what;
  w->dump = dump;
  w->thread = tp_thread_start(watchdog_main, w);
}

void watchdog_stop(struct watchdog *w) {
  atomic_store(&w->stop, 1);
  tp_thread_join(w->thread);
}

void producer_main(void *arg) {
  struct producer *p = arg;
  uint64_t r = rnd_init(p->seed);
  unsigned char buf[CHUNK_MAX];
  p->hash = HASH_START;
  p->bytes = 0;
  for (long c = 0; c < p->chunks; c++) {
    long n = 1 + (long)(rnd(&r) % CHUNK_MAX);
    for (long i = 0; i < n; i++)
      buf[i] = (unsigned char)rnd(&r);
    for (long off = 0; off < n;) {
      long w = p->is_socket ? tp_send(p->fd, buf + off, (size_t)(n - off))
                            : tp_write(p->fd, buf + off, (size_t)(n - off));
      if (w <= 0)
        fprintf(stderr, "%s %d: write failed, errno %d\n",
                p->is_socket ? "socket" : "pipe", p->fd, errno);
      ASSERT_GT(w, 0);
      off += w;
    }
    p->hash = hash_bytes(p->hash, buf, n);
    p->bytes += n;
    uint64_t pause = rnd(&r) % 512;
    if (pause == 0)
      tp_sleep_ms(1);
    else if (pause < 4)
      tp_sleep_ms(0);
  }
  /* The consumer's end of stream. A socket is only shut down here, and
   * closed once every thread is done (see tp_close_early). */
  if (p->is_socket)
    tp_shutdown_wr(p->fd);
  else
    tp_close(p->fd);
}
