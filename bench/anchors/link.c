/* SPDX-License-Identifier: MIT */
/* The anchors benchmark's links (anchors.h): the echo thread and the ends
 * every row waits on, the same for anypoll's rows and the libraries'. */
#include <stdlib.h>
#ifdef _WIN32
#  include <io.h>
#endif

#include "anchors.h"
#include "common.h"

#define QUIT 0xFF

struct anchor_link {
  int tcp;
  int out, back; /* pipes: the ping's write end and the return's read end */
  int echo_in, echo_out; /* the echo thread's ends */
  int sock; /* tcp: the waiting side's end (out and back too) */
};

static void echo_main(void *arg) {
  struct anchor_link *l = arg;
  unsigned char b;
  for (;;) {
    long n = l->tcp ? bench_recv(l->echo_in, &b, 1)
                    : bench_read(l->echo_in, &b, 1);
    if (n != 1 || b == QUIT)
      return;
    n = l->tcp ? bench_send(l->echo_out, &b, 1)
               : bench_write(l->echo_out, &b, 1);
    if (n != 1)
      bench_die("echo write");
  }
}

/* The echo threads are never joined: they block in their read until the
 * process ends (the rows' libraries own the other ends by then). */
static struct anchor_link *link_start(struct anchor_link *l) {
  if (bench_thread_start(echo_main, l) == NULL)
    bench_die("echo thread");
  return l;
}

struct anchor_link *anchor_link_pipe(const int back[2]) {
  struct anchor_link *l = calloc(1, sizeof *l);
  int to[2];
  if (l == NULL)
    bench_die("calloc");
  bench_pipe(to, 4096);
  l->out = to[1];
  l->echo_in = to[0];
  l->back = back[0];
  l->echo_out = back[1];
  return link_start(l);
}

struct anchor_link *anchor_link_tcp(void) {
  struct anchor_link *l = calloc(1, sizeof *l);
  int port;
  if (l == NULL)
    bench_die("calloc");
  int lis = bench_tcp_listen(&port);
  int c = bench_tcp_connect(port); /* the listen queue takes it */
  l->tcp = 1;
  l->sock = l->out = l->back = bench_tcp_accept(lis);
  l->echo_in = l->echo_out = c;
  bench_sock_close(lis);
  return link_start(l);
}

int anchor_link_fd(const struct anchor_link *l) {
  return l->back;
}

uintptr_t anchor_link_socket(const struct anchor_link *l) {
#ifdef _WIN32
  return (uintptr_t)_get_osfhandle(l->sock);
#else
  return (uintptr_t)l->sock;
#endif
}

void anchor_ping(const struct anchor_link *l) {
  unsigned char b = 'p';
  long n = l->tcp ? bench_send(l->out, &b, 1) : bench_write(l->out, &b, 1);
  if (n != 1)
    bench_die("ping");
}
