/* SPDX-License-Identifier: MIT */
/* The watch set under load: one-shot registrations waited on by several
 * threads while streams are deleted and added back (registrations whose
 * direction a mod flips at every step: test_set_flips.c).
 * ANYPOLL_STRESS_SCALE and ANYPOLL_STRESS_SEED as in test_stress.c. Each
 * prints what it did, for docs/reliability.md. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "stress.h"

/* ---- The watch set under load --------------------------------------------
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
