/* SPDX-License-Identifier: MIT */
/* anypoll's rows of the anchors benchmark (bench/anchors/anchors.c), and
 * raw epoll's on Linux: the blocking read that heads each transport,
 * anypoll_poll, the watch set (with ANYPOLL_ASSOCIATE on TCP), each then
 * reading the byte. Always built, beside the libraries' uv.c and
 * wepoll_rows.c. */
#include <stdlib.h>
#ifndef _WIN32
#  include <sys/epoll.h>
#endif

#include "anchors.h"
#include "common.h"

enum { BLOCKING, POLL, SET, SET_ASSOC, EPOLL };

struct own {
  int how, transport;
  struct anchor_link *l;
  struct pollfd p;
  anypoll_set *set;
  int ep;
};

static void *own_open(int transport, int how) {
  struct own *o = calloc(1, sizeof *o);
  if (o == NULL)
    bench_die("calloc");
  o->how = how;
  o->transport = transport;
  if (transport == ANCHOR_TCP) {
    o->l = anchor_link_tcp();
  } else {
    int back[2];
    if (transport == ANCHOR_APIPE) {
      if (anypoll_pipe(back) != 0)
        bench_die("anypoll_pipe");
    } else {
      bench_pipe(back, 4096);
    }
    o->l = anchor_link_pipe(back);
  }
  o->p.fd = anchor_link_fd(o->l);
  o->p.events = POLLIN;
  if (how == SET || how == SET_ASSOC) {
    /* ANYPOLL_ASSOCIATE: the program's leave to associate the socket with
     * the set's port (a zero-byte receive instead of an AFD poll on
     * Windows; no effect elsewhere). Its own row, beside the default. */
    o->p.events = (short)POLLIN;
    o->set = anypoll_set_new();
    if (o->set == NULL ||
        anypoll_set_add(o->set, o->p.fd,
                        POLLIN | (how == SET_ASSOC ? ANYPOLL_ASSOCIATE : 0u),
                        &o->p) != 0)
      bench_die("anypoll_set_add");
  }
#ifndef _WIN32
  if (how == EPOLL) {
    struct epoll_event ev = { .events = EPOLLIN };
    o->ep = epoll_create1(EPOLL_CLOEXEC);
    if (o->ep < 0 || epoll_ctl(o->ep, EPOLL_CTL_ADD, o->p.fd, &ev) != 0)
      bench_die("epoll");
  }
#endif
  return o;
}

static void own_trip(void *ctx) {
  struct own *o = ctx;
  /* Read into a buffer, as a program reads (and as libuv reads into the
   * one it allocates): the count says whether the pipe was left empty. */
  unsigned char b[64];
  anchor_ping(o->l);
  if (o->how == POLL) {
    if (anypoll_poll(&o->p, 1, -1) != 1)
      bench_die("anypoll_poll");
  } else if (o->how == SET || o->how == SET_ASSOC) {
    if (bench_set_wait(o->set, &o->p, 1) != 1)
      bench_die("anypoll_set_wait");
  }
#ifndef _WIN32
  if (o->how == EPOLL) {
    struct epoll_event ev[8];
    if (epoll_wait(o->ep, ev, 8, -1) != 1)
      bench_die("epoll_wait");
  }
#endif
  long n;
  if (o->transport == ANCHOR_TCP)
    n = bench_recv(o->p.fd, b, sizeof b);
  else if (o->transport == ANCHOR_APIPE)
    n = bench_anypoll_read(o->p.fd, b, sizeof b);
  else
    n = bench_read(o->p.fd, b, sizeof b);
  if (n != 1)
    bench_die("read");
}

static void *open_blocking(int t) { return own_open(t, BLOCKING); }
static void *open_poll(int t) { return own_open(t, POLL); }
static void *open_set(int t) { return own_open(t, SET); }
static void *open_set_assoc(int t) { return own_open(t, SET_ASSOC); }
#ifndef _WIN32
static void *open_epoll(int t) { return own_open(t, EPOLL); }
#endif

int anchors_anypoll_rows(int transport, struct anchor_row *out) {
  int n = 0;
  out[n++] = (struct anchor_row){ transport, "blocking", open_blocking,
                                  own_trip };
  out[n++] = (struct anchor_row){ transport, "anypoll_poll", open_poll,
                                  own_trip };
  out[n++] = (struct anchor_row){ transport, "anypoll set", open_set,
                                  own_trip };
  if (transport == ANCHOR_TCP)
    out[n++] = (struct anchor_row){ transport, "anypoll set ASSOCIATE",
                                    open_set_assoc, own_trip };
#ifndef _WIN32
  out[n++] = (struct anchor_row){ transport, "raw epoll_wait", open_epoll,
                                  own_trip };
#endif
  return n;
}
