/* SPDX-License-Identifier: MIT */
/* The select() backend, for systems whose poll() is missing or wrong on some
 * descriptor kinds (macOS's fails on character devices).
 *
 * select() answers only "readable", "writable" and "exceptional", and folds
 * the conditions poll() reports apart into them: on Linux, hang-up and error
 * make a descriptor readable, an error also makes it writable. Each answer
 * is turned back into the revents Linux poll() gives by looking at the kind
 * of descriptor and, where the answer is ambiguous, by probes that neither
 * wait nor consume anything (FIONREAD, a peeking recv, a zero-byte send,
 * TCP_INFO; select_probe.c). This file has the wait. What cannot be recovered that way is listed in
 * docs/deviations.md.
 *
 * Deliberately absent: getsockopt(SO_ERROR) and any recv on a socket that
 * may hold a pending error. Both clear the error, and the caller's own
 * SO_ERROR after a non-blocking connect would then read 0 ("connected"). */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <time.h>

#include "select.h"

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define STACK_ENTRIES 64

ANYPOLL__INTERNAL void (*volatile anypoll__test_select_between_rounds)(void);

/* The heap array of a call cancelled in its select(): pthread cancellation
 * unwinds past the free at the end of the call. */
static void free_entries(void *ents) { free(ents); }

/* select(), the one cancellation point of a call: the rest runs with
 * cancellation disabled (the probes' recv, send and sigwait are
 * cancellation points too, and one cancelled with SIGPIPE blocked or a
 * signal taken would be harder to undo). The cleanup handler is pushed
 * here, next to select(), rather than in a caller: a cancellation then
 * unwinds through no frame of ours but this one, which AddressSanitizer's
 * unpoisoning of the stack needs (google/sanitizers#1399). */
static int select_cancellable(int n, fd_set *rs, fd_set *ws, fd_set *xs,
                              struct timeval *tv, struct entry *heap,
                              int cancel) {
  int k, saved;
  pthread_cleanup_push(free_entries, heap);
  pthread_setcancelstate(cancel, NULL);
  k = select(n, rs, ws, xs, tv);
  saved = errno;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  pthread_cleanup_pop(0);
  errno = saved;
  return k;
}

/* Classifies the entries, then selects in rounds until one is ready or the
 * timeout passes. heap: ents if it is on the heap, else NULL; cancel: the
 * caller's cancellation state. The count of ready entries, or -1 with
 * errno. */
static int select_rounds(struct pollfd *fds, anypoll_nfds_t nfds,
                         int timeout_ms, struct entry *ents,
                         struct entry *heap, int cancel) {
  for (anypoll_nfds_t i = 0; i < nfds; i++)
    if (anypoll__select_classify(fds[i].fd, &ents[i]) != 0)
      return -1;

  long long deadline = now_ns() + (long long)timeout_ms * 1000000LL;
  int first = 1;
  for (;;) {
    fd_set rs, ws, xs;
    FD_ZERO(&rs);
    FD_ZERO(&ws);
    FD_ZERO(&xs);
    int maxfd = -1;
    for (anypoll_nfds_t i = 0; i < nfds; i++) {
      const struct entry *e = &ents[i];
      if (e->kind == K_SKIP || e->kind == K_NVAL)
        continue;
      int fd = fds[i].fd;
      short ev = fds[i].events;
      /* Every descriptor is watched for reading, asked or not: that is
       * where hang-ups and errors show. */
      if ((ev & IN_BITS) || !e->quiet_read)
        FD_SET(fd, &rs);
      if (ev & OUT_BITS)
        FD_SET(fd, &ws);
      if (ev & POLLPRI)
        FD_SET(fd, &xs);
      if (fd > maxfd)
        maxfd = fd;
    }
    struct timeval tv = { 0, 0 }, *tvp = &tv;
    if (!first) {
      if (timeout_ms < 0) {
        tvp = NULL;
      } else {
        long long left = deadline - now_ns();
        if (left < 0)
          left = 0;
        long long us = (left + 999) / 1000; /* never wake before it */
        tv.tv_sec = (time_t)(us / 1000000);
        tv.tv_usec = (suseconds_t)(us % 1000000);
      }
    }
    int n = select_cancellable(maxfd + 1, &rs, &ws, &xs, tvp, heap, cancel);
    if (n < 0) {
      if (errno == EBADF) {
        /* Closed by another thread since it was classified: classify again,
         * it is POLLNVAL now, and the next round must report that without
         * waiting (with timeout -1 it would otherwise wait for ever on the
         * other entries). */
        for (anypoll_nfds_t i = 0; i < nfds; i++)
          if (anypoll__select_classify(fds[i].fd, &ents[i]) != 0)
            return -1;
        first = 1;
        continue;
      }
      return -1; /* EINTR and the rest, as poll() */
    }
    int timed_out = n == 0 && !first && timeout_ms > 0 && now_ns() >= deadline;
    int ready = 0;
    for (anypoll_nfds_t i = 0; i < nfds; i++) {
      struct entry *e = &ents[i];
      int fd = fds[i].fd;
      short ev = fds[i].events;
      short m = 0;
      if (e->kind == K_NVAL) {
        m = POLLNVAL;
      } else if (e->kind != K_SKIP) {
        int r = FD_ISSET(fd, &rs), w = FD_ISSET(fd, &ws), x = FD_ISSET(fd, &xs);
        /* Closed by another thread during the wait: Linux's select marks it
         * readable (and the probes would then invent a state for it), and
         * at the timeout may not mark it at all; poll() says POLLNVAL. */
        if ((r || w || x || timed_out) && fcntl(fd, F_GETFD) < 0 &&
            errno == EBADF) {
          e->kind = K_NVAL;
          m = POLLNVAL;
        } else if (r || w || x)
          m = anypoll__select_revents(e, fd, r, w, x);
        m &= (short)(ev | POLLERR | POLLHUP | POLLNVAL);
        /* Readable for data that was not asked for: leave the descriptor
         * out of readfds from now on, or the wait would spin on it. Its
         * hang-up, which can only come after that data, is then seen only
         * when something else ends the wait. */
        if (r && m == 0)
          e->quiet_read = 1;
      }
      fds[i].revents = m;
      ready += m != 0;
    }
    if (ready > 0 || timeout_ms == 0)
      return ready;
    if (!first && timeout_ms > 0 && now_ns() >= deadline)
      return 0;
    if (anypoll__test_select_between_rounds != NULL)
      anypoll__test_select_between_rounds();
    first = 0;
  }
}

ANYPOLL__INTERNAL
int anypoll__posix_select(struct pollfd *fds, anypoll_nfds_t nfds,
                          int timeout_ms) {
  /* Linux's own limit, checked before anything of fds is read. */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      nfds > rl.rlim_cur) {
    errno = EINVAL;
    return -1;
  }
  struct entry stack_entries[STACK_ENTRIES];
  struct entry *ents = stack_entries, *heap = NULL;
  if (nfds > STACK_ENTRIES) {
    ents = heap = malloc(nfds * sizeof *ents);
    if (ents == NULL) {
      errno = ENOMEM;
      return -1;
    }
  }
  int cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  int result = select_rounds(fds, nfds, timeout_ms, ents, heap, cancel);
  int saved = errno;
  free(heap);
  pthread_setcancelstate(cancel, NULL);
  errno = saved;
  return result;
}
