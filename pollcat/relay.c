/* SPDX-License-Identifier: MIT */
/* pollcat's relay: one-way streams, each with its own buffer, all waited
 * on at once with anypoll_poll (the poll, counted, and the exit that
 * prints --stats are poll.c's).
 *
 * Read from a stream's source when its buffer has room, write to its
 * destination when it holds data. Nothing waits anywhere but in
 * anypoll_poll: sockets and (POSIX) our end of a child's stdin are
 * non-blocking, a write to our Windows end of a child's stdin returns once
 * issued (anypoll_write; the end reports POLLOUT again once that write has
 * completed), and every other write is bounded to what POLLOUT promises
 * will fit (pollcat.h, max_write). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Per stream. Bulk-sized: with non-blocking ends each round reads and
 * writes all that is ready, so a bigger buffer means fewer rounds (a pipe
 * holds 64 KiB, a loopback socket several times that). */
#define BUF_SIZE (256 * 1024)

void stream_init(struct stream *s, const char *src_name,
                        struct pc_io *src, const char *dst_name,
                        struct pc_io *dst, unsigned long long *count) {
  memset(s, 0, sizeof *s);
  s->src_name = src_name;
  s->dst_name = dst_name;
  s->src = src;
  s->dst = dst;
  s->count = count;
  /* Page-aligned: Linux copies socket data into an unaligned buffer at
   * about a third of the speed (measured: a receiver took 270 ms of CPU
   * for 512 MiB with malloc's 16-byte offset, 83 ms for socat's buffer;
   * aligned, pollcat matched socat). */
  s->mem = malloc(BUF_SIZE + 4096);
  s->buf = s->mem == NULL
               ? NULL
               : (char *)(((uintptr_t)s->mem + 4095) & ~(uintptr_t)4095);
  if (s->buf == NULL) {
    say("out of memory");
    exit(PC_EXIT_IO);
  }
  if (src->fd < 0)
    s->eof = 1; /* no such standard stream: an empty input */
}

static int wants_read(const struct stream *s) {
  return !s->done && !s->eof && (s->tail < BUF_SIZE || s->head > 0);
}

static int wants_write(const struct stream *s) {
  return !s->done && s->tail > s->head;
}

/* A relay that cannot go on: pollcat exits with status, or with -k only
 * this client's relay ends (the message is already said). */
static void relay_fail(struct relay *r, int status) {
  if (!opt.keep)
    finish(status);
  r->failed = status;
  for (int i = 0; i < r->n; i++)
    r->s[i].done = 1;
}

static void stream_end(struct relay *r, struct stream *s) {
  s->done = 1;
  if (s->shut_dst && s->dst->fd >= 0) {
    VERBOSE("%s%s: end of input, shutting down sending to %s", r->label,
            s->src_name, s->dst_name);
    pc_shut(s->dst);
  } else {
    VERBOSE("%s%s: end of input", r->label, s->src_name);
  }
}

/* The connection was reset: a transfer cut short, never a clean finish. */
static void connection_reset(struct relay *r, const char *name) {
  say("%s%s: connection reset by peer", r->label, name);
  relay_fail(r, PC_EXIT_NET);
}

/* The end of input from a socket: whether it is really a reset. Linux
 * returns ECONNRESET from recv, but Wine's recv returns 0 on a reset
 * socket (poll reporting POLLERR|POLLHUP), so a 0 counts as a clean end
 * only when poll never reported POLLERR, SO_ERROR is clear, and a poll
 * now reports no POLLERR either. */
static int socket_reset(struct pc_io *io) {
  if (io->kind != PC_IO_SOCKET)
    return 0;
  if (io->err_seen || pc_sock_failed(io))
    return 1;
  struct pollfd p = { 0 };
  p.fd = io->fd;
  p.events = POLLIN;
  if (anypoll_poll_with(opt.backend, &p, 1, 0) == 1 && (p.revents & POLLERR))
    return 1;
  return 0;
}

/* One write; returns whether it made progress. */
static int stream_write_once(struct relay *r, struct stream *s, double now) {
  size_t len = s->tail - s->head;
  if (len > s->dst->max_write)
    len = s->dst->max_write;
  long w = pc_write(s->dst, s->buf + s->head, len);
  if (w < 0 && pc_error() == PCE_AGAIN)
    w = 0;
  if (w < 0) {
    enum pc_err e = pc_error();
    if (s->dst->kind == PC_IO_SOCKET &&
        (e == PCE_RESET || (e == PCE_PIPE && socket_reset(s->dst)))) {
      connection_reset(r, s->dst_name);
      return 0;
    }
    if (e == PCE_PIPE || e == PCE_RESET) {
      if (s->fatal_broken) {
        say("%s%s: reader went away (broken pipe)", r->label, s->dst_name);
        finish(PC_EXIT_PIPE); /* our own stdout/stderr: even with -k */
      }
      if (s->quiet_broken) {
        VERBOSE("%s%s: reader went away, discarding the rest of %s", r->label,
                s->dst_name, s->src_name);
      } else {
        say("%s%s: reader went away, %llu bytes of %s not delivered", r->label,
            s->dst_name, (unsigned long long)(s->tail - s->head), s->src_name);
        r->broken = 1;
      }
      s->done = 1;
      if (s->dst->kind != PC_IO_SOCKET)
        pc_close(s->dst);
      return 0;
    }
    say("%s%s: write failed: %s", r->label, s->dst_name, pc_error_text());
    relay_fail(r, s->dst->kind == PC_IO_SOCKET ? PC_EXIT_NET : PC_EXIT_IO);
    return 0;
  }
  if (w == 0) {
    stats.zero_writes[s->count - stats.bytes]++;
    return 0;
  }
  stats.writes[s->count - stats.bytes]++;
  s->head += (size_t)w;
  *s->count += (unsigned long long)w;
  r->last_activity = now;
  if (s->head == s->tail)
    s->head = s->tail = 0;
  if (s->eof && s->head == s->tail)
    stream_end(r, s);
  return 1;
}

/* Reads once; returns whether bytes arrived. */
static int stream_read(struct relay *r, struct stream *s, double now) {
  if (s->tail == BUF_SIZE) {
    memmove(s->buf, s->buf + s->head, s->tail - s->head);
    s->tail -= s->head;
    s->head = 0;
  }
  long got = pc_read(s->src, s->buf + s->tail, BUF_SIZE - s->tail);
  if (got < 0 && pc_error() == PCE_AGAIN)
    return 0;
  if (got < 0) {
    enum pc_err e = pc_error();
    if (e == PCE_RESET) {
      connection_reset(r, s->src_name);
      return 0;
    }
    say("%s%s: read failed: %s", r->label, s->src_name, pc_error_text());
    relay_fail(r, s->src->kind == PC_IO_SOCKET ? PC_EXIT_NET : PC_EXIT_IO);
    return 0;
  }
  r->last_activity = now;
  if (got == 0) {
    if (socket_reset(s->src)) {
      connection_reset(r, s->src_name);
      return 0;
    }
    s->eof = 1;
    if (s->head == s->tail)
      stream_end(r, s);
    return 0;
  }
  s->tail += (size_t)got;
  stats.reads[s->count - stats.bytes]++;
  return 1;
}

/* Moves all that is ready through one stream: after the poll said the
 * source is readable and/or the destination writable, reads and writes
 * alternate until neither makes progress. A blocking end gets one call
 * per round (a second could block); a non-blocking one as many as take
 * or give data. */
static void stream_pump(struct relay *r, struct stream *s, double now,
                        int can_read, int can_write) {
  int full = 0; /* the destination took nothing: no use trying again */
  for (;;) {
    int progress = 0;
    if (can_write && wants_write(s)) {
      if (stream_write_once(r, s, now))
        progress = 1;
      else
        can_write = 0, full = 1;
      if (!s->dst->nonblocking)
        can_write = 0;
    }
    if (can_read && wants_read(s)) {
      if (stream_read(r, s, now))
        progress = 1;
      else
        can_read = 0;
      if (!s->src->nb_read)
        can_read = 0;
      /* Data just read into a non-blocking destination's buffer: try it
       * at once rather than after another poll. */
      if (s->dst->nonblocking && !full)
        can_write = 1;
    }
    if (!progress)
      return;
  }
}

/* When the relay gives up for being idle (-w: status 7; -q once stdin has
 * ended: status 0), whichever comes first; -1 when never. */
static double relay_deadline(const struct relay *r, int *status) {
  double deadline = -1;
  *status = PC_EXIT_OK;
  if (opt.wait >= 0) {
    deadline = r->last_activity + opt.wait * 1000;
    *status = PC_EXIT_TIMEOUT;
  }
  /* -q 0 sets no bound: like nc -q 0 it means "half-close at the end of
   * stdin and read the reply to its end", which pollcat always does. */
  if (opt.quit_after > 0 && r->input >= 0 && r->s[r->input].eof) {
    double q = r->last_activity + opt.quit_after * 1000;
    if (deadline < 0 || q <= deadline) {
      deadline = q;
      *status = PC_EXIT_OK;
    }
  }
  return deadline;
}

/* Whether the relay has work left: every stream (network modes), or the
 * streams other than the input one (exec: the child's output has ended,
 * whether or not our stdin has). */
int relay_busy(const struct relay *r) {
  for (int i = 0; i < r->n; i++)
    if (!r->s[i].done && (r->until == UNTIL_ALL_DONE || i != r->input))
      return 1;
  return 0;
}

/* Adds what the relay waits for to pfd, and lowers *wake (an absolute
 * time, -1 for none) to its next timer. */
void relay_fds(struct relay *r, struct pollfd *pfd, anypoll_nfds_t *n,
                      double *wake) {
  int deadline_status;
  double deadline = relay_deadline(r, &deadline_status);
  if (deadline >= 0 && (*wake < 0 || deadline < *wake))
    *wake = deadline;
  for (int i = 0; i < r->n; i++) {
    struct stream *s = &r->s[i];
    if (wants_read(s))
      add_fd(pfd, n, s->src->fd, POLLIN);
    if (wants_write(s))
      add_fd(pfd, n, s->dst->fd, POLLOUT);
  }
}

/* Does what the poll's answer allows, then checks -q and -w. */
void relay_handle(struct relay *r, const struct pollfd *pfd,
                         anypoll_nfds_t n, double now) {
  for (anypoll_nfds_t k = 0; k < n; k++)
    if (pfd[k].revents & POLLERR)
      for (int i = 0; i < r->n; i++)
        if (r->s[i].src->fd == (int)pfd[k].fd &&
            r->s[i].src->kind == PC_IO_SOCKET)
          r->s[i].src->err_seen = 1;
  for (int i = 0; i < r->n; i++) {
    struct stream *s = &r->s[i];
    int can_write = 0, can_read = 0;
    if (wants_write(s))
      can_write = revents_of(pfd, n, s->dst->fd) != 0;
    if (wants_read(s))
      can_read = revents_of(pfd, n, s->src->fd) != 0;
    if (can_read || can_write)
      stream_pump(r, s, now, can_read, can_write);
    if (s->eof && !s->done && s->head == s->tail)
      stream_end(r, s);
  }
  int deadline_status;
  double deadline = relay_deadline(r, &deadline_status);
  if (relay_busy(r) && deadline >= 0 && now >= deadline) {
    if (deadline_status == PC_EXIT_TIMEOUT)
      say("%stimed out: idle for %g seconds", r->label, opt.wait);
    else
      VERBOSE("%squitting: idle for %g seconds after end of input", r->label,
              opt.quit_after);
    relay_fail(r, deadline_status);
  }
}

/* The anypoll_set_add, _del and _mod calls that a watch set holding what
 * the previous round waited for would need to hold this round's. */
static unsigned set_ctls_between(const struct pollfd *prev, anypoll_nfds_t pn,
                                 const struct pollfd *cur, anypoll_nfds_t n) {
  unsigned calls = 0;
  for (anypoll_nfds_t i = 0; i < n; i++) {
    anypoll_nfds_t j = 0;
    while (j < pn && prev[j].fd != cur[i].fd)
      j++;
    calls += j == pn || prev[j].events != cur[i].events; /* add or mod */
  }
  for (anypoll_nfds_t j = 0; j < pn; j++) {
    anypoll_nfds_t i = 0;
    while (i < n && cur[i].fd != prev[j].fd)
      i++;
    calls += i == n; /* del */
  }
  return calls;
}

/* Runs one relay until it is done (see relay_busy). */
void relay_run(struct relay *r) {
  struct pollfd pfd[8], prev[8];
  anypoll_nfds_t prev_n = 0;
  r->last_activity = pc_now_ms();
  while (relay_busy(r)) {
    anypoll_nfds_t n = 0;
    double wake = -1;
    relay_fds(r, pfd, &n, &wake);
    unsigned calls = set_ctls_between(prev, prev_n, pfd, n);
    stats.set_ctls += calls;
    stats.changed_rounds += calls != 0;
    memcpy(prev, pfd, sizeof pfd);
    prev_n = n;
    if (poll_all(pfd, n, poll_timeout(wake, pc_now_ms())) < 0)
      continue;
    relay_handle(r, pfd, n, pc_now_ms());
  }
}

void relay_start(void) {
  stats.started = 1;
  stats.cpu0 = pc_cpu_ms();
  stats.t0 = pc_now_ms();
}

