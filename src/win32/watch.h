/* SPDX-License-Identifier: MIT */
/* The table of pending helper reads, shared by watch.c (the table, the
 * identity check and the gate) and watch_read.c (the helper reads, their
 * subscribers and their cancellation); watch.c's head says what it is for.
 * Everything here is under anypoll__watches.lock. */
#ifndef ANYPOLL_WATCH_H
#define ANYPOLL_WATCH_H

#include "win.h"

#define ANYPOLL_WATCH_BUCKETS 256

/* One file object with a helper read of ours on it, or being subscribed
 * to. */
struct anypoll__watch {
  struct anypoll__watch *next; /* bucket chain */
  /* The active list: watches whose helper owns a read (reading). */
  struct anypoll__watch *act_next, *act_prev;
  HANDLE handle;
  struct anypoll__watch_sub *subs; /* subscribers waiting on this file object */
  int users;                      /* length of subs */
  int reading;                    /* a helper owns the zero-byte read */
  int in_read;                    /* ... and may be inside ReadFile */
  int cancel;                     /* the last user left: stop the read */
  int pins;                       /* cancellers waiting for the helper */
  HANDLE thread;                  /* the helper, valid while reading */
  LONG64 owner;                   /* call_id of the call that started it */
  int aborted;   /* the last read ended cancelled while pending: at that
                    moment the pipe had no data and its writer was alive */
  int cancelled; /* a cancel has reached the read (CancelSynchronousIo
                    found it), which will end now: no retry needed */
  /* Out of the table: the subscriber whose handle value `handle` is has
   * left (see watch.c's head). Found only by comparison while its read
   * still runs, and freed with its last user. */
  int orphan;
  /* `handle` is our own duplicate, made for an orphan whose cancel did not
   * land in time (the read runs on): closed once the read has ended. */
  int own_handle;
};

struct anypoll__watch_table {
  SRWLOCK lock;
  struct anypoll__watch *buckets[ANYPOLL_WATCH_BUCKETS];
  struct anypoll__watch *active;  /* reading watches */
  struct anypoll__gate *queries;  /* gated calls in progress */
  CONDITION_VARIABLE cv; /* a query ended, a read ended, or a cancel */
};
/* Zero is the initial state of each member (SRWLOCK_INIT,
 * CONDITION_VARIABLE_INIT). */
ANYPOLL__INTERNAL_DATA struct anypoll__watch_table anypoll__watches;

/* The bucket of handle value h, and the watch under that value. */
ANYPOLL__INTERNAL
struct anypoll__watch **anypoll__watch_bucket(HANDLE h);
ANYPOLL__INTERNAL
struct anypoll__watch *anypoll__watch_find(HANDLE h);
/* The reading watch on h's file object under another handle value, or
 * NULL (skip_call: see watch.c). */
ANYPOLL__INTERNAL
struct anypoll__watch *anypoll__watch_active_same(HANDLE h, LONG64 skip_call);
/* Takes w out of its bucket. */
ANYPOLL__INTERNAL
void anypoll__watch_unhash(struct anypoll__watch *w);

#endif /* ANYPOLL_WATCH_H */
