/* pollcat: a small relay between the standard streams and a TCP connection
 * or a child process, waiting on everything at once with anypoll alone.
 *
 * The relay is a set of one-way streams, each with its own buffer: read
 * from the source when the buffer has room, write to the destination when
 * it holds data. Nothing waits anywhere but in anypoll_poll: sockets and
 * our end of a child's stdin are non-blocking, and every other write is
 * bounded to what POLLOUT promises will fit (pollcat.h, max_write). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pollcat.h"

/* Per stream. Bulk-sized: with non-blocking ends each round reads and
 * writes all that is ready, so a bigger buffer means fewer rounds (a pipe
 * holds 64 KiB, a loopback socket several times that). */
#define BUF_SIZE (256 * 1024)
/* Retry interval bounds for destinations without write readiness (see
 * retry_writes): short enough to keep a busy relay moving, long enough
 * that a stalled one costs nothing measurable. */
#define RETRY_MIN_MS 1
#define RETRY_MAX_MS 16

static const char usage_text[] =
    "usage: pollcat [options] connect HOST PORT\n"
    "       pollcat [options] listen [ADDR] PORT\n"
    "       pollcat [options] exec [--] CMD [ARGS...]\n"
    "       pollcat [options] -e CMD connect HOST PORT\n"
    "       pollcat [options] [-k] [-e CMD] listen [ADDR] PORT\n"
    "options:\n"
    "  -k          listen: keep listening, serve many clients at once (each\n"
    "              client's data to stdout, or each its own -e command)\n"
    "  -e CMD      relay the connection to CMD (split at blanks) instead of\n"
    "              stdin/stdout; with -k, one CMD per client\n"
    "  -4          IPv4 only\n"
    "  -6          IPv6 only (listen without ADDR: IPv6 clients only)\n"
    "  -q SECONDS  after end of stdin, quit once idle that long; -q 0 (as\n"
    "              nc -q 0): no limit, the reply is read to its end\n"
    "  -w SECONDS  connect/accept timeout, and quit (status 7) when idle\n"
    "              that long\n"
    "  -v          say what happens, on stderr\n"
    "  --stats     at exit, print the CPU and wall time of the relay, the\n"
    "              bytes moved, and the counts of polls, reads and writes\n"
    "  --help      this text\n"
    "  --version   the version of pollcat and anypoll\n"
    "exit status: 0 done, 2 usage, 3 bad port, 4 unknown host, 5 refused,\n"
    "  6 address in use, 7 timeout, 8 reader gone, 9 connection reset or\n"
    "  other network error,\n"
    "  10 local error, 126/127 command not runnable/not found; in exec mode\n"
    "  and with -e the child's status\n";

/* ---- Options and messages ---------------------------------------------- */

static struct {
  int verbose;
  int stats;
  int backend;
  double quit_after; /* -q, seconds; <= 0: off (-q 0 is nc's: see usage) */
  double wait;       /* -w, seconds; < 0: off */
  int family;        /* -4: AF_INET, -6: AF_INET6, else AF_UNSPEC */
  int keep;          /* -k: keep listening, serve clients at once */
  char **cmd;        /* -e: the command for each connection, or NULL */
} opt = { 0, 0, ANYPOLL_BACKEND_DEFAULT, -1, -1, AF_UNSPEC, 0, NULL };

static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("pollcat: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  fflush(stderr);
  va_end(ap);
}

#define VERBOSE(...)                                                         \
  do {                                                                       \
    if (opt.verbose)                                                         \
      say(__VA_ARGS__);                                                      \
  } while (0)

static struct {
  int started;
  double cpu0, t0;
  unsigned long long bytes[3];
  /* Counts, for finding where a slow relay waits: poll rounds, and the
   * reads and writes (those that moved data) of each stream. */
  unsigned long long polls, reads[3], writes[3], zero_writes[3];
} stats;

/* Every exit after the relay starts goes through here, so --stats is
 * printed whatever ends the relay. */
static void finish(int status) {
  if (opt.stats && stats.started) {
    say("stats: cpu %.1f ms, wall %.1f ms, bytes %llu %llu %llu",
        pc_cpu_ms() - stats.cpu0, pc_now_ms() - stats.t0, stats.bytes[0],
        stats.bytes[1], stats.bytes[2]);
    say("stats: polls %llu, reads %llu %llu %llu, writes %llu %llu %llu, "
        "writes that took nothing %llu %llu %llu",
        stats.polls, stats.reads[0], stats.reads[1], stats.reads[2],
        stats.writes[0], stats.writes[1], stats.writes[2],
        stats.zero_writes[0], stats.zero_writes[1], stats.zero_writes[2]);
  }
  fflush(stdout);
  exit(status);
}

static void usage_error(const char *fmt, const char *arg) {
  fputs("pollcat: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs(" (pollcat --help for usage)\n", stderr);
  exit(PC_EXIT_USAGE);
}

static double parse_seconds(const char *name, const char *s) {
  char *end;
  errno = 0;
  double v = s == NULL ? -1 : strtod(s, &end);
  if (s == NULL || end == s || *end != '\0' || errno != 0 || !isfinite(v) ||
      v < 0 || v > 1e6)
    usage_error("%s needs a number of seconds from 0 to 1000000", name);
  return v;
}

/* A port is a decimal number; service names are not looked up, so that a
 * typo is an error rather than a surprise. */
static long parse_port(const char *s, int allow_zero) {
  long v = 0;
  int digits = 0;
  for (const char *p = s; *p != '\0'; p++) {
    if (*p < '0' || *p > '9' || ++digits > 5)
      goto bad;
    v = v * 10 + (*p - '0');
  }
  if (digits > 0 && v <= 65535 && (v > 0 || allow_zero))
    return v;
bad:
  say("bad port '%s': must be a number from %d to 65535", s,
      allow_zero ? 0 : 1);
  exit(PC_EXIT_PORT);
}

static const char *addr_text(const struct sockaddr *sa, int len, char *port,
                             size_t port_len) {
  static char host[NI_MAXHOST];
  /* One at a time: the caller formats it before asking again. */
  if (getnameinfo(sa, (socklen_t)len, host, sizeof host, port,
                  (socklen_t)port_len, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    snprintf(host, sizeof host, "?");
    snprintf(port, port_len, "?");
  }
  return host;
}

/* ---- The relay ---------------------------------------------------------- */

struct stream {
  const char *src_name, *dst_name;
  struct pc_io *src, *dst;
  char *buf; /* BUF_SIZE bytes, page-aligned, inside mem */
  char *mem;
  size_t head, tail;
  int eof;          /* the source has ended */
  int done;         /* nothing more to do */
  int shut_dst;     /* shut the destination once drained after eof */
  int fatal_broken; /* a gone reader ends pollcat (our own stdout/stderr) */
  int quiet_broken; /* a gone reader is normal (a child that stops reading) */
  int retrying;     /* the last write made no progress (retry_writes) */
  int retry_ms;
  double retry_at;
  unsigned long long *count;
};

enum { UNTIL_ALL_DONE, UNTIL_OUTPUT_DONE };

struct relay {
  struct stream s[3];
  int n;
  int input;       /* index of the stream fed by our stdin, or -1 */
  int broken;      /* some reader went away before the end */
  unsigned long long moves; /* reads and writes that moved data, so far */
  int until;       /* UNTIL_ALL_DONE or UNTIL_OUTPUT_DONE */
  const char *label; /* -k: "client ADDR port N: ", else "" */
  int failed;      /* -k: the status this relay (one client) failed with */
  double last_activity;
};

static void stream_init(struct stream *s, const char *src_name,
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
  s->retry_ms = RETRY_MIN_MS;
  if (src->fd < 0)
    s->eof = 1; /* no such standard stream: an empty input */
}

static int wants_read(const struct stream *s) {
  return !s->done && !s->eof && (s->tail < BUF_SIZE || s->head > 0);
}

static int wants_write(const struct stream *s) {
  return !s->done && s->tail > s->head;
}

/* Several streams share a descriptor (a socket is read by one, written by
 * another): one pollfd per descriptor, as poll() users conventionally do. */
static void add_fd(struct pollfd *p, anypoll_nfds_t *n, int fd, short ev) {
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

static short revents_of(const struct pollfd *p, anypoll_nfds_t n, int fd) {
  for (anypoll_nfds_t i = 0; i < n; i++)
    if ((int)p[i].fd == fd)
      return p[i].revents;
  return 0;
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
    if (s->dst->retry_writes) {
      if (s->retrying && s->retry_ms < RETRY_MAX_MS)
        s->retry_ms *= 2;
      s->retrying = 1;
      s->retry_at = now + s->retry_ms;
    }
    return 0;
  }
  s->retrying = 0;
  s->retry_ms = RETRY_MIN_MS;
  stats.writes[s->count - stats.bytes]++;
  r->moves++;
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
  r->moves++;
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
static int relay_busy(const struct relay *r) {
  for (int i = 0; i < r->n; i++)
    if (!r->s[i].done && (r->until == UNTIL_ALL_DONE || i != r->input))
      return 1;
  return 0;
}

/* Adds what the relay waits for to pfd, and lowers *wake (an absolute
 * time, -1 for none) to its next timer. */
static void relay_fds(struct relay *r, struct pollfd *pfd, anypoll_nfds_t *n,
                      double *wake) {
  int deadline_status;
  double deadline = relay_deadline(r, &deadline_status);
  if (deadline >= 0 && (*wake < 0 || deadline < *wake))
    *wake = deadline;
  for (int i = 0; i < r->n; i++) {
    struct stream *s = &r->s[i];
    if (wants_read(s))
      add_fd(pfd, n, s->src->fd, POLLIN);
    if (wants_write(s)) {
      if (s->retrying) {
        if (*wake < 0 || s->retry_at < *wake)
          *wake = s->retry_at;
      } else {
        add_fd(pfd, n, s->dst->fd, POLLOUT);
      }
    }
  }
}

/* Does what the poll's answer allows, then checks -q and -w. */
static void relay_handle(struct relay *r, const struct pollfd *pfd,
                         anypoll_nfds_t n, double now) {
  unsigned long long moves_before = r->moves;
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
      can_write = s->retrying ? now >= s->retry_at
                              : revents_of(pfd, n, s->dst->fd) != 0;
    if (wants_read(s))
      can_read = revents_of(pfd, n, s->src->fd) != 0;
    if (can_read || can_write)
      stream_pump(r, s, now, can_read, can_write);
    if (s->eof && !s->done && s->head == s->tail)
      stream_end(r, s);
  }
  /* A destination without write readiness (a Windows pipe to a child)
   * waits on a timer; but when data moved this round, most likely the
   * child has read some of its input (a filter's output is the sign of
   * it), so try again now rather than sleep. */
  if (r->moves != moves_before) {
    for (int i = 0; i < r->n; i++) {
      struct stream *s = &r->s[i];
      if (s->retrying && wants_write(s))
        stream_pump(r, s, now, 0, 1);
      if (s->eof && !s->done && s->head == s->tail)
        stream_end(r, s);
    }
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

static int poll_timeout(double wake, double now) {
  if (wake < 0)
    return -1;
  return wake <= now ? 0 : (int)ceil(wake - now);
}

static int poll_all(struct pollfd *pfd, anypoll_nfds_t n, int timeout) {
  int ready = anypoll_poll_with(opt.backend, pfd, n, timeout);
  stats.polls++;
  if (ready < 0 && errno != EINTR) {
    say("poll failed: %s", strerror(errno));
    finish(PC_EXIT_IO);
  }
  return ready;
}

/* Runs one relay until it is done (see relay_busy). */
static void relay_run(struct relay *r) {
  struct pollfd pfd[8];
  r->last_activity = pc_now_ms();
  while (relay_busy(r)) {
    anypoll_nfds_t n = 0;
    double wake = -1;
    relay_fds(r, pfd, &n, &wake);
    if (poll_all(pfd, n, poll_timeout(wake, pc_now_ms())) < 0)
      continue;
    relay_handle(r, pfd, n, pc_now_ms());
  }
}

static void relay_start(void) {
  stats.started = 1;
  stats.cpu0 = pc_cpu_ms();
  stats.t0 = pc_now_ms();
}

/* Relays stdin to a connected socket and the socket to stdout. */
static void relay_socket(pc_sock sock) {
  static struct pc_io in, out, net;
  pc_std_io(0, &in);
  pc_std_io(1, &out);
  if (pc_sock_io(sock, &net) != 0) {
    say("cannot use the connection: %s", pc_error_text());
    finish(PC_EXIT_NET);
  }
  struct relay r;
  memset(&r, 0, sizeof r);
  r.label = "";
  r.n = 2;
  r.input = 0;
  stream_init(&r.s[0], "stdin", &in, "connection", &net, &stats.bytes[0]);
  r.s[0].shut_dst = 1;
  stream_init(&r.s[1], "connection", &net, "stdout", &out, &stats.bytes[1]);
  r.s[1].fatal_broken = 1;
  relay_start();
  r.until = UNTIL_ALL_DONE;
  relay_run(&r);
  finish(r.broken ? PC_EXIT_PIPE : PC_EXIT_OK);
}

/* Starts argv with pipes; 0, or the exit status for the failure (said). */
static int spawn(char **argv, struct pc_io io[3], struct pc_child *child) {
  if (pc_spawn(argv, io, child) == 0)
    return 0;
  enum pc_err e = pc_error();
  if (e == PCE_NOENT) {
    say("exec %s: command not found", argv[0]);
    return PC_EXIT_NOCMD;
  }
  say("exec %s: %s", argv[0], pc_error_text());
  return e == PCE_ACCESS ? PC_EXIT_NOEXEC : PC_EXIT_IO;
}

/* ---- -e and -k: a command per connection, many connections at once ----- */

#define MAX_CLIENTS 64

/* One connection: relayed to our stdout (-k alone), or to a child of its
 * own (-e), whose stderr goes to ours. */
struct session {
  struct relay r;
  struct pc_io net, child_io[3];
  struct pc_child child;
  int has_child;
  char label[NI_MAXHOST + 64]; /* "client ADDR port N: " with -k */
  char name[NI_MAXHOST + 64];  /* the connection's name in messages */
};

static struct pc_io std_out, std_err;

/* 0, or -1 when the connection could not be served (said; sock closed,
 * or with -k alone the status to exit with is returned by session_end). */
static int session_start(struct session *c, pc_sock sock, const char *who) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "connection");
  if (opt.keep)
    snprintf(c->label, sizeof c->label, "client %s: ", who);
  c->r.label = c->label;
  if (pc_sock_io(sock, &c->net) != 0) {
    say("%scannot use the connection: %s", c->label, pc_error_text());
    pc_sock_close(sock);
    return -1;
  }
  struct relay *r = &c->r;
  if (opt.cmd != NULL) {
    int rc = spawn(opt.cmd, c->child_io, &c->child);
    if (rc != 0) {
      pc_sock_io_close(&c->net);
      if (!opt.keep)
        finish(rc);
      return -1;
    }
    c->has_child = 1;
    VERBOSE("%sstarted %s", c->label, opt.cmd[0]);
    r->n = 3;
    r->input = 0;
    r->until = UNTIL_OUTPUT_DONE;
    stream_init(&r->s[0], c->name, &c->net, "child stdin", &c->child_io[0],
                &stats.bytes[0]);
    r->s[0].shut_dst = 1;
    r->s[0].quiet_broken = 1;
    stream_init(&r->s[1], "child stdout", &c->child_io[1], c->name, &c->net,
                &stats.bytes[1]);
    r->s[1].shut_dst = 1;
    stream_init(&r->s[2], "child stderr", &c->child_io[2], "stderr", &std_err,
                &stats.bytes[2]);
    r->s[2].fatal_broken = 1;
  } else {
    /* -k alone: each client's data to stdout; stdin is not read (it could
     * go to one client only), and our sending side stays open until the
     * client closes. */
    r->n = 1;
    r->input = -1;
    r->until = UNTIL_ALL_DONE;
    stream_init(&r->s[0], c->name, &c->net, "stdout", &std_out,
                &stats.bytes[1]);
    r->s[0].fatal_broken = 1;
  }
  r->last_activity = pc_now_ms();
  return 0;
}

/* Closes what the session holds and returns its status: the failure's,
 * else the child's (-e), else 0. */
static int session_end(struct session *c) {
  int status = c->r.failed;
  for (int i = 0; i < c->r.n; i++)
    free(c->r.s[i].mem);
  pc_sock_io_close(&c->net);
  if (c->has_child) {
    for (int i = 0; i < 3; i++)
      pc_close(&c->child_io[i]);
    /* Its output has ended (or the relay failed and its pipes are closed
     * now), so it is exiting. */
    int child_status = pc_child_wait(&c->child);
    if (child_status < 0) {
      say("%swaiting for %s failed: %s", c->label, opt.cmd[0],
          pc_error_text());
      child_status = PC_EXIT_IO;
    }
    VERBOSE("%s%s exited with status %d", c->label, opt.cmd[0], child_status);
    if (status == 0)
      status = child_status;
  }
  VERBOSE("%sdone, status %d", c->label, status);
  return status;
}

/* -e without -k: one connection served by the command; pollcat's status
 * is the command's (or the relay's failure). */
static void serve_one(pc_sock sock) {
  pc_std_io(1, &std_out);
  pc_std_io(2, &std_err);
  static struct session c;
  if (session_start(&c, sock, "") != 0)
    finish(PC_EXIT_NET);
  relay_start();
  relay_run(&c.r);
  finish(session_end(&c));
}

/* -k: accepts clients and serves up to MAX_CLIENTS at once, each with its
 * own relay, all waited on in one anypoll_poll call with the listener. */
static void serve_clients(pc_sock ls) {
  static struct pc_io lio;
  static struct session *clients[MAX_CLIENTS];
  static struct pollfd pfd[MAX_CLIENTS * 6 + 1];
  pc_std_io(1, &std_out);
  pc_std_io(2, &std_err);
  if (pc_sock_io(ls, &lio) != 0) {
    say("cannot wait on the listener: %s", pc_error_text());
    exit(PC_EXIT_NET);
  }
  relay_start();
  int count = 0;
  for (;;) {
    anypoll_nfds_t n = 0;
    double wake = -1;
    if (count < MAX_CLIENTS)
      add_fd(pfd, &n, lio.fd, POLLIN);
    for (int i = 0; i < count; i++)
      relay_fds(&clients[i]->r, pfd, &n, &wake);
    if (poll_all(pfd, n, poll_timeout(wake, pc_now_ms())) < 0)
      continue;
    double now = pc_now_ms();
    for (int i = 0; i < count; i++) {
      relay_handle(&clients[i]->r, pfd, n, now);
      if (!relay_busy(&clients[i]->r)) {
        session_end(clients[i]);
        free(clients[i]);
        clients[i--] = clients[--count];
      }
    }
    if (count < MAX_CLIENTS && revents_of(pfd, n, lio.fd) != 0) {
      struct sockaddr_storage ss;
      int len = sizeof ss;
      pc_sock c = pc_accept(ls, &ss, &len);
      if (c == PC_NO_SOCK) {
        enum pc_err e = pc_error();
        if (e != PCE_AGAIN && e != PCE_RESET)
          say("accept failed: %s", pc_error_text());
        continue;
      }
      char port[NI_MAXSERV], who[NI_MAXHOST + NI_MAXSERV + 8];
      const char *addr =
          addr_text((struct sockaddr *)&ss, len, port, sizeof port);
      snprintf(who, sizeof who, "%s port %s", addr, port);
      VERBOSE("connection from %s", who);
      struct session *sess = malloc(sizeof *sess);
      if (sess == NULL) {
        say("out of memory");
        pc_sock_close(c);
        continue;
      }
      if (session_start(sess, c, who) != 0) {
        free(sess);
        continue;
      }
      clients[count++] = sess;
    }
  }
}

/* ---- Modes -------------------------------------------------------------- */

static struct addrinfo *resolve(const char *host, const char *port,
                                int passive) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = opt.family;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  int rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0 || res == NULL) {
    say("unknown host '%s': %s", host,
        rc != 0 ? pc_gai_text(rc) : "no address");
    exit(PC_EXIT_HOST);
  }
  return res;
}

static int exit_for(enum pc_err e) {
  switch (e) {
  case PCE_REFUSED: return PC_EXIT_REFUSED;
  case PCE_INUSE: return PC_EXIT_INUSE;
  case PCE_TIMEDOUT: return PC_EXIT_TIMEOUT;
  default: return PC_EXIT_NET;
  }
}

/* Waits (with -w as the bound) until sock is ready for events; 0 when it
 * is, 1 on timeout. */
static int wait_socket(pc_sock sock, short events) {
  struct pc_io io;
  if (pc_sock_io(sock, &io) != 0) {
    say("cannot wait on a socket: %s", pc_error_text());
    exit(PC_EXIT_NET);
  }
  double deadline = opt.wait < 0 ? -1 : pc_now_ms() + opt.wait * 1000;
  for (;;) {
    struct pollfd p = { 0 };
    p.fd = io.fd;
    p.events = events;
    int timeout = -1;
    if (deadline >= 0) {
      double left = deadline - pc_now_ms();
      timeout = left <= 0 ? 0 : (int)ceil(left);
    }
    int rc = anypoll_poll_with(opt.backend, &p, 1, timeout);
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0) {
      say("poll failed: %s", strerror(errno));
      exit(PC_EXIT_IO);
    }
    if (rc > 0)
      return 0;
    if (deadline >= 0 && pc_now_ms() >= deadline)
      return 1;
  }
}

static void mode_connect(const char *host, const char *port_text) {
  parse_port(port_text, 0);
  struct addrinfo *res = resolve(host, port_text, 0);
  enum pc_err last = PCE_OTHER;
  char last_text[NI_MAXHOST + 512] = "no usable address";
  for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
    char port[NI_MAXSERV];
    const char *addr = addr_text(ai->ai_addr, (int)ai->ai_addrlen, port,
                                 sizeof port);
    pc_sock s = pc_socket(ai->ai_family);
    if (s == PC_NO_SOCK) {
      last = pc_error();
      snprintf(last_text, sizeof last_text, "%s", pc_error_text());
      continue;
    }
    VERBOSE("connecting to %s port %s", addr, port);
    int rc = pc_connect(s, ai->ai_addr, (int)ai->ai_addrlen);
    if (rc != 0 && pc_error() == PCE_INPROGRESS) {
      if (wait_socket(s, POLLOUT) != 0) {
        last = PCE_TIMEDOUT;
        snprintf(last_text, sizeof last_text, "%s port %s: timed out", addr,
                 port);
        pc_sock_close(s);
        continue;
      }
      rc = pc_connect_result(s);
    }
    if (rc != 0) {
      last = pc_error();
      snprintf(last_text, sizeof last_text, "%s port %s: %s", addr, port,
               pc_error_text());
      VERBOSE("connect to %s", last_text);
      pc_sock_close(s);
      continue;
    }
    VERBOSE("connected to %s port %s", addr, port);
    freeaddrinfo(res);
    if (opt.cmd != NULL)
      serve_one(s);
    relay_socket(s);
  }
  freeaddrinfo(res);
  /* last_text names the address; the host only when it differs. */
  if (strncmp(last_text, host, strlen(host)) == 0 &&
      last_text[strlen(host)] == ' ')
    say("connect to %s", last_text);
  else
    say("connect to %s: %s", host, last_text);
  exit(exit_for(last));
}

static void mode_listen(const char *host, const char *port_text) {
  parse_port(port_text, 1);
  struct addrinfo *res = NULL;
  /* No address: the IPv6 wildcard in dual-stack mode takes IPv4 and IPv6
   * alike; systems without IPv6 fall back to the IPv4 wildcard. -4 and -6
   * take one family's wildcard (-6: IPv6 only). */
  const char *try_hosts[2] = { host, NULL };
  if (host == NULL) {
    try_hosts[0] = opt.family == AF_INET ? "0.0.0.0" : "::";
    try_hosts[1] = opt.family == AF_UNSPEC ? "0.0.0.0" : NULL;
  }
  int dual = host == NULL && opt.family == AF_UNSPEC ? 1
             : opt.family == AF_INET6                ? -1
                                                     : 0;
  pc_sock ls = PC_NO_SOCK;
  enum pc_err last = PCE_OTHER;
  char last_text[NI_MAXHOST + 512] = "no usable address";
  for (int h = 0; h < 2 && try_hosts[h] != NULL && ls == PC_NO_SOCK; h++) {
    res = resolve(try_hosts[h], port_text, 1);
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
      char port[NI_MAXSERV];
      const char *addr = addr_text(ai->ai_addr, (int)ai->ai_addrlen, port,
                                   sizeof port);
      pc_sock s = pc_socket(ai->ai_family);
      if (s != PC_NO_SOCK &&
          pc_bind_listen(s, ai->ai_addr, (int)ai->ai_addrlen,
                         ai->ai_family == AF_INET6 ? dual : 0) == 0) {
        ls = s;
        break;
      }
      last = pc_error();
      snprintf(last_text, sizeof last_text, "%s port %s: %s", addr, port,
               pc_error_text());
      if (s != PC_NO_SOCK)
        pc_sock_close(s);
    }
    freeaddrinfo(res);
  }
  if (ls == PC_NO_SOCK) {
    say("listen on %s", last_text);
    exit(exit_for(last));
  }
  struct sockaddr_storage ss;
  int len = sizeof ss;
  char port[NI_MAXSERV];
  if (pc_local_addr(ls, &ss, &len) == 0)
    VERBOSE("listening on %s port %s",
            addr_text((struct sockaddr *)&ss, len, port, sizeof port), port);
  if (opt.keep)
    serve_clients(ls);
  for (;;) {
    if (wait_socket(ls, POLLIN) != 0) {
      say("timed out waiting for a connection");
      exit(PC_EXIT_TIMEOUT);
    }
    len = sizeof ss;
    pc_sock c = pc_accept(ls, &ss, &len);
    if (c == PC_NO_SOCK) {
      enum pc_err e = pc_error();
      /* The client may give up between readiness and accept. */
      if (e == PCE_AGAIN || e == PCE_RESET)
        continue;
      say("accept failed: %s", pc_error_text());
      exit(PC_EXIT_NET);
    }
    VERBOSE("connection from %s port %s",
            addr_text((struct sockaddr *)&ss, len, port, sizeof port), port);
    pc_sock_close(ls);
    if (opt.cmd != NULL)
      serve_one(c);
    relay_socket(c);
  }
}

static void mode_exec(char **argv) {
  static struct pc_io in, out, err, child_io[3];
  struct pc_child child;
  int rc = spawn(argv, child_io, &child);
  if (rc != 0)
    exit(rc);
  VERBOSE("started %s", argv[0]);
  pc_std_io(0, &in);
  pc_std_io(1, &out);
  pc_std_io(2, &err);
  struct relay r;
  memset(&r, 0, sizeof r);
  r.label = "";
  r.n = 3;
  r.input = 0;
  stream_init(&r.s[0], "stdin", &in, "child stdin", &child_io[0],
              &stats.bytes[0]);
  r.s[0].shut_dst = 1;
  r.s[0].quiet_broken = 1;
  stream_init(&r.s[1], "child stdout", &child_io[1], "stdout", &out,
              &stats.bytes[1]);
  r.s[1].fatal_broken = 1;
  stream_init(&r.s[2], "child stderr", &child_io[2], "stderr", &err,
              &stats.bytes[2]);
  r.s[2].fatal_broken = 1;
  if (in.fd < 0)
    pc_shut(&child_io[0]);
  relay_start();
  r.until = UNTIL_OUTPUT_DONE;
  relay_run(&r);
  /* The child's output has ended; what is left is to collect its status
   * (it may still be running, with its output closed). */
  int status = pc_child_wait(&child);
  if (status < 0) {
    say("waiting for %s failed: %s", argv[0], pc_error_text());
    finish(PC_EXIT_IO);
  }
  VERBOSE("%s exited with status %d", argv[0], status);
  finish(status);
}

/* ---- Command line ------------------------------------------------------- */

/* -e CMD: the command line split at blanks, as ncat -e does (no quoting;
 * a command with awkward arguments belongs in a script). */
static char **split_command(const char *line) {
  size_t len = strlen(line);
  char *copy = malloc(len + 1);
  char **argv = malloc((len / 2 + 2) * sizeof *argv);
  if (copy == NULL || argv == NULL) {
    say("out of memory");
    exit(PC_EXIT_IO);
  }
  memcpy(copy, line, len + 1);
  int n = 0;
  for (char *p = copy; *p != '\0';) {
    while (*p == ' ' || *p == '\t')
      *p++ = '\0';
    if (*p == '\0')
      break;
    argv[n++] = p;
    while (*p != '\0' && *p != ' ' && *p != '\t')
      p++;
  }
  argv[n] = NULL;
  if (n == 0)
    usage_error("-e needs a command%s", "");
  return argv;
}

/* A closed stdout where the data would go: pollcat stops before it
 * connects, listens or starts a child. Discarding the data instead (as a
 * null device would) would end a transfer that went nowhere with status 0,
 * which promises that every byte was delivered. */
static void need_stdout(const int closed[3]) {
  if (closed[1]) {
    say("stdout is closed: nowhere to write the data (>/dev/null discards "
        "it)");
    exit(PC_EXIT_IO);
  }
}

int main(int argc, char **argv) {
  int closed[3];
  pc_init(closed);
  char *pos[4];
  int npos = 0;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (npos > 0 && strcmp(pos[0], "exec") == 0) {
      if (strcmp(a, "--") == 0)
        i++;
      break; /* the command and its arguments */
    }
    if (a[0] != '-' || a[1] == '\0') {
      if (npos == 4)
        usage_error("too many arguments ('%s')", a);
      pos[npos++] = argv[i];
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("pollcat %s (anypoll %s)\n", ANYPOLL_VERSION_STRING,
             anypoll_version());
      return 0;
    } else if (strcmp(a, "-k") == 0) {
      opt.keep = 1;
    } else if (strcmp(a, "-e") == 0) {
      if (++i >= argc)
        usage_error("-e needs a command%s", "");
      opt.cmd = split_command(argv[i]);
    } else if (strcmp(a, "-4") == 0) {
      opt.family = AF_INET;
    } else if (strcmp(a, "-6") == 0) {
      opt.family = AF_INET6;
    } else if (strcmp(a, "-v") == 0) {
      opt.verbose = 1;
    } else if (strcmp(a, "--stats") == 0) {
      opt.stats = 1;
    } else if (strcmp(a, "-q") == 0) {
      opt.quit_after = parse_seconds("-q", argv[++i < argc ? i : argc]);
    } else if (strcmp(a, "-w") == 0) {
      opt.wait = parse_seconds("-w", argv[++i < argc ? i : argc]);
    } else if (strcmp(a, "--backend") == 0) {
      /* For the tests: show that the idle test catches a busy wait. */
      const char *name = ++i < argc ? argv[i] : "";
      opt.backend = anypoll_backend_from_name(name);
      if (opt.backend < 0)
        usage_error("unknown backend '%s'", name);
    } else if (strcmp(a, "--") == 0) {
      usage_error("'--' only goes before the command of exec%s", "");
    } else {
      usage_error("unknown option '%s'", a);
    }
  }
  if (npos == 0)
    usage_error("missing mode: connect, listen or exec%s", "");
  const char *mode = pos[0];
  if (strcmp(mode, "connect") == 0) {
    if (opt.keep)
      usage_error("-k goes with listen%s", "");
    if (npos != 3)
      usage_error("connect needs HOST and PORT%s", "");
    if (opt.cmd == NULL)
      need_stdout(closed);
    mode_connect(pos[1], pos[2]);
  } else if (strcmp(mode, "listen") == 0) {
    if (npos < 2 || npos > 3)
      usage_error("listen needs [ADDR] PORT%s", "");
    if (opt.cmd == NULL)
      need_stdout(closed);
    mode_listen(npos == 3 ? pos[1] : NULL, pos[npos - 1]);
  } else if (strcmp(mode, "exec") == 0) {
    if (opt.cmd != NULL || opt.keep)
      usage_error("exec takes no -e or -k%s", "");
    if (npos != 1)
      usage_error("exec takes no arguments before the command%s", "");
    if (i >= argc)
      usage_error("exec: missing command%s", "");
    need_stdout(closed);
    mode_exec(argv + i);
  }
  usage_error("unknown mode '%s'", mode);
  return PC_EXIT_USAGE;
}
