/* SPDX-License-Identifier: MIT */
/* The anchors benchmark (bench/anchors/anchors.c): anypoll's waits beside
 * the libraries a programmer would pick instead (libuv, wepoll), on the
 * same one-byte ping-pong. This header is what the rows (anypoll_rows.c;
 * uv.c, wepoll_rows.c, built only when their sources are given) share
 * with the links they wait on (link.c) and with the driver. */
#ifndef BENCH_ANCHORS_H
#define BENCH_ANCHORS_H

#include <stdint.h>

/* Transports. */
enum {
  ANCHOR_PIPE,  /* a synchronous pipe (_pipe() on Windows, pipe() on Linux) */
  ANCHOR_APIPE, /* an overlapped pipe, each library's own (Windows only) */
  ANCHOR_TCP,   /* a loopback TCP connection, Nagle off */
  ANCHOR_TRANSPORTS
};

/* One ping-pong link: the echo side is a thread of its own that reads the
 * byte with a plain blocking read and writes it back, the same for every
 * row of a transport. On pipes the byte goes out on a _pipe() pipe and
 * comes back on the pipe under test; on TCP both ways on one connection. */
struct anchor_link;

/* A pipe link whose return pipe is back[] (back[0] is the end waited on,
 * back[1] must be writable with a plain write). */
struct anchor_link *anchor_link_pipe(const int back[2]);
struct anchor_link *anchor_link_tcp(void);
/* The descriptor the waiting side reads (a C runtime descriptor on
 * Windows, a socket's too), and the socket itself for libraries that take
 * sockets (the same number on Linux). */
int anchor_link_fd(const struct anchor_link *l);
uintptr_t anchor_link_socket(const struct anchor_link *l);
/* Sends the ping (one byte); exits on error. */
void anchor_ping(const struct anchor_link *l);

/* One row: a transport and a way to wait. open makes its own link (rows
 * never share one: a library may tie a handle to its port for good) and
 * whatever the waiter needs; trip runs one round trip: anchor_ping, the
 * wait, the read of the byte. */
struct anchor_row {
  int transport;
  const char *name;
  void *(*open)(int transport);
  void (*trip)(void *ctx);
};

/* The rows, appended to out[]; return their count. anypoll's (and raw
 * epoll's) are per transport, the libraries' for all of them. */
int anchors_anypoll_rows(int transport, struct anchor_row *out);
int anchors_libuv_rows(struct anchor_row *out);
int anchors_wepoll_rows(struct anchor_row *out);

#endif /* BENCH_ANCHORS_H */
