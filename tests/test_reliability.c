/* SPDX-License-Identifier: MIT */
/* Reliability: load, concurrency, faults and bad input. The
 * stress cases run a short form by default; ANYPOLL_STRESS_SCALE=N makes
 * them N times longer (make stress uses 100), and ANYPOLL_STRESS_SEED picks
 * another pseudo-random sequence. Each prints what it did, for
 * docs/reliability.md. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "test.h"

/* ---- Shared pieces ------------------------------------------------------- */

static long stress_scale(void) {
  const char *s = getenv("ANYPOLL_STRESS_SCALE");
  long n = s != NULL ? strtol(s, NULL, 10) : 1;
  return n > 0 ? n : 1;
}

static uint64_t stress_seed(void) {
  const char *s = getenv("ANYPOLL_STRESS_SEED");
  return s != NULL ? strtoull(s, NULL, 10) : 20261203u;
}

/* xorshift64*: small, fast, and the same sequence on every platform. */
static uint64_t rnd(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t rnd_init(uint64_t seed) {
  return seed * 0x9E3779B97F4A7C15ULL | 1;
}

/* FNV-1a over a byte stream. */
static uint64_t hash_bytes(uint64_t h, const unsigned char *p, long n) {
  for (long i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}
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

static void watchdog_start(struct watchdog *w, const char *what,
                           int limit_ms, void (*dump)(void)) {
  atomic_init(&w->progress, 0);
  atomic_init(&w->stop, 0);
  /* TP_WATCHDOG_MS lengthens the bound, to attach a debugger to a hang. */
  const char *env = getenv("TP_WATCHDOG_MS");
  w->limit_ms = env != NULL ? atoi(env) : limit_ms;
  w->what = what;
  w->dump = dump;
  w->thread = tp_thread_start(watchdog_main, w);
}

static void watchdog_stop(struct watchdog *w) {
  atomic_store(&w->stop, 1);
  tp_thread_join(w->thread);
}

/* Bits poll() may set beyond those asked for. */
#define ALWAYS_REPORTED (POLLERR | POLLHUP | POLLNVAL)

/* ---- 1. No lost or duplicated bytes --------------------------------------
 * A producer thread per stream writes random-sized chunks of pseudo-random
 * bytes, pausing now and then; one consumer waits on every stream at once
 * with anypoll and reads what is reported. Byte counts and checksums must
 * match exactly, and every stream must end with its EOF. */

#define BYTE_PIPES 8
#define BYTE_SOCKETS 8
#define BYTE_STREAMS (BYTE_PIPES + BYTE_SOCKETS)
#define CHUNK_MAX 512

struct producer {
  int fd;
  int is_socket;
  long chunks;
  uint64_t seed;
  long long bytes;
  uint64_t hash;
};

static void producer_main(void *arg) {
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

/* ---- 3. No leaks ----------------------------------------------------------
 * 100,000 calls over mixed kinds that find something ready, and 2,000 that
 * wait and time out; then descriptors (or handles) and threads must be back
 * where they started. Memory is LeakSanitizer's part (the sanitize preset). */

static void wait_threads(int expected) {
  for (int i = 0; i < 300 && tp_thread_count() != expected; i++)
    tp_sleep_ms(10);
}

TEST(no_leaks_after_many_calls) {
  tp_set_pool_idle_ms(50);
  int idle[2], busy[2], s[2], out[2];
  tp_pipe(idle);
  tp_pipe(busy);
  tp_pipe(out);
  tp_tcp_pair(s);
  int null_fd = tp_null_device();
  struct pollfd fds[6];
  tp_pfd(&fds[0], idle[0], POLLIN);
  tp_pfd(&fds[1], s[0], POLLIN);
  tp_pfd(&fds[2], busy[0], POLLIN);
  tp_pfd(&fds[3], out[1], POLLOUT);
  tp_pfd(&fds[4], null_fd, POLLIN);
  tp_pfd(&fds[5], tp_unused_fd(), POLLIN);
  /* Warm up: the thread's wake event, Winsock's and the C runtime's state. */
  ASSERT_EQ(tp_poll(fds, 3, 1), 0);
  /* The warm-up's pooled helper (Windows) leaves 50 ms after it, or later
   * on a loaded machine: the baseline is a count that held for 100 ms. */
  int threads0 = tp_thread_count();
  for (int i = 0, same = 0; i < 100 && same < 2; i++) {
    tp_sleep_ms(50);
    int now = tp_thread_count();
    same = now == threads0 ? same + 1 : 0;
    threads0 = now;
  }
  long probe0 = tp_handle_probe();
  long count0 = tp_descriptor_count();

  ASSERT_EQ(tp_write(busy[1], "x", 1), 1);
  /* The historical strategies are comparators, not what anypoll ships, and
   * under Wine a call of theirs costs over a millisecond: a tenth. */
  long calls = tp_backend == ANYPOLL_BACKEND_SLEEP1 ||
                       tp_backend == ANYPOLL_BACKEND_YIELD
                   ? 10000
                   : 100000;
  for (long i = 0; i < calls; i++)
    ASSERT_EQ(tp_poll(fds, 6, 0), 4);
  char c;
  ASSERT_EQ(tp_read(busy[0], &c, 1), 1);
  for (int i = 0; i < 2000; i++) {
    int r = tp_poll(fds, 3, i % 2);
    if (r != 0)
      fprintf(stderr, "call %d: %d, errno %d\n", i, r, errno);
    ASSERT_EQ(r, 0);
  }

  wait_threads(threads0);
  ASSERT_EQ(tp_thread_count(), threads0);
  ASSERT_EQ(tp_handle_probe(), probe0);
  ASSERT_EQ(tp_descriptor_count(), count0);
  printf("no_leaks_after_many_calls: %ld + 2000 calls over 6 entries: %d "
         "threads, %ld descriptors/handles (lowest free %ld) before and "
         "after\n",
         calls, threads0, count0, probe0);
  tp_close(idle[0]);
  tp_close(idle[1]);
  tp_close(busy[0]);
  tp_close(busy[1]);
  tp_close(out[0]);
  tp_close(out[1]);
  tp_close(s[0]);
  tp_close(s[1]);
  tp_close(null_fd);
}

/* ---- 4. Concurrency -------------------------------------------------------
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

/* ---- 5. Faults ------------------------------------------------------------
 * A descriptor closed by another thread while a call waits on it. POSIX
 * leaves this unspecified; Linux keeps waiting (the wait holds the open
 * file) and reports POLLNVAL when it next looks, at the latest when the
 * timeout ends. Every anypoll backend must do no worse: return by the
 * timeout, with POLLNVAL (or POLLHUP), never hang or crash. */

static void closed_mid_wait(int fd, int other) {
  struct tp_later c;
  struct pollfd p;
  tp_pfd(&p, fd, POLLIN);
  tp_thread *t = tp_after(&c, fd, 100, TP_CLOSE_EARLY);
  double t0 = tp_now_ms();
  int n = tp_poll(&p, 1, 1500);
  double took = tp_now_ms() - t0;
  tp_thread_join(t);
  printf("closed mid-wait: %d, revents %#x after %.0f ms\n", n, p.revents,
         took);
  ASSERT_EQ(n, 1);
  ASSERT(p.revents & (POLLNVAL | POLLHUP));
  ASSERT_EQ(p.revents & ~(POLLNVAL | POLLHUP | POLLIN), 0);
  tp_close_early_done(fd);
  tp_close(other);
}

TEST(fault_pipe_closed_by_other_thread_mid_wait) {
  int p[2];
  tp_pipe(p);
  closed_mid_wait(p[0], p[1]);
}

TEST(fault_socket_closed_by_other_thread_mid_wait) {
  int s[2];
  tp_tcp_pair(s);
  closed_mid_wait(s[0], s[1]);
}

/* The process at the other end of a connection is killed while we wait:
 * its system closes the socket, and the wait must end readable (EOF) or
 * with an error, never hang. */
TEST(fault_socket_peer_killed_mid_wait) {
  int port;
  int l = tp_tcp_listener(&port);
  tp_child *child = tp_child_connector(port, 60000);
  int s = tp_tcp_accept(l);
  tp_close(l);
  struct pollfd p;
  tp_pfd(&p, s, POLLIN);
  ASSERT_EQ(tp_poll(&p, 1, 10000), 1);
  char c;
  ASSERT_EQ(tp_recv(s, &c, 1), 1);
  ASSERT_EQ(c, 'c');
  struct tp_later k;
  tp_thread *t = tp_kill_after(&k, child, 100);
  struct watchdog wd;
  watchdog_start(&wd, "fault_socket_peer_killed_mid_wait", 20000, NULL);
  tp_pfd(&p, s, POLLIN);
  int n = tp_poll(&p, 1, -1);
  watchdog_stop(&wd);
  tp_thread_join(t);
  tp_child_wait(child);
  printf("peer killed mid-wait: %d, revents %#x\n", n, p.revents);
  ASSERT_EQ(n, 1);
  ASSERT(p.revents & (POLLIN | POLLHUP | POLLERR));
  /* Reported readable or failed, so this returns at once: EOF or reset. */
  ASSERT_LE(tp_recv(s, &c, 1), 0);
  tp_close(s);
}

/* ---- 6. Bad input ------------------------------------------------------- */

TEST(bad_input_huge_nfds_einval) {
  struct pollfd p;
  tp_pfd(&p, -1, POLLIN);
  anypoll_nfds_t huge[] = {
    (anypoll_nfds_t)tp_nfds_limit() + 1,
    (anypoll_nfds_t)-1,
#if ULONG_MAX > 0xffffffffUL
    /* 2^32 + 1: a kernel taking nfds as 32 bits would see 1. */
    (anypoll_nfds_t)((1ULL << 32) + 1),
#endif
  };
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    errno = 0;
    ASSERT_EQ(tp_poll(&p, huge[i], 0), -1);
    ASSERT_EQ(errno, EINVAL);
  }
}

/* Unknown bits in events are ignored; revents holds only what was asked
 * for plus the conditions always reported. */
TEST(bad_input_garbage_event_bits) {
  int p[2], s[2];
  tp_pipe(p);
  tp_tcp_pair(s);
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  ASSERT_EQ(tp_send(s[1], "x", 1), 1);
  short masks[] = { (short)0xffff, (short)0x7ff8, (short)0x8000, 0 };
  for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
    struct pollfd fds[3];
    tp_pfd(&fds[0], p[0], masks[m]);
    tp_pfd(&fds[1], s[0], masks[m]);
    tp_pfd(&fds[2], p[1], masks[m]);
    int n = tp_poll(fds, 3, 0);
    ASSERT_GE(n, 0);
    int seen = 0;
    for (int i = 0; i < 3; i++) {
      ASSERT_EQ(fds[i].revents & ~(masks[m] | ALWAYS_REPORTED), 0);
      seen += fds[i].revents != 0;
    }
    ASSERT_EQ(seen, n);
    if (masks[m] & POLLIN) {
      ASSERT(fds[0].revents & POLLIN);
      ASSERT(fds[1].revents & POLLIN);
    }
    if (masks[m] & POLLOUT)
      ASSERT(fds[2].revents & POLLOUT);
  }
  tp_close(p[0]);
  tp_close(p[1]);
  tp_close(s[0]);
  tp_close(s[1]);
}

/* INT_MIN waits forever like -1; INT_MAX waits (about 24 days) without
 * overflowing into an early return; both end on data. */
TEST(bad_input_extreme_timeouts) {
  int timeouts[] = { INT_MIN, -2, INT_MAX, INT_MAX - 1 };
  for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
    int p[2];
    tp_pipe(p);
    struct pollfd fd;
    tp_pfd(&fd, p[0], POLLIN);
    ASSERT_EQ(tp_poll(&fd, 1, 0), 0);
    /* The clock starts before the writer does: the write comes at least
     * 100 ms after t0 however late this thread gets to the call (read
     * after tp_after, a preemption of 50 ms between the two made a call
     * that waited for the write look early). */
    double t0 = tp_now_ms();
    struct tp_later w;
    tp_thread *t = tp_after(&w, p[1], 100, TP_WRITE_BYTE);
    ASSERT_EQ(tp_poll(&fd, 1, timeouts[i]), 1);
    ASSERT_EQ(fd.revents, POLLIN);
    /* It waited for the write rather than returning at once. */
    ASSERT_GE(tp_now_ms() - t0, 50);
    tp_thread_join(t);
    tp_close(p[0]);
    tp_close(p[1]);
  }
}

/* Descriptors that were never opened, of every size, are POLLNVAL; the
 * call still reports the valid entry beside them. */
TEST(bad_input_never_opened_fds) {
  int p[2];
  tp_pipe(p);
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  int bad[] = { tp_unused_fd(), 1000, 65535, 1 << 20, INT_MAX };
  struct pollfd fds[6];
  for (int i = 0; i < 5; i++)
    tp_pfd(&fds[i], bad[i], POLLIN | POLLOUT);
  tp_pfd(&fds[5], p[0], POLLIN);
  ASSERT_EQ(tp_poll(fds, 6, 1000), 6);
  for (int i = 0; i < 5; i++)
    ASSERT_EQ(fds[i].revents, POLLNVAL);
  ASSERT_EQ(fds[5].revents, POLLIN);
#ifdef _WIN32
  /* Windows' pollfd.fd is a 64-bit SOCKET: a value whose low 32 bits name
   * an open descriptor is still not that descriptor. POSIX's fd is an int,
   * so there is nothing to check there. */
  struct pollfd wide;
  wide.fd = ((SOCKET)1 << 32) | (SOCKET)p[0];
  wide.events = POLLIN;
  ASSERT_EQ(tp_poll(&wide, 1, 0), 1);
  ASSERT_EQ(wide.revents, POLLNVAL);
#endif
  tp_close(p[0]);
  tp_close(p[1]);
}

/* ---- 7. The watch set under load -----------------------------------------
 * Producers write random chunks into synchronous pipes, anypoll_pipe pipes
 * and TCP sockets; several threads wait on one set holding them all with
 * ANYPOLL_ONESHOT, each reading once per report and re-arming with mod.
 * Meanwhile a churn thread deletes and adds back the data streams (while
 * armed: a parked helper read, a pending zero-byte read or AFD poll) and
 * always-ready pipes. Every byte must arrive once and in order (counts and
 * checksums), a one-shot registration must never be reported to two
 * threads at once, and an added ready entry must wake a waiter. The
 * watchdog turns a lost wake-up into a failure. */

#define SET_STREAMS_EACH 4
#define SET_STREAMS (3 * SET_STREAMS_EACH)
#define SET_WAITERS 3
#define SET_CHURN 4

struct set_stream;

/* One registration of a stream: its data pointer in the set. A report of
 * a registration that churn has since replaced is stale and dropped. */
struct set_token {
  struct set_stream *st;
  atomic_int held; /* 1 while a waiter owns its one-shot report */
  struct set_token *next;
};

struct set_stream {
  int rd;          /* the end the set watches */
  int wr;          /* the producer's end */
  int is_socket;
  int is_anypipe; /* read with anypoll_read (overlapped on Windows) */
  atomic_flag lock; /* a waiter's read and mod, or churn's del and add */
  struct set_token *cur; /* the registration in the set; under lock */
  struct set_token *tokens; /* every one made, freed at the end */
  long long bytes; /* read so far, by whichever waiter held it */
  uint64_t hash;
  int ended;
};

struct set_stress {
  anypoll_set *set;
  struct set_stream st[SET_STREAMS];
  int churn_rd[SET_CHURN], churn_wr[SET_CHURN];
  char churn_tag[SET_CHURN];
  char quit_tag;
  atomic_int ended; /* streams that reached end of file */
  atomic_long churn_seen[SET_CHURN];
  atomic_long stale;    /* reports of replaced registrations, dropped */
  long restreams;       /* data streams deleted and added back */
  atomic_int churn_stop;
  struct watchdog wd;
  uint64_t seed;
};

struct set_waiter {
  struct set_stress *s;
  int id;
  long waits, events;
};

static void stream_lock(struct set_stream *st) {
  while (atomic_flag_test_and_set(&st->lock))
    tp_sleep_ms(0);
}

static void stream_unlock(struct set_stream *st) {
  atomic_flag_clear(&st->lock);
}

/* A new registration of st in the set; under st's lock. */
static void stream_register(struct set_stress *s, struct set_stream *st) {
  struct set_token *t = calloc(1, sizeof *t);
  ASSERT(t != NULL);
  t->st = st;
  atomic_init(&t->held, 0);
  t->next = st->tokens;
  st->tokens = t;
  st->cur = t;
  ASSERT_EQ(anypoll_set_add(s->set, st->rd, POLLIN | ANYPOLL_ONESHOT, t),
            0);
}

static void set_stress_read(struct set_stress *s, struct set_token *t,
                            unsigned revents) {
  struct set_stream *st = t->st;
  /* One-shot: nobody else may hold this registration's report until the
   * mod below re-arms it. */
  ASSERT_EQ(atomic_exchange(&t->held, 1), 0);
  ASSERT((revents & (POLLIN | POLLHUP)) != 0);
  ASSERT_EQ(revents & ~(unsigned)(POLLIN | POLLHUP), 0u);
  stream_lock(st);
  if (t != st->cur) {
    /* Reported just before churn replaced it: the new registration
     * reports whatever is still there. */
    atomic_fetch_add(&s->stale, 1);
    stream_unlock(st);
    return;
  }
  ASSERT(!st->ended);
  unsigned char buf[2048];
  /* A _pipe() pipe is read as the program reads its own pipes, with
   * _read. With the poll-based set on Windows, another waiter's
   * anypoll_poll may have a helper's zero-byte read on this pipe at that
   * moment (one that the data has already ended); the lock model fails
   * anypoll_read's _read then, though Windows would not make it wait
   * (docs/windows-design.md, "The program's own calls on a registered
   * pipe": a read waits only while the pipe is empty). */
  long n = st->is_socket    ? tp_recv(st->rd, buf, sizeof buf)
           : st->is_anypipe ? anypoll_read(st->rd, buf, sizeof buf)
                            : tp_read(st->rd, buf, sizeof buf);
  ASSERT_GE(n, 0);
  if (n == 0) {
    st->ended = 1;
    ASSERT_EQ(anypoll_set_del(s->set, st->rd), 0);
    st->cur = NULL;
    stream_unlock(st);
    atomic_fetch_add(&s->ended, 1);
    return;
  }
  st->hash = hash_bytes(st->hash, buf, n);
  st->bytes += n;
  atomic_store(&t->held, 0);
  ASSERT_EQ(anypoll_set_mod(s->set, st->rd, POLLIN | ANYPOLL_ONESHOT, t), 0);
  stream_unlock(st);
}

static void set_waiter_main(void *arg) {
  struct set_waiter *w = arg;
  struct set_stress *s = w->s;
  uint64_t r = rnd_init(s->seed + 100 + (uint64_t)w->id);
  static const int timeouts[] = { 0, 1, 20, -1 };
  for (;;) {
    struct anypoll_event ev[4];
    int max = 1 + (int)(rnd(&r) % 4);
    int n = anypoll_set_wait(s->set, ev, max, timeouts[rnd(&r) % 4]);
    ASSERT_GE(n, 0);
    ASSERT_LE(n, max);
    w->waits++;
    for (int i = 0; i < n; i++) {
      atomic_fetch_add(&s->wd.progress, 1);
      w->events++;
      if (ev[i].data == &s->quit_tag)
        return;
      if (ev[i].data >= (void *)s->churn_tag &&
          ev[i].data < (void *)(s->churn_tag + SET_CHURN)) {
        /* Reported once (one-shot) and left disabled: churn deletes it. */
        ASSERT_EQ(ev[i].events, (unsigned)POLLIN);
        atomic_fetch_add(&s->churn_seen[(char *)ev[i].data - s->churn_tag],
                         1);
        continue;
      }
      struct set_token *t = ev[i].data;
      ASSERT(t->st >= s->st && t->st < s->st + SET_STREAMS);
      ASSERT_EQ(ev[i].fd, t->st->rd);
      set_stress_read(s, t, ev[i].events);
    }
  }
}

/* Half of its moves delete a data stream and add it back, whatever state
 * its registration is in; the other half add or delete an always-ready
 * pipe, and the first and every 8th such add wait until a waiter has
 * reported it: the add of a ready entry must wake a waiter, also under
 * load. The streams can all end before this thread has been scheduled
 * at all (a fast run on a busy machine), so it goes on past the stop
 * request until two such adds have been reported. */
static void set_churn_main(void *arg) {
  struct set_stress *s = arg;
  uint64_t r = rnd_init(s->seed + 7);
  int in[SET_CHURN] = { 0 };
  long op = 0, waited = 0;
  while (!atomic_load(&s->churn_stop) || waited < 2) {
    if (rnd(&r) % 2 == 0) {
      struct set_stream *st = &s->st[rnd(&r) % SET_STREAMS];
      stream_lock(st);
      if (!st->ended) {
        ASSERT_EQ(anypoll_set_del(s->set, st->rd), 0);
        stream_register(s, st);
        s->restreams++;
      }
      stream_unlock(st);
    } else {
      int c = (int)(rnd(&r) % SET_CHURN);
      if (in[c]) {
        ASSERT_EQ(anypoll_set_del(s->set, s->churn_rd[c]), 0);
        in[c] = 0;
      } else {
        long seen = atomic_load(&s->churn_seen[c]);
        ASSERT_EQ(anypoll_set_add(s->set, s->churn_rd[c],
                                  POLLIN | ANYPOLL_ONESHOT, &s->churn_tag[c]),
                  0);
        in[c] = 1;
        if (op++ % 8 == 0) {
          while (atomic_load(&s->churn_seen[c]) == seen)
            tp_sleep_ms(1);
          atomic_fetch_add(&s->wd.progress, 1);
          waited++;
        }
      }
    }
    tp_sleep_ms(rnd(&r) % 4 == 0 ? 1 : 0);
  }
  for (int c = 0; c < SET_CHURN; c++)
    if (in[c])
      ASSERT_EQ(anypoll_set_del(s->set, s->churn_rd[c]), 0);
}

TEST(stress_set_oneshot_bytes_exact) {
  static struct set_stress s;
  memset(&s, 0, sizeof s);
  s.seed = stress_seed();
  s.set = tp_set_new();
  struct producer prod[SET_STREAMS];
  tp_thread *pt[SET_STREAMS], *wt[SET_WAITERS];
  struct set_waiter w[SET_WAITERS];
  for (int i = 0; i < SET_STREAMS; i++) {
    struct set_stream *st = &s.st[i];
    int fds[2];
    int kind = i % 3;
    if (kind == 0)
      tp_pipe(fds);
    else if (kind == 1)
      ASSERT_EQ(anypoll_pipe(fds), 0);
    else
      tp_tcp_pair(fds);
    st->rd = fds[0];
    st->wr = fds[1];
    st->is_socket = kind == 2;
    st->is_anypipe = kind == 1;
    atomic_flag_clear(&st->lock);
    st->hash = HASH_START;
    stream_register(&s, st);
  }
  for (int c = 0; c < SET_CHURN; c++) {
    int fds[2];
    tp_pipe(fds);
    s.churn_rd[c] = fds[0];
    s.churn_wr[c] = fds[1];
    ASSERT_EQ(tp_write(fds[1], "c", 1), 1);
  }
  watchdog_start(&s.wd, "stress_set_oneshot_bytes_exact", 30000, NULL);
  for (int i = 0; i < SET_WAITERS; i++) {
    w[i].s = &s;
    w[i].id = i;
    w[i].waits = w[i].events = 0;
    wt[i] = tp_thread_start(set_waiter_main, &w[i]);
  }
  tp_thread *ct = tp_thread_start(set_churn_main, &s);
  for (int i = 0; i < SET_STREAMS; i++) {
    prod[i].fd = s.st[i].wr;
    prod[i].is_socket = s.st[i].is_socket;
    prod[i].chunks = 400 * stress_scale();
    prod[i].seed = s.seed + 1000 + (uint64_t)i;
    pt[i] = tp_thread_start(producer_main, &prod[i]);
  }
  for (int i = 0; i < SET_STREAMS; i++)
    tp_thread_join(pt[i]);
  while (atomic_load(&s.ended) < SET_STREAMS)
    tp_sleep_ms(5);
  atomic_store(&s.churn_stop, 1);
  tp_thread_join(ct);
  /* Level-triggered and never read: every waiter sees it, also one
   * asleep with no timeout. */
  int q[2];
  tp_pipe(q);
  ASSERT_EQ(tp_write(q[1], "q", 1), 1);
  ASSERT_EQ(anypoll_set_add(s.set, q[0], POLLIN, &s.quit_tag), 0);
  long waits = 0, events = 0;
  for (int i = 0; i < SET_WAITERS; i++) {
    tp_thread_join(wt[i]);
    waits += w[i].waits;
    events += w[i].events;
  }
  watchdog_stop(&s.wd);
  long long total = 0;
  for (int i = 0; i < SET_STREAMS; i++) {
    ASSERT(s.st[i].ended);
    ASSERT_EQ(s.st[i].bytes, prod[i].bytes);
    ASSERT(s.st[i].hash == prod[i].hash);
    total += s.st[i].bytes;
  }
  long churn_seen = 0;
  for (int c = 0; c < SET_CHURN; c++)
    churn_seen += atomic_load(&s.churn_seen[c]);
  ASSERT_GE(churn_seen, 2);
  ASSERT_EQ(anypoll_set_del(s.set, q[0]), 0);
  ASSERT_EQ(anypoll_set_free(s.set), 0);
  for (int i = 0; i < SET_STREAMS; i++) {
    tp_close(s.st[i].rd);
    if (s.st[i].is_socket)
      tp_close(s.st[i].wr); /* a pipe's writer closed it at its end */
    while (s.st[i].tokens != NULL) {
      struct set_token *t = s.st[i].tokens;
      s.st[i].tokens = t->next;
      free(t);
    }
  }
  for (int c = 0; c < SET_CHURN; c++) {
    tp_close(s.churn_rd[c]);
    tp_close(s.churn_wr[c]);
  }
  tp_close(q[0]);
  tp_close(q[1]);
  printf("stress_set_oneshot_bytes_exact (%s): %lld bytes over %d streams "
         "(%d each: pipes, anypoll_pipe pipes, sockets), %d waiters, %ld "
         "waits, %ld events; %ld streams deleted and added back (%ld stale "
         "reports dropped), %ld reports of added ready pipes\n",
         tp_set_backend_name(), total, SET_STREAMS, SET_STREAMS_EACH,
         SET_WAITERS, waits, events, s.restreams, atomic_load(&s.stale),
         churn_seen);
}

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
