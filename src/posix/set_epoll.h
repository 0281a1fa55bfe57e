/* SPDX-License-Identifier: MIT */
/* The watch set on Linux (set_epoll.c: the set and its always-ready
 * count; set_epoll_ctl.c: ctl; set_epoll_wait.c: the wait): the state the
 * three files share. */
#ifndef ANYPOLL_SET_EPOLL_H
#define ANYPOLL_SET_EPOLL_H

#include "posix.h"
#include "../set.h"

#ifndef ANYPOLL_HAVE_EPOLL
#  ifdef __linux__
#    define ANYPOLL_HAVE_EPOLL 1
#  else
#    define ANYPOLL_HAVE_EPOLL 0
#  endif
#endif

#if ANYPOLL_HAVE_EPOLL

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>


/* Compile-time checks in a form C99 accepts too (the one-file releases
 * are built by hosts with -std=c99 -pedantic): an array of size -1 does
 * not compile. */
typedef char anypoll__epoll_bits_are_poll_bits
    [(EPOLLIN == POLLIN && EPOLLPRI == POLLPRI && EPOLLOUT == POLLOUT &&
      EPOLLERR == POLLERR && EPOLLHUP == POLLHUP &&
      EPOLLRDNORM == POLLRDNORM && EPOLLRDBAND == POLLRDBAND &&
      EPOLLWRNORM == POLLWRNORM && EPOLLWRBAND == POLLWRBAND)
         ? 1
         : -1];
typedef char anypoll__epoll_oneshot_outside_poll_bits
    [(EPOLLONESHOT & (POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND |
                      POLLWRNORM | POLLWRBAND | POLLERR | POLLHUP)) == 0
         ? 1
         : -1];

/* What poll() reports for a descriptor without a poll method (the
 * kernel's DEFAULT_POLLMASK), before the mask by the events asked for. */
#define ALWAYS_READY_BITS (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM)

/* The epoll data of the wake-up eventfd: no slot has this number. */
#define WAKE_ID UINT64_MAX

/* The most events one epoll_wait returns (the kernel's EP_MAX_EVENTS). */
#define KERNEL_MAX_EVENTS ((size_t)INT_MAX / sizeof(struct epoll_event))

struct slot {
  int fd;            /* -1: free */
  unsigned events;   /* without ANYPOLL_ONESHOT */
  int oneshot;
  int always;        /* refused by epoll (EPERM): always ready */
  int disabled;      /* always-ready and one-shot, already reported */
  int gone;          /* always-ready, its number found closed or reused */
  dev_t dev;         /* always-ready: the file the number named */
  ino_t ino;
  uint32_t gen;      /* bumped when the slot is freed */
  void *data;
  size_t next_free;
};

struct eset {
  int epfd;
  /* An eventfd in the epoll set, level-triggered, readable exactly while
   * ready_always > 0: a level, not an edge, so that every thread blocked
   * in epoll_wait wakes for an always-ready entry (the kernel passes a
   * level on from waiter to waiter; one edge wakes one). Made with the
   * set, never later, so that it cannot take the number of a descriptor
   * the program closed before its del, whose late del would then remove
   * it from the epoll set. */
  int wakefd;
  pthread_mutex_t lock;
  struct slot *slots;
  size_t nslots, free_head; /* free list through next_free; nslots: none */
  size_t nlive;             /* slots in use */
  size_t *index; /* index[fd]: slot + 1, or 0 */
  size_t index_cap;
  size_t *always; /* the slots of always-ready entries */
  size_t nalways, always_cap;
  size_t rot;     /* the slot a wait with always-ready entries starts at */
  /* Always-ready entries that a wait would report now (always_ready()).
   * Changed under the lock, read without it by a wait choosing how to
   * wait; the compiler's atomic built-ins rather than _Atomic, which C99
   * hosts of the one-file release do not accept. */
  size_t ready_always;
};

/* The epoll data of slot i: its number and its generation. */
ANYPOLL__INTERNAL uint64_t anypoll__eset_slot_id(const struct eset *s,
                                                 size_t i);
/* Whether a wait would report this always-ready entry. */
ANYPOLL__INTERNAL int anypoll__eset_always_ready(const struct slot *sl);
/* Counts an always-ready entry becoming ready or not; keeps the eventfd's
 * level. Under the lock. */
ANYPOLL__INTERNAL void anypoll__eset_ready_change(struct eset *s, int was,
                                                  int now);
/* 0, EBADF or ENOENT: whether an always-ready entry's number still names
 * its file. */
ANYPOLL__INTERNAL int anypoll__eset_same_file(const struct slot *sl);
/* The backend's ctl (set_epoll_ctl.c). */
ANYPOLL__INTERNAL int anypoll__eset_ctl(void *state, int op, int fd,
                                        unsigned events, void *data);
/* The backend's wait (set_epoll_wait.c). */
ANYPOLL__INTERNAL int anypoll__eset_wait(void *state,
                                         struct anypoll_event *out, int max,
                                         int timeout_ms);

#endif /* ANYPOLL_HAVE_EPOLL */
#endif /* ANYPOLL_SET_EPOLL_H */
