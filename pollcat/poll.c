/* SPDX-License-Identifier: MIT */
/* The wait every mode of pollcat makes (the relay, -k's listener beside its
 * clients): anypoll_poll with the chosen backend, counted for --stats, its
 * pollfd helpers, and the exit that prints the counts. Between relay.c and
 * common.c (common.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

struct stats stats;

/* Every exit after the relay starts goes through here, so --stats is
 * printed whatever ends the relay. */
void finish(int status) {
  if (opt.stats && stats.started) {
    say("stats: cpu %.1f ms, wall %.1f ms, bytes %llu %llu %llu",
        pc_cpu_ms() - stats.cpu0, pc_now_ms() - stats.t0, stats.bytes[0],
        stats.bytes[1], stats.bytes[2]);
    say("stats: polls %llu, reads %llu %llu %llu, writes %llu %llu %llu, "
        "writes that took nothing %llu %llu %llu",
        stats.polls, stats.reads[0], stats.reads[1], stats.reads[2],
        stats.writes[0], stats.writes[1], stats.writes[2],
        stats.zero_writes[0], stats.zero_writes[1], stats.zero_writes[2]);
    say("stats: rounds whose waited-for set changed %llu, set calls to "
        "follow them %llu",
        stats.changed_rounds, stats.set_ctls);
  }
  fflush(stdout);
  exit(status);
}

/* Several streams share a descriptor (a socket is read by one, written by
 * another): one pollfd per descriptor, as poll() users conventionally do. */
void add_fd(struct pollfd *p, anypoll_nfds_t *n, int fd, short ev) {
  for (anypoll_nfds_t i = 0; i < *n; i++) {
    if ((int)p[i].fd == fd) {
      p[i].events |= ev;
      return;
    }
  }
  p[*n].fd = fd;
  p[*n].events = ev;
  p[*n].revents = 0;
  (*n)++;
}

short revents_of(const struct pollfd *p, anypoll_nfds_t n, int fd) {
  for (anypoll_nfds_t i = 0; i < n; i++)
    if ((int)p[i].fd == fd)
      return p[i].revents;
  return 0;
}

int poll_timeout(double wake, double now) {
  if (wake < 0)
    return -1;
  return wake <= now ? 0 : (int)ceil(wake - now);
}

int poll_all(struct pollfd *pfd, anypoll_nfds_t n, int timeout) {
  int ready = anypoll_poll_with(opt.backend, pfd, n, timeout);
  stats.polls++;
  if (ready < 0 && errno != EINTR) {
    say("poll failed: %s", strerror(errno));
    finish(PC_EXIT_IO);
  }
  return ready;
}
