/* SPDX-License-Identifier: MIT */
/* The watch set on POSIX, once per POSIX set backend (epoll, and the
 * portable one on anypoll_poll): a number closed before its del and taken
 * by the set's own descriptors, a closed always-ready entry, add of a
 * number far above any open one, an add of the set's own descriptors, and
 * thread cancellation. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "test.h"

static int note[16]; /* data pointers: &note[i] */

static const struct anypoll_event *find(const struct anypoll_event *out,
                                        int n, int fd) {
  for (int i = 0; i < n; i++)
    if (out[i].fd == fd)
      return &out[i];
  return NULL;
}

static int is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

/* A new set of the backend under test with a new pipe's read end p[0]
 * registered for POLLIN, data &note[0]. */
static anypoll_set *set_with_pipe(int p[2]) {
  anypoll_set *set = tp_set_new();
  tp_pipe(p);
  ASSERT_EQ(anypoll_set_add(set, p[0], POLLIN, &note[0]), 0);
  return set;
}

/* Whether the set still works: a new pipe's read end p[0] registered,
 * then written, is reported by a wait, in out[0] (room for 4). */
static void still_works(anypoll_set *set, int p[2],
                        struct anypoll_event *out) {
  tp_pipe(p);
  ASSERT_EQ(anypoll_set_add(set, p[0], POLLIN, NULL), 0);
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 1000), 1);
}

/* Frees the set and closes both ends of the pipe p. */
static void set_and_pipe_free(anypoll_set *set, int p[2]) {
  ASSERT_EQ(anypoll_set_free(set), 0);
  tp_close(p[0]);
  tp_close(p[1]);
}

/* ---- A watchdog for calls that must not hang ---------------------------- */

struct bg {
  void (*fn)(void *);
  void *arg;
  atomic_int done;
  pthread_t t;
};

static void *bg_main(void *arg) {
  struct bg *b = arg;
  b->fn(b->arg);
  b->done = 1;
  return NULL;
}

static void bg_start(struct bg *b, void (*fn)(void *), void *arg) {
  b->fn = fn;
  b->arg = arg;
  b->done = 0;
  ASSERT_EQ(pthread_create(&b->t, NULL, bg_main, b), 0);
}

/* Fails the test if the call has not returned within 20 s past its own
 * timeout: a hang becomes a failure that says what hung. */
static void bg_finish(struct bg *b, const char *what) {
  for (int i = 0; i < 3000 && !b->done; i++)
    tp_sleep_ms(10);
  if (!b->done) {
    fprintf(stderr, "%s: still blocked after 30 s\n", what);
    ASSERT(b->done);
  }
  ASSERT_EQ(pthread_join(b->t, NULL), 0);
}

static void must_return(const char *what, void (*fn)(void *), void *arg) {
  struct bg b;
  bg_start(&b, fn, arg);
  bg_finish(&b, what);
}

/* ---- A waiter thread, in a loop until told to stop ---------------------- */

struct looper {
  anypoll_set *set;
  atomic_int stop;
  atomic_int reported_fd; /* a report of this fd... */
  atomic_uint reported_bits; /* ...with these bits, or 0 */
  int watch_fd;
};

static void loop_main(void *arg) {
  struct looper *l = arg;
  while (!l->stop) {
    struct anypoll_event out[8];
    int n = anypoll_set_wait(l->set, out, 8, 200);
    ASSERT_GE(n, 0);
    const struct anypoll_event *e = find(out, n, l->watch_fd);
    if (e != NULL)
      l->reported_bits |= e->events;
  }
}

struct waitarg {
  anypoll_set *set;
  int timeout_ms;
  int result;
  struct anypoll_event out[4];
};

static void wait_once(void *arg) {
  struct waitarg *w = arg;
  w->result = anypoll_set_wait(w->set, w->out, 4, w->timeout_ms);
}

struct steal {
  anypoll_set *set;
  int n, other;
};

/* Changes wake the waiters, and the program reads "its" number whenever
 * it looks readable, as it would after a report of it. */
static void steal_main(void *arg) {
  struct steal *st = arg;
  for (int i = 0; i < 200; i++) {
    ASSERT_EQ(anypoll_set_mod(st->set, st->other, POLLIN, &note[1]), 0);
    struct pollfd p = { st->n, POLLIN, 0 };
    if (is_open(st->n) && poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
      char c[8];
      (void)!read(st->n, c, sizeof c);
    }
  }
}

/* A number closed before its del, then taken by a descriptor of the set
 * itself (epoll: the eventfd that wakes waiters for always-ready entries;
 * portable: the wake-up pipe of a second thread waiting at once). The set
 * never reports its own descriptor as the program's entry, the late del
 * removes the entry and nothing of the set's, waiters are still woken, and
 * a program that reads the number it still thinks its own (taking a
 * wake-up byte) blocks nothing of the set. */
TEST(set_closed_number_taken_by_the_set) {
  anypoll_set *set = tp_set_new();
  int file = tp_temp_file(0);
  int a[2], b[2];
  tp_pipe(a);
  tp_pipe(b);
  ASSERT_EQ(tp_write(a[1], "x", 1), 1);
  ASSERT_EQ(anypoll_set_add(set, a[0], POLLIN, &note[0]), 0);
  ASSERT_EQ(anypoll_set_add(set, b[0], POLLIN, &note[1]), 0);
  int n = a[0];
  tp_close(a[0]); /* breaks the rule: closed while registered */
  ASSERT(!is_open(n));
  /* Two waiters at once (the portable backend makes the second one's
   * pipe now), then an always-ready entry (epoll made its eventfd on the
   * first one). */
  struct looper l[2];
  struct bg lt[2];
  for (int i = 0; i < 2; i++) {
    memset(&l[i], 0, sizeof l[i]);
    l[i].set = set;
    l[i].watch_fd = n;
    bg_start(&lt[i], loop_main, &l[i]);
  }
  tp_sleep_ms(300);
  ASSERT_EQ(anypoll_set_add(set, file, POLLIN, &note[2]), 0);
  ASSERT_EQ(anypoll_set_mod(set, file, 0, &note[2]), 0);
  printf("number %d after the set's own descriptors: %s\n", n,
         is_open(n) ? "taken" : "free");
  struct steal st = { set, n, b[0] };
  must_return("mods while the program reads the closed number", steal_main,
              &st);
  for (int i = 0; i < 2; i++) {
    l[i].stop = 1;
    bg_finish(&lt[i], "a waiter of the set");
    printf("waiter %d saw bits %#x for number %d\n", i,
           (unsigned)l[i].reported_bits, n);
    /* Never the readiness of the set's own descriptor. */
    ASSERT_EQ(l[i].reported_bits & ~(unsigned)POLLNVAL, 0u);
  }
  /* The late del removes the entry, and only it. */
  ASSERT_EQ(anypoll_set_del(set, n), 0);
  ASSERT_EQ(anypoll_set_del(set, file), 0);
  /* A waiter asleep is woken by an add of an always-ready entry (no
   * timeout: one that ended at its timeout would report the entry then). */
  struct waitarg w = { set, -1, -2, { { 0, 0, NULL } } };
  struct bg wt;
  bg_start(&wt, wait_once, &w);
  tp_sleep_ms(300);
  int null = tp_null_device();
  ASSERT_EQ(anypoll_set_add(set, null, POLLIN, &note[3]), 0);
  bg_finish(&wt, "a waiter after the late del");
  printf("waiter after the late del: %d\n", w.result);
  ASSERT_EQ(w.result, 1);
  ASSERT_EQ(w.out[0].fd, null);
  /* And a wait from here returns. */
  w.timeout_ms = 0;
  must_return("a wait after the close before del", wait_once, &w);
  ASSERT_EQ(w.result, 1);
  ASSERT_EQ(anypoll_set_free(set), 0);
  tp_close(null);
  tp_close(file);
  tp_close(a[1]);
  tp_close(b[0]);
  tp_close(b[1]);
}

/* An always-ready entry closed before its del is no longer ready (epoll:
 * no longer reported, as the kernel drops a closed entry; portable:
 * POLLNVAL), and its number reused by an empty pipe is not reported, nor
 * made always ready by a mod. */
TEST(set_closed_always_ready_entry_not_reported) {
  anypoll_set *set = tp_set_new();
  int epoll = strcmp(tp_set_backend_name(), "epoll") == 0;
  int null = tp_null_device();
  ASSERT_EQ(anypoll_set_add(set, null, POLLIN, &note[0]), 0);
  struct anypoll_event out[4];
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 0), 1);
  int n = null;
  tp_close(null);
  int got = anypoll_set_wait(set, out, 4, 0);
  printf("closed: %d reported (first bits %#x)\n", got,
         got > 0 ? out[0].events : 0u);
  if (epoll) {
    ASSERT_EQ(got, 0);
  } else {
    ASSERT_EQ(got, 1);
    ASSERT_EQ(out[0].events, (unsigned)POLLNVAL);
  }
  int p[2];
  tp_pipe(p);
  ASSERT_EQ(p[0], n); /* the lowest free number: the closed one */
  got = anypoll_set_wait(set, out, 4, 0);
  printf("reused by an empty pipe: %d reported\n", got);
  ASSERT_EQ(got, 0);
  errno = 0;
  int r = anypoll_set_mod(set, n, POLLIN, &note[1]);
  printf("mod on the reused number: %d (errno %d)\n", r, r ? errno : 0);
  if (epoll) {
    /* As epoll_ctl answers for a number the kernel does not hold. */
    ASSERT_EQ(r, -1);
    ASSERT_EQ(errno, ENOENT);
  } else {
    ASSERT_EQ(r, 0);
  }
  got = anypoll_set_wait(set, out, 4, 0);
  printf("after the mod: %d reported\n", got);
  ASSERT_EQ(got, 0);
  ASSERT_EQ(anypoll_set_del(set, n), 0);
  /* Registered afresh, the pipe is watched as a pipe. */
  ASSERT_EQ(anypoll_set_add(set, p[0], POLLIN, &note[2]), 0);
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 0), 0);
  ASSERT_EQ(tp_write(p[1], "y", 1), 1);
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 1000), 1);
  ASSERT_EQ(out[0].fd, p[0]);
  ASSERT(out[0].data == &note[2]);
  set_and_pipe_free(set, p);
}

static long max_rss_kib(void) {
  struct rusage u;
  ASSERT_EQ(getrusage(RUSAGE_SELF, &u), 0);
  return u.ru_maxrss;
}

/* A number that is not open: EBADF, with nothing allocated for it (the
 * process's peak resident size does not move by the index such a number
 * would need: 128 MiB and more for 2^24). The INT_MAX case comes after,
 * so that a set that would allocate for it fails on 2^24 first. */
TEST(set_unopened_huge_number_allocates_nothing) {
  anypoll_set *set = tp_set_new();
  const int big[] = { 1 << 24, INT_MAX };
  for (int i = 0; i < 2; i++) {
    ASSERT(!is_open(big[i]));
    long before = max_rss_kib();
    errno = 0;
    ASSERT_EQ(anypoll_set_add(set, big[i], POLLIN, NULL), -1);
    ASSERT_EQ(errno, EBADF);
    errno = 0;
    ASSERT_EQ(anypoll_set_mod(set, big[i], POLLIN, NULL), -1);
    ASSERT_EQ(errno, EBADF);
    errno = 0;
    ASSERT_EQ(anypoll_set_del(set, big[i]), -1);
    ASSERT_EQ(errno, EBADF);
    long grown = max_rss_kib() - before;
    printf("fd %d: peak resident size grew by %ld KiB\n", big[i], grown);
    ASSERT_LT(grown, 16 * 1024);
  }
  /* The set still works. */
  int p[2];
  struct anypoll_event out[4];
  still_works(set, p, out);
  set_and_pipe_free(set, p);
}

/* The set's own descriptors (epoll: the epoll descriptor and the eventfd;
 * portable: its wake-up pipe), found as the numbers anypoll_set_new took.
 * The set never reports one as the program's: epoll refuses the add with
 * EINVAL; the portable backend takes it and reports it POLLNVAL on every
 * wait until its del (anypoll_set(3)). */
TEST(set_add_of_own_descriptor) {
  int was_open[64];
  for (int fd = 0; fd < 64; fd++)
    was_open[fd] = is_open(fd);
  anypoll_set *set = tp_set_new();
  int epoll = strcmp(tp_set_backend_name(), "epoll") == 0;
  int own = 0;
  for (int fd = 0; fd < 64; fd++) {
    if (was_open[fd] || !is_open(fd))
      continue;
    own++;
    errno = 0;
    int r = anypoll_set_add(set, fd, POLLIN | POLLOUT, &note[0]);
    int err = errno;
    struct anypoll_event out[4];
    int n = anypoll_set_wait(set, out, 4, 0);
    printf("own fd %d: add %d errno %d, wait %d (fd %d bits %#x)\n", fd,
           r, err, n, n > 0 ? out[0].fd : -1, n > 0 ? out[0].events : 0u);
    if (epoll) {
      ASSERT_EQ(r, -1);
      ASSERT_EQ(err, EINVAL);
      ASSERT_EQ(n, 0);
      errno = 0;
      ASSERT_EQ(anypoll_set_del(set, fd), -1);
      ASSERT_EQ(errno, ENOENT);
    } else {
      ASSERT_EQ(r, 0);
      ASSERT_EQ(n, 1);
      ASSERT_EQ(out[0].fd, fd);
      ASSERT_EQ(out[0].events, (unsigned)POLLNVAL);
      ASSERT_EQ(anypoll_set_del(set, fd), 0);
    }
  }
  printf("the set took %d descriptors\n", own);
  ASSERT_EQ(own, 2);
  /* The set still works. */
  int p[2];
  struct anypoll_event out[4];
  still_works(set, p, out);
  ASSERT_EQ(out[0].fd, p[0]);
  set_and_pipe_free(set, p);
}

/* ---- Thread cancellation ------------------------------------------------- */

struct cancel_ctl {
  anypoll_set *set;
  int op; /* 'a': add, 'd': del */
  int fd;
  atomic_int ready;
  atomic_int go;
};

/* Makes the call with a cancellation already pending, so that the first
 * cancellation point inside the library acts on it. */
static void *pending_cancel_main(void *arg) {
  struct cancel_ctl *c = arg;
  ASSERT_EQ(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL), 0);
  c->ready = 1;
  while (!c->go)
    tp_sleep_ms(1);
  ASSERT_EQ(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL), 0);
  if (c->op == 'a')
    (void)anypoll_set_add(c->set, c->fd, POLLIN, &note[5]);
  else
    (void)anypoll_set_del(c->set, c->fd);
  pthread_testcancel();
  return NULL;
}

static void cancelled_ctl(anypoll_set *set, int op, int fd) {
  struct cancel_ctl c = { set, op, fd, 0, 0 };
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, pending_cancel_main, &c), 0);
  while (!c.ready)
    tp_sleep_ms(1);
  ASSERT_EQ(pthread_cancel(t), 0);
  c.go = 1;
  void *res;
  ASSERT_EQ(pthread_join(t, &res), 0);
  ASSERT(res == PTHREAD_CANCELED);
}

static void *wait_forever_main(void *arg) {
  struct waitarg *w = arg;
  struct anypoll_event out[100]; /* above the epoll backend's stack array */
  w->result = anypoll_set_wait(w->set, out, 100, -1);
  return NULL;
}

static void add_call(void *arg) {
  struct cancel_ctl *c = arg;
  c->ready = anypoll_set_add(c->set, c->fd, POLLIN, &note[2]);
}

static void del_call(void *arg) {
  struct cancel_ctl *c = arg;
  c->ready = anypoll_set_del(c->set, c->fd);
}

/* A waiter cancelled in its wait, and an add and a del cancelled inside
 * (the cancellation pending when they start): each call either took
 * effect or did not, and every later call on the set returns. */
TEST(set_thread_cancellation_leaves_set_usable) {
  anypoll_set *set = tp_set_new();
  int p[2], q[2];
  tp_pipe(p);
  tp_pipe(q);
  ASSERT_EQ(anypoll_set_add(set, p[0], POLLIN, &note[0]), 0);
  /* Enough entries that the wait's buffers are on the heap (more than 64
   * in epoll's): freed when it is cancelled (LeakSanitizer checks). */
  int dups[70];
  for (int i = 0; i < 70; i++) {
    dups[i] = dup(q[1]);
    ASSERT(dups[i] >= 0);
    ASSERT_EQ(anypoll_set_add(set, dups[i], POLLIN, &note[6]), 0);
  }
  /* A waiter cancelled while it waits. */
  struct waitarg w = { set, -1, -2, { { 0, 0, NULL } } };
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, wait_forever_main, &w), 0);
  tp_sleep_ms(300);
  ASSERT_EQ(pthread_cancel(t), 0);
  void *res;
  ASSERT_EQ(pthread_join(t, &res), 0);
  ASSERT(res == PTHREAD_CANCELED);
  struct cancel_ctl d = { set, 'd', p[0], 0, 0 };
  must_return("del after a cancelled wait", del_call, &d);
  ASSERT_EQ(d.ready, 0);
  for (int i = 0; i < 70; i++) {
    ASSERT_EQ(anypoll_set_del(set, dups[i]), 0);
    tp_close(dups[i]);
  }
  /* An add cancelled inside: of an always-ready entry, while a waiter
   * waits (epoll: the add wakes it). */
  struct waitarg w2 = { set, -1, -2, { { 0, 0, NULL } } };
  ASSERT_EQ(anypoll_set_add(set, q[0], POLLIN, &note[1]), 0);
  struct bg t2;
  bg_start(&t2, wait_once, &w2);
  tp_sleep_ms(300);
  int null = tp_null_device();
  cancelled_ctl(set, 'a', null);
  /* add is no cancellation point: it completed, and woke the waiter. */
  bg_finish(&t2, "a waiter during a cancelled add");
  ASSERT_EQ(w2.result, 1);
  ASSERT_EQ(w2.out[0].fd, null);
  struct waitarg w3 = { set, 1000, -2, { { 0, 0, NULL } } };
  must_return("wait after a cancelled add", wait_once, &w3);
  ASSERT_EQ(w3.result, 1);
  ASSERT_EQ(w3.out[0].fd, null);
  /* A del cancelled inside, while a waiter waits. */
  ASSERT_EQ(anypoll_set_del(set, null), 0);
  struct waitarg w4 = { set, -1, -2, { { 0, 0, NULL } } };
  bg_start(&t2, wait_once, &w4);
  tp_sleep_ms(300);
  cancelled_ctl(set, 'd', q[0]);
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  struct cancel_ctl a = { set, 'a', p[0], 0, 0 };
  must_return("add after a cancelled del", add_call, &a);
  ASSERT_EQ(a.ready, 0);
  bg_finish(&t2, "a waiter during a cancelled del");
  ASSERT_EQ(w4.result, 1);
  ASSERT_EQ(w4.out[0].fd, p[0]);
  /* The del completed: q[0] is no longer registered. */
  errno = 0;
  ASSERT_EQ(anypoll_set_del(set, q[0]), -1);
  ASSERT_EQ(errno, ENOENT);
  struct waitarg w5 = { set, 1000, -2, { { 0, 0, NULL } } };
  must_return("wait after a cancelled del", wait_once, &w5);
  ASSERT_GE(w5.result, 1);
  ASSERT(find(w5.out, w5.result, p[0]) != NULL);
  ASSERT_EQ(anypoll_set_free(set), 0);
  tp_close(null);
  tp_close(p[0]);
  tp_close(p[1]);
  tp_close(q[0]);
  tp_close(q[1]);
}

/* The dup trap and back: a registered descriptor duplicated, closed before
 * its del (epoll keeps the registration, the file being open), deleted,
 * and the same file put back under the old number with dup2. The number
 * can be registered again and is watched as any other (epoll answered
 * EEXIST for it, and ENOENT to mod and del, for good). */
TEST(set_dup2_back_after_close_before_del) {
  int p[2];
  anypoll_set *set = set_with_pipe(p);
  int n = p[0];
  int m = dup(n);
  ASSERT(m >= 0);
  tp_close(n);
  ASSERT_EQ(anypoll_set_del(set, n), 0);
  ASSERT_EQ(dup2(m, n), n);
  tp_close(m);
  errno = 0;
  int r = anypoll_set_add(set, n, POLLIN, &note[1]);
  printf("add after dup2 back: %d (errno %d)\n", r, r ? errno : 0);
  ASSERT_EQ(r, 0);
  struct anypoll_event out[4];
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 0), 0);
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 1000), 1);
  ASSERT_EQ(out[0].fd, n);
  ASSERT(out[0].data == &note[1]);
  ASSERT_EQ(anypoll_set_mod(set, n, POLLIN, &note[2]), 0);
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 1000), 1);
  ASSERT(out[0].data == &note[2]);
  ASSERT_EQ(anypoll_set_del(set, n), 0);
  ASSERT_EQ(anypoll_set_wait(set, out, 4, 0), 0);
  set_and_pipe_free(set, p);
}

/* max has no upper limit, and costs nothing by itself: epoll refused one
 * above 178956970 (its EP_MAX_EVENTS) with EINVAL, and allocated a buffer
 * of max events. Only as many entries as are ready are written. */
TEST(set_wait_max_without_limit) {
  int p[2];
  anypoll_set *set = set_with_pipe(p);
  ASSERT_EQ(tp_write(p[1], "x", 1), 1);
  struct anypoll_event out[2];
  const int maxes[] = { 178956971, INT_MAX };
  for (int i = 0; i < 2; i++) {
    long before = max_rss_kib();
    errno = 0;
    int n = anypoll_set_wait(set, out, maxes[i], 1000);
    printf("max %d: %d (errno %d), peak resident size grew by %ld KiB\n",
           maxes[i], n, n < 0 ? errno : 0, max_rss_kib() - before);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(out[0].fd, p[0]);
    ASSERT_LT(max_rss_kib() - before, 16 * 1024);
  }
  set_and_pipe_free(set, p);
}
