/* SPDX-License-Identifier: MIT */
/* The watch set's portable backend (set_poll.c: the set, its table and
 * ctl; set_poll_wait.c: the wait): the state both files share. The few
 * platform primitives they use (locks, the wake pipe, cancellation) are
 * set_poll_os.h's. set_poll.c says how the threads work together. */
#ifndef ANYPOLL_SET_POLL_H
#define ANYPOLL_SET_POLL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "set.h"
#include "set_poll_os.h"

struct pset_entry {
  int fd;
  unsigned events;   /* without ANYPOLL_ONESHOT */
  int oneshot;
  int disabled;      /* a one-shot entry already reported */
  /* Its number is now one of the set's own wake pipe ends: it was closed
   * before its del and our pipe took the number. Never polled (the pipe's
   * readiness is not the program's), reported POLLNVAL as closed. */
  int own;
  void *data;
  unsigned long long id; /* unique per registration, to tell a stale
                            pollfd from a newer add of the same number */
};

struct waiter {
  struct waiter *next;
  int rfd, wfd;       /* the wake-up pipe */
  int busy;           /* a wait owns this waiter */
  int in_poll;        /* inside anypoll_poll */
  int signalled;      /* a byte is in the pipe */
  unsigned long long epoch; /* the set's epoch when that call began */
  struct pollfd *fds; /* the array of the current wait, fds[0] the pipe */
  unsigned long long *ids; /* ids[k]: the id of fds[k]'s entry */
  size_t cap;
};

struct pset {
  set_lock lock;
  set_cond done; /* a waiter left anypoll_poll */
  struct pset_entry *e;
  size_t count, cap;
  size_t *index; /* index[fd]: position in e + 1, or 0 */
  size_t index_cap;
  size_t rot;    /* where the next wait starts: after the last reported */
  unsigned long long next_id;
  unsigned long long epoch; /* advanced by each del (wait_for_pollers) */
  size_t nown;   /* entries with own set */
  struct waiter *waiters;
};

/* Whether fd is registered; its position in s->e then. Under the lock. */
ANYPOLL__INTERNAL int anypoll__pset_find(const struct pset *s, int fd,
                                         size_t *pos);

/* A waiter for this wait: a free one of the set, or a new one (with its
 * wake pipe). Under the lock. NULL with errno. set_poll.c. */
ANYPOLL__INTERNAL struct waiter *anypoll__pset_waiter_get(struct pset *s);

#endif /* ANYPOLL_SET_POLL_H */
