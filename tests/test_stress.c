/* SPDX-License-Identifier: MIT */
/* Reliability under load: poll() on many streams at once, with no byte
 * lost or duplicated, no wake-up lost, and many threads calling at once.
 * The cases run a short form by default; ANYPOLL_STRESS_SCALE=N makes
 * them N times longer (make stress uses 100), and ANYPOLL_STRESS_SEED
 * picks another pseudo-random sequence. Each prints what it did, for
 * docs/reliability.md. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "stress.h"

/* ---- 1. No lost or duplicated bytes --------------------------------------
 * A producer thread per stream writes random-sized chunks of pseudo-random
 * bytes, pausing now and then; one consumer waits on every stream at once
 * with anypoll and reads what is reported. Byte counts and checksums must
 * match exactly, and every stream must end with its EOF. */

#define BYTE_PIPES 8
#define BYTE_SOCKETS 8
#define BYTE_STREAMS (BYTE_PIPES + BYTE_SOCKETS)

TEST(stress_bytes_exact) {
  long total_chunks = 100000 * stress_scale();
  int rd[BYTE_STREAMS];
  struct producer prod[BYTE_STREAMS];
  for (int i = 0; i < BYTE_STREAMS; i++) {
    int f[2];
    prod[i].is_socket = i >= BYTE_PIPES;
    if (prod[i].is_socket)
      tp_tcp_pair(f);
    else
      tp_pipe(f);
    rd[i] = f[0];
    prod[i].fd = f[1];
    prod[i].chunks = total_chunks / BYTE_STREAMS;
    prod[i].seed = stress_seed() + (uint64_t)i;
  }
  struct watchdog wd;
  watchdog_start(&wd, "stress_bytes_exact", 30000, NULL);
  tp_thread *threads[BYTE_STREAMS];
  for (int i = 0; i < BYTE_STREAMS; i++)
    threads[i] = tp_thread_start(producer_main, &prod[i]);

  struct pollfd fds[BYTE_STREAMS];
  long long got[BYTE_STREAMS] = { 0 };
  uint64_t hash[BYTE_STREAMS];
  for (int i = 0; i < BYTE_STREAMS; i++) {
    tp_pfd(&fds[i], rd[i], POLLIN);
    hash[i] = HASH_START;
  }
  static unsigned char buf[65536];
  long calls = 0, reads = 0;
  int open_streams = BYTE_STREAMS;
  while (open_streams > 0) {
    int n = tp_poll(fds, BYTE_STREAMS, -1);
    calls++;
    ASSERT_GT(n, 0);
    int seen = 0;
    for (int i = 0; i < BYTE_STREAMS; i++) {
      short re = fds[i].revents;
      if (re == 0)
        continue;
      seen++;
      ASSERT_EQ(re & ~(POLLIN | POLLHUP), 0);
      long r = prod[i].is_socket ? tp_recv(rd[i], buf, sizeof buf)
                                 : tp_read(rd[i], buf, sizeof buf);
      reads++;
      ASSERT_GE(r, 0);
      if (r == 0) {
        /* End of stream: the producer closed; nothing more may come. */
        fds[i].fd = -1;
        open_streams--;
        continue;
      }
      hash[i] = hash_bytes(hash[i], buf, r);
      got[i] += r;
      atomic_fetch_add(&wd.progress, r);
    }
    ASSERT_EQ(seen, n);
  }
  long long total = 0;
  for (int i = 0; i < BYTE_STREAMS; i++) {
    tp_thread_join(threads[i]);
    ASSERT_EQ(got[i], prod[i].bytes);
    ASSERT(hash[i] == prod[i].hash);
    total += got[i];
    tp_close(rd[i]);
    if (prod[i].is_socket)
      tp_close(prod[i].fd);
  }
  watchdog_stop(&wd);
  printf("stress_bytes_exact: %ld chunks, %lld bytes over %d pipes and %d "
         "TCP connections, %ld calls, %ld reads: all bytes in order\n",
         total_chunks, total, BYTE_PIPES, BYTE_SOCKETS, calls, reads);
}

/* ---- 2. No lost wake-ups -------------------------------------------------
 * Round after round, a kicker thread writes one byte to one stream chosen
 * at random, after a random delay (none, a yield, a millisecond, a short
 * spin), while the main thread waits on all of them with no timeout. Every
 * write must be reported, on exactly its stream. */

#define WAKE_PIPES 4
#define WAKE_SOCKETS 4
#define WAKE_STREAMS (WAKE_PIPES + WAKE_SOCKETS)

struct kicker {
  int control; /* read end: one command byte per round, 0xff to stop */
  int wr[WAKE_STREAMS];
};

/* Where the rounds stand, for the watchdog's report. */
static atomic_long wake_round, wake_written;
static atomic_int wake_cmd;

static void wake_dump(void) {
  fprintf(stderr, "round %ld: stream %d, delay kind %d; the kicker has "
          "written %ld bytes\n", atomic_load(&wake_round),
          atomic_load(&wake_cmd) & 0x0f, atomic_load(&wake_cmd) >> 4,
          atomic_load(&wake_written));
}

static void spin_ms(double ms) {
  double end = tp_now_ms() + ms;
  while (tp_now_ms() < end) {
  }
}

static void kicker_main(void *arg) {
  struct kicker *k = arg;
  for (;;) {
    unsigned char cmd;
    ASSERT_EQ(tp_read(k->control, &cmd, 1), 1);
    if (cmd == 0xff)
      return;
    int stream = cmd & 0x0f;
    switch (cmd >> 4) {
    case 0:
      break;
    case 1:
      tp_sleep_ms(0);
      break;
    case 2:
      tp_sleep_ms(1);
      break;
    default:
      spin_ms(0.05 * (cmd >> 4));
      break;
    }
    long w = stream >= WAKE_PIPES ? tp_send(k->wr[stream], "k", 1)
                                  : tp_write(k->wr[stream], "k", 1);
    ASSERT_EQ(w, 1);
    atomic_fetch_add(&wake_written, 1);
  }
}

TEST(stress_no_lost_wakeups) {
  long rounds = 2000 * stress_scale();
  struct kicker k;
  int rd[WAKE_STREAMS], control[2];
  for (int i = 0; i < WAKE_STREAMS; i++) {
    int f[2];
    if (i >= WAKE_PIPES)
      tp_tcp_pair(f);
    else
      tp_pipe(f);
    rd[i] = f[0];
    k.wr[i] = f[1];
  }
  tp_pipe(control);
  k.control = control[0];
  struct watchdog wd;
  watchdog_start(&wd, "stress_no_lost_wakeups", 20000, wake_dump);
  tp_thread *t = tp_thread_start(kicker_main, &k);
  uint64_t r = rnd_init(stress_seed());
  struct pollfd fds[WAKE_STREAMS];
  long finite = 0;
  for (long round = 0; round < rounds; round++) {
    int stream = (int)(rnd(&r) % WAKE_STREAMS);
    unsigned char cmd = (unsigned char)(stream | (rnd(&r) % 8) << 4);
    for (int i = 0; i < WAKE_STREAMS; i++)
      tp_pfd(&fds[i], rd[i], POLLIN);
    atomic_store(&wake_round, round);
    atomic_store(&wake_cmd, cmd);
    ASSERT_EQ(tp_write(control[1], &cmd, 1), 1);
    /* Mostly forever; now and then a long finite wait, which must not run
     * out either. */
    int timeout = -1;
    if (rnd(&r) % 8 == 0) {
      timeout = 60000;
      finite++;
    }
    int n = tp_poll(fds, WAKE_STREAMS, timeout);
    if (n != 1 || fds[stream].revents != POLLIN)
      fprintf(stderr, "round %ld: stream %d, cmd %#x: poll gave %d\n", round,
              stream, cmd, n);
    ASSERT_EQ(n, 1);
    for (int i = 0; i < WAKE_STREAMS; i++)
      ASSERT_EQ(fds[i].revents, i == stream ? POLLIN : 0);
    char c;
    long got = stream >= WAKE_PIPES ? tp_recv(rd[stream], &c, 1)
                                    : tp_read(rd[stream], &c, 1);
    ASSERT_EQ(got, 1);
    ASSERT_EQ(c, 'k');
    atomic_fetch_add(&wd.progress, 1);
  }
  unsigned char stop = 0xff;
  ASSERT_EQ(tp_write(control[1], &stop, 1), 1);
  tp_thread_join(t);
  watchdog_stop(&wd);
  for (int i = 0; i < WAKE_STREAMS; i++) {
    tp_close(rd[i]);
    tp_close(k.wr[i]);
  }
  tp_close(control[0]);
  tp_close(control[1]);
  printf("stress_no_lost_wakeups: %ld rounds (%ld with a 60 s timeout, the "
         "rest with none) over %d pipes and %d TCP connections: every write "
         "woke its waiter\n",
         rounds, finite, WAKE_PIPES, WAKE_SOCKETS);
}

/* ---- 3. Concurrency -------------------------------------------------------
 * Eight threads poll at once for a fixed time, all on the same shared
 * descriptors (one pipe and one socket always readable, one of each never
 * readable) and each on its own pipe, which a feeder thread writes to at
 * random. Shared answers must always be right; every fed byte must be read
 * by its owner exactly once, and every owner must have been woken by its
 * pipe at least once. The fixed time can pass before a thread has run at
 * all (a loaded machine), so after the stop the feeder goes on until it
 * has written to every pipe, and a poller until its pipe has woken it. */

#define POLLERS 8

struct shared_fds {
  int ready_pipe, empty_pipe, ready_sock, empty_sock;
};

struct poller {
  const struct shared_fds *sh;
  int own;
  uint64_t seed;
  atomic_int *stop;
  atomic_long *progress;
  long calls, woken;
  long long bytes;
};

static void poller_main(void *arg) {
  struct poller *p = arg;
  uint64_t r = rnd_init(p->seed);
  int shared[4] = { p->sh->ready_pipe, p->sh->empty_pipe, p->sh->ready_sock,
                    p->sh->empty_sock };
  while (!atomic_load(p->stop) || p->woken == 0) {
    struct pollfd fds[5];
    int which[5], n = 0, ready_asked = 0;
    for (int i = 0; i < 4; i++) {
      if (rnd(&r) % 2 == 0)
        continue;
      which[n] = i;
      tp_pfd(&fds[n++], shared[i], POLLIN);
      ready_asked += i % 2 == 0;
    }
    which[n] = 4;
    tp_pfd(&fds[n++], p->own, POLLIN);
    int timeout = (int)(rnd(&r) % 4) * 5;
    int got = tp_poll(fds, (anypoll_nfds_t)n, timeout);
    p->calls++;
    ASSERT_GE(got, ready_asked);
    int seen = 0;
    for (int i = 0; i < n; i++) {
      seen += fds[i].revents != 0;
      if (which[i] == 4) {
        if (fds[i].revents != 0) {
          ASSERT_EQ(fds[i].revents, POLLIN);
          char buf[256];
          long k = tp_read(p->own, buf, sizeof buf);
          ASSERT_GT(k, 0);
          p->bytes += k;
          p->woken++;
        }
      } else {
        ASSERT_EQ(fds[i].revents, which[i] % 2 == 0 ? POLLIN : 0);
      }
    }
    ASSERT_EQ(seen, got);
    atomic_fetch_add(p->progress, 1);
  }
}

struct feeder {
  int wr[POLLERS];
  long long sent[POLLERS];
  uint64_t seed;
  atomic_int *stop;
};

static void feeder_main(void *arg) {
  struct feeder *f = arg;
  uint64_t r = rnd_init(f->seed);
  while (!atomic_load(f->stop)) {
    int i = (int)(rnd(&r) % POLLERS);
    ASSERT_EQ(tp_write(f->wr[i], "f", 1), 1);
    f->sent[i]++;
    if (rnd(&r) % 4 == 0)
      tp_sleep_ms(1);
    else
      tp_sleep_ms(0);
  }
  /* A pipe it never got to: one byte, which wakes its owner. */
  for (int i = 0; i < POLLERS; i++) {
    if (f->sent[i] == 0) {
      ASSERT_EQ(tp_write(f->wr[i], "f", 1), 1);
      f->sent[i]++;
    }
  }
}

TEST(stress_concurrent_pollers) {
  long seconds = 2 * stress_scale();
  if (seconds > 120)
    seconds = 120;
  int rp[2], ep[2], rs[2], es[2];
  tp_pipe(rp);
  tp_pipe(ep);
  tp_tcp_pair(rs);
  tp_tcp_pair(es);
  ASSERT_EQ(tp_write(rp[1], "r", 1), 1);
  ASSERT_EQ(tp_send(rs[1], "r", 1), 1);
  struct shared_fds sh = { rp[0], ep[0], rs[0], es[0] };
  atomic_int stop;
  atomic_init(&stop, 0);
  struct watchdog wd;
  watchdog_start(&wd, "stress_concurrent_pollers", 20000, NULL);
  struct feeder fe;
  struct poller po[POLLERS];
  tp_thread *threads[POLLERS];
  int own[POLLERS];
  for (int i = 0; i < POLLERS; i++) {
    int f[2];
    tp_pipe(f);
    own[i] = f[0];
    fe.wr[i] = f[1];
    fe.sent[i] = 0;
    po[i] = (struct poller){ &sh, f[0], stress_seed() + 100 + (uint64_t)i,
                             &stop, &wd.progress, 0, 0, 0 };
  }
  fe.seed = stress_seed() + 99;
  fe.stop = &stop;
  for (int i = 0; i < POLLERS; i++)
    threads[i] = tp_thread_start(poller_main, &po[i]);
  tp_thread *ft = tp_thread_start(feeder_main, &fe);
  tp_sleep_ms((int)(seconds * 1000));
  atomic_store(&stop, 1);
  tp_thread_join(ft);
  for (int i = 0; i < POLLERS; i++)
    tp_thread_join(threads[i]);
  watchdog_stop(&wd);

  long calls = 0;
  long long fed = 0;
  for (int i = 0; i < POLLERS; i++) {
    /* What the owner had not read yet is still there, exactly. */
    struct pollfd fd;
    tp_pfd(&fd, own[i], POLLIN);
    while (tp_poll(&fd, 1, 0) == 1) {
      char buf[256];
      long k = tp_read(own[i], buf, sizeof buf);
      ASSERT_GT(k, 0);
      po[i].bytes += k;
    }
    ASSERT_EQ(po[i].bytes, fe.sent[i]);
    ASSERT_GT(po[i].woken, 0);
    calls += po[i].calls;
    fed += fe.sent[i];
    tp_close(own[i]);
    tp_close(fe.wr[i]);
  }
  int fs[] = { rp[0], rp[1], ep[0], ep[1], rs[0], rs[1], es[0], es[1] };
  for (int i = 0; i < 8; i++)
    tp_close(fs[i]);
  printf("stress_concurrent_pollers: %d threads for %ld s: %ld calls, %lld "
         "bytes fed and read exactly once\n",
         POLLERS, seconds, calls, fed);
}
