/* SPDX-License-Identifier: MIT */
/* pollcat's connect and listen: addresses, the connection's relay to the
 * standard streams, and -k's many clients waited on in one call. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAX_CLIENTS 64

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

/* -k: accepts clients and serves up to MAX_CLIENTS at once, each with its
 * own relay, all waited on in one anypoll_poll call with the listener. */
static void serve_clients(pc_sock ls) {
  static struct pc_io lio;
  static struct session *clients[MAX_CLIENTS];
  static struct pollfd pfd[MAX_CLIENTS * 6 + 1];
  sessions_setup();
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

void mode_connect(const char *host, const char *port_text) {
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

void mode_listen(const char *host, const char *port_text) {
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

