/* SPDX-License-Identifier: MIT */
/* What the stress cases share (tests/stress.c): the run's length and seed,
 * a pseudo-random sequence and a checksum that are the same on every
 * platform, a watchdog that turns a hang into a failure, and the producer
 * thread that writes a checksummed byte stream. Used by test_stress.c,
 * test_reliability.c, test_set_stress.c and test_set_flips.c. */
#ifndef ANYPOLL_TEST_STRESS_H
#define ANYPOLL_TEST_STRESS_H

#include <stdatomic.h>
#include <stdint.h>

#include "test.h"

/* ANYPOLL_STRESS_SCALE: how many times longer than the short default form
 * a stress case runs (make stress uses 100). */
long stress_scale(void);
/* ANYPOLL_STRESS_SEED: another pseudo-random sequence. */
uint64_t stress_seed(void);
/* xorshift64*: small, fast, and the same sequence on every platform. */
uint64_t rnd(uint64_t *state);
uint64_t rnd_init(uint64_t seed);
/* FNV-1a over a byte stream, from HASH_START. */
uint64_t hash_bytes(uint64_t h, const unsigned char *p, long n);
#define HASH_START 0xcbf29ce484222325ULL

/* Fails the test if `progress` stands still for limit_ms: a lost wake-up
 * shows as a hang, and this turns it into a failure that says where. */
struct watchdog {
  atomic_long progress;
  atomic_int stop;
  int limit_ms;
  const char *what;
  void (*dump)(void); /* says more about where it stands, or NULL */
  tp_thread *thread;
};

void watchdog_start(struct watchdog *w, const char *what, int limit_ms,
                    void (*dump)(void));
void watchdog_stop(struct watchdog *w);

/* The largest chunk a producer writes at once. */
#define CHUNK_MAX 512

/* A producer thread (producer_main) writes `chunks` chunks of random size
 * and bytes from `seed` to fd, pausing now and then, and counts and
 * checksums them into bytes and hash; then it closes a pipe, or shuts a
 * socket down (closed by the caller once every thread is done). */
struct producer {
  int fd;
  int is_socket;
  long chunks;
  uint64_t seed;
  long long bytes;
  uint64_t hash;
};

void producer_main(void *arg);

#endif /* ANYPOLL_TEST_STRESS_H */
