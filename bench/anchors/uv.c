/* SPDX-License-Identifier: MIT */
/* libuv's rows of the anchors benchmark (bench/anchors/anchors.c): a loop
 * of its own per row, the return end opened as libuv's stream and read by
 * libuv (uv_read_start), uv_run(UV_RUN_ONCE) until the byte is in:
 *   pipe   uv_pipe_open on a synchronous pipe (_pipe(); pipe() on Linux),
 *   apipe  uv_pipe's own pipe, its read end overlapped (Windows),
 *   tcp    uv_tcp_open on the accepted loopback socket.
 * Built only when libuv's sources are given (ANYPOLL_BENCH_LIBUV). */
#include <stdlib.h>
#include <uv.h>

#include "anchors.h"
#include "common.h"

struct uvrow {
  struct anchor_link *l;
  uv_loop_t loop;
  union {
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tcp_t tcp;
  } h;
  int got;
  char buf[16];
};

static void die_uv(const char *what, int err) {
  fprintf(stderr, "bench: %s: %s\n", what, uv_strerror(err));
  exit(2);
}

static void on_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf) {
  struct uvrow *u = h->data;
  (void)size;
  *buf = uv_buf_init(u->buf, sizeof u->buf);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  struct uvrow *u = s->data;
  (void)buf;
  if (n < 0)
    die_uv("read", (int)n);
  u->got += (int)n;
}

static void *uv_open(int transport) {
  struct uvrow *u = calloc(1, sizeof *u);
  int err;
  if (u == NULL)
    bench_die("calloc");
  if ((err = uv_loop_init(&u->loop)) != 0)
    die_uv("uv_loop_init", err);
  if (transport == ANCHOR_TCP) {
    u->l = anchor_link_tcp();
    if ((err = uv_tcp_init(&u->loop, &u->h.tcp)) != 0 ||
        (err = uv_tcp_open(&u->h.tcp,
                           (uv_os_sock_t)anchor_link_socket(u->l))) != 0)
      die_uv("uv_tcp_open", err);
  } else {
    int back[2];
    if (transport == ANCHOR_APIPE) {
      uv_file f[2];
      /* The read end overlapped, the write end a plain one. */
      if ((err = uv_pipe(f, UV_NONBLOCK_PIPE, 0)) != 0)
        die_uv("uv_pipe", err);
      back[0] = f[0];
      back[1] = f[1];
    } else {
      bench_pipe(back, 4096);
    }
    u->l = anchor_link_pipe(back);
    if ((err = uv_pipe_init(&u->loop, &u->h.pipe, 0)) != 0 ||
        (err = uv_pipe_open(&u->h.pipe, anchor_link_fd(u->l))) != 0)
      die_uv("uv_pipe_open", err);
  }
  u->h.stream.data = u;
  if ((err = uv_read_start(&u->h.stream, on_alloc, on_read)) != 0)
    die_uv("uv_read_start", err);
  return u;
}

static void uv_trip(void *ctx) {
  struct uvrow *u = ctx;
  u->got = 0;
  anchor_ping(u->l);
  while (u->got == 0)
    uv_run(&u->loop, UV_RUN_ONCE);
  if (u->got != 1)
    bench_die("libuv read");
}

int anchors_libuv_rows(struct anchor_row *out) {
  int n = 0;
  out[n++] = (struct anchor_row){ ANCHOR_PIPE, "libuv uv_pipe_open", uv_open,
                                  uv_trip };
#ifdef _WIN32
  out[n++] = (struct anchor_row){ ANCHOR_APIPE, "libuv uv_pipe", uv_open,
                                  uv_trip };
#endif
  out[n++] = (struct anchor_row){ ANCHOR_TCP, "libuv uv_tcp", uv_open,
                                  uv_trip };
  return n;
}
