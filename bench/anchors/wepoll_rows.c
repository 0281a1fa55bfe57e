/* SPDX-License-Identifier: MIT */
/* wepoll's row of the anchors benchmark (bench/anchors/anchors.c): its
 * epoll_wait on an epoll port holding the socket (level-triggered
 * EPOLLIN), then recv. Sockets only, as wepoll is. Windows only; built
 * only when wepoll's sources are given (ANYPOLL_BENCH_WEPOLL). */
#include <stdlib.h>
#include <wepoll.h>

#include "anchors.h"
#include "common.h"

struct wrow {
  struct anchor_link *l;
  HANDLE ep;
};

static void *wepoll_open(int transport) {
  struct wrow *w = calloc(1, sizeof *w);
  struct epoll_event ev = { 0 };
  (void)transport;
  if (w == NULL)
    bench_die("calloc");
  w->l = anchor_link_tcp();
  w->ep = epoll_create1(0);
  ev.events = EPOLLIN;
  SOCKET sock = (SOCKET)anchor_link_socket(w->l);
  if (w->ep == NULL || epoll_ctl(w->ep, EPOLL_CTL_ADD, sock, &ev) != 0)
    bench_die("wepoll epoll_ctl");
  return w;
}

static void wepoll_trip(void *ctx) {
  struct wrow *w = ctx;
  struct epoll_event ev[8];
  unsigned char b[64]; /* as anypoll's rows read */
  anchor_ping(w->l);
  if (epoll_wait(w->ep, ev, 8, -1) != 1)
    bench_die("wepoll epoll_wait");
  if (bench_recv(anchor_link_fd(w->l), b, sizeof b) != 1)
    bench_die("recv");
}

int anchors_wepoll_rows(struct anchor_row *out) {
  out[0] = (struct anchor_row){ ANCHOR_TCP, "wepoll", wepoll_open,
                                wepoll_trip };
  return 1;
}
