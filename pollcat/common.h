/* SPDX-License-Identifier: MIT */
/* What pollcat's portable files share: the options and messages
 * (common.c), the poll and the exit (poll.c), the relay (relay.c), connect
 * and listen (net.c), and the children and sessions (child.c); main is
 * options.c's. Each file calls only those below it: options.c -> net.c ->
 * child.c -> relay.c -> poll.c -> common.c. The platform layer is
 * pollcat.h's. */
#ifndef POLLCAT_COMMON_H
#define POLLCAT_COMMON_H

#include "pollcat.h"

/* ---- common.c: the options and messages -------------------------------- */

struct options {
  int verbose;
  int stats;
  int backend;
  double quit_after; /* -q, seconds; <= 0: off (-q 0 is nc's: see usage) */
  double wait;       /* -w, seconds; < 0: off */
  int family;        /* -4: AF_INET, -6: AF_INET6, else AF_UNSPEC */
  int keep;          /* -k: keep listening, serve clients at once */
  char **cmd;        /* -e: the command for each connection, or NULL */
};
extern struct options opt;

/* "pollcat: " and the message, one line on stderr. */
void say(const char *fmt, ...);

#define VERBOSE(...)                                                         \
  do {                                                                       \
    if (opt.verbose)                                                         \
      say(__VA_ARGS__);                                                      \
  } while (0)

/* A usage error: the message (fmt with arg) and status PC_EXIT_USAGE. */
void usage_error(const char *fmt, const char *arg);

/* ---- poll.c: the poll, counted, and the exit -------------------------- */

struct stats {
  int started;
  double cpu0, t0;
  unsigned long long bytes[3];
  /* Counts, for finding where a slow relay waits: poll rounds, and the
   * reads and writes (those that moved data) of each stream. */
  unsigned long long polls, reads[3], writes[3], zero_writes[3];
  /* How a watch set would have fared (docs/pollcat.md, "Why the relay
   * stays on anypoll_poll"): the rounds whose descriptors or events
   * differed from the round before, and the add, del and mod calls a set
   * would have needed to follow them (relay_run only). */
  unsigned long long changed_rounds, set_ctls;
};
extern struct stats stats;

/* Exits with status, printing --stats first (every exit after the relay
 * starts goes through here). */
void finish(int status);

void add_fd(struct pollfd *p, anypoll_nfds_t *n, int fd, short ev);
short revents_of(const struct pollfd *p, anypoll_nfds_t n, int fd);
/* anypoll_poll with the chosen backend, counted; exits when it fails. */
int poll_all(struct pollfd *pfd, anypoll_nfds_t n, int timeout);
/* The poll timeout in ms until wake (an absolute time; -1: none). */
int poll_timeout(double wake, double now);

/* ---- relay.c: one-way streams waited on with anypoll_poll -------------- */

struct stream {
  const char *src_name, *dst_name;
  struct pc_io *src, *dst;
  char *buf; /* BUF_SIZE (relay.c) bytes, page-aligned, inside mem */
  char *mem;
  size_t head, tail;
  int eof;          /* the source has ended */
  int done;         /* nothing more to do */
  int shut_dst;     /* shut the destination once drained after eof */
  int fatal_broken; /* a gone reader ends pollcat (our own stdout/stderr) */
  int quiet_broken; /* a gone reader is normal (a child that stops reading) */
  unsigned long long *count;
};

enum { UNTIL_ALL_DONE, UNTIL_OUTPUT_DONE };

struct relay {
  struct stream s[3];
  int n;
  int input;       /* index of the stream fed by our stdin, or -1 */
  int broken;      /* some reader went away before the end */
  int until;       /* UNTIL_ALL_DONE or UNTIL_OUTPUT_DONE */
  const char *label; /* -k: "client ADDR port N: ", else "" */
  int failed;      /* -k: the status this relay (one client) failed with */
  double last_activity;
};

/* A stream from src to dst with its own buffer (exits when out of memory);
 * count is where --stats adds the bytes it moves. A src without a
 * descriptor is an empty input. */
void stream_init(struct stream *s, const char *src_name, struct pc_io *src,
                 const char *dst_name, struct pc_io *dst,
                 unsigned long long *count);
/* The relay has started: --stats counts from here. */
void relay_start(void);
/* Runs one relay until it is done (see relay_busy). */
void relay_run(struct relay *r);
/* For a caller that waits on many relays in one call (-k): add what r
 * waits for, handle the answer, and whether r has work left. */
void relay_fds(struct relay *r, struct pollfd *pfd, anypoll_nfds_t *n,
               double *wake);
void relay_handle(struct relay *r, const struct pollfd *pfd, anypoll_nfds_t n,
                  double now);
int relay_busy(const struct relay *r);

/* ---- net.c: connect and listen ---------------------------------------- */

/* Each ends pollcat: they return only through exit. */
void mode_connect(const char *host, const char *port_text);
void mode_listen(const char *host, const char *port_text);

/* ---- child.c: children, and one relay per connection ------------------- */

/* A child started by start_child: its process descriptor. */
struct pc_child {
  int proc;
};

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

/* Starts argv with pipes; 0, or the exit status for the failure (said). */
int start_child(char **argv, struct pc_io io[3], struct pc_child *child);
/* Our stdout and stderr, for the sessions: once, before the first. */
void sessions_setup(void);
/* A session for the connection sock from who (-k's label): 0, or -1 when
 * it could not be served (said; sock closed). */
int session_start(struct session *c, pc_sock sock, const char *who);
/* Closes what the session holds and returns its status: the failure's,
 * else the child's (-e), else 0. */
int session_end(struct session *c);
/* -e without -k: one connection served by the command; exits. */
void serve_one(pc_sock sock);
/* exec mode; exits with the child's status. */
void mode_exec(char **argv);

#endif
