/* SPDX-License-Identifier: MIT */
/* What the request counter's table and main (requests.c) share with the
 * code that runs a scenario on Windows objects (requests_run.c). */
#ifndef BENCH_REQUESTS_H
#define BENCH_REQUESTS_H

enum wait_kind {
  BLOCKING_READ, /* ReadFile on the pipe, no poll */
  BLOCKING_RECV, /* recv on the socket, no poll */
  POLL_WOKEN,    /* poll with timeout -1, woken by the writer; then read */
  POLL_NOW,      /* poll with timeout 0; nothing is read */
  SET_WOKEN,     /* a watch set of every entry, waited on with timeout -1,
                    woken by the writer; then read */
  SET_ANYPIPE,   /* the same with anypoll_pipe pipes (no helper thread),
                    the byte read with anypoll_read */
  SET_ANYBUF,    /* SET_ANYPIPE, the byte read into a 64-byte buffer, as a
                    program reads: the short read tells the set that the
                    pipe was left empty (anypoll__anypipe_drained) */
  SET_ANYMIX,    /* SET_ANYPIPE with only the woken pipe an anypoll_pipe
                    one, the idle ones _pipe() pipes (a read parked on
                    each): the anypoll_pipe end is checked and read without
                    comparing it with those reads */
  SET_TWO,       /* SET_WOKEN on pipes, the woken one also in a second set
                    that holds the idle ones (a read parked on each, owned
                    by that set): the first set's check of it must not
                    compare it with those reads */
  SET_AREAD,     /* SET_WOKEN on pipes, the byte read with anypoll_read:
                    its gate must not compare the pipe with every helper
                    read the set keeps parked on the idle ones */
  /* poll with a BACKOFF_WAIT_MS timeout that nothing ends, with a
   * listening named pipe (never armed: re-checked on the back-off) as the
   * first entry: about ten back-off rounds, whose cost must not grow with
   * the idle pipes beside it, which stay armed */
  POLL_BACKOFF
};
#define BACKOFF_WAIT_MS 100

struct scenario {
  const char *name;
  enum wait_kind kind;
  int pipes;       /* pipe entries (the first is the one woken) */
  int sockets;     /* socket entries */
  int wake_socket; /* the woken entry is the first socket */
  int ready;       /* POLL_NOW: the first pipe holds a byte */
  /* SET_WOKEN: every pipe inheritable (1: the set peeks at each on a
   * timer), and added with ANYPOLL_UNSHARED (2: a read parked on each);
   * 3: every socket added with ANYPOLL_ASSOCIATE (a zero-byte receive
   * each instead of an AFD poll). */
  int inherit;
};

/* Prints what failed with the Windows and Winsock errors, and exits 2. */
void requests_die(const char *what);

/* --settle-scale: stretches the writer's settling time (requests_run.c). */
extern double requests_settle_scale;

/* Sets up s, makes warmup waits, then k between the two markers, and tears
 * down (the top of requests.c). */
void requests_run(const struct scenario *s, int k, int warmup);

#endif /* BENCH_REQUESTS_H */
