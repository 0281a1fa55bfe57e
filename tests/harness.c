/* SPDX-License-Identifier: MIT */
/* The platform-independent part of the test harness. */
#include "test.h"
#include "set.h"

int tp_backend = ANYPOLL_BACKEND_DEFAULT;
const char *tp_set_backend = NULL;
const char *tp_spawn_mode = NULL;

anypoll_set *tp_set_new(void) {
  anypoll_set *set = tp_set_backend == NULL
                         ? anypoll_set_new()
                         : anypoll__set_new_named(tp_set_backend);
  ASSERT(set != NULL);
  return set;
}

const char *tp_set_backend_name(void) {
  return tp_set_backend == NULL ? anypoll__set_default_backend.name
                                : tp_set_backend;
}

int tp_poll(struct pollfd *fds, anypoll_nfds_t nfds, int timeout_ms) {
  return anypoll_poll_with(tp_backend, fds, nfds, timeout_ms);
}

void tp_pfd(struct pollfd *p, int fd, short events) {
  p->fd = fd;
  p->events = events;
  p->revents = (short)0x5a5a; /* must be overwritten */
}

void tp_poll_forever(void *arg) {
  struct tp_forever *f = arg;
  struct pollfd fd;
  tp_pfd(&fd, f->fd, POLLIN);
  f->result = tp_poll(&fd, 1, -1);
  f->revents = fd.revents;
}

static void later_main(void *arg) {
  struct tp_later *l = arg;
  tp_sleep_ms(l->delay_ms);
  switch (l->action) {
  case TP_WRITE_BYTE:
    ASSERT_EQ(tp_write(l->fd, "w", 1), 1);
    break;
  case TP_SEND_BYTE:
    ASSERT_EQ(tp_send(l->fd, "s", 1), 1);
    break;
  case TP_CLOSE_FD:
    tp_close(l->fd);
    break;
  case TP_CLOSE_EARLY:
    tp_close_early(l->fd);
    break;
  case TP_SHUTDOWN_WR:
    tp_shutdown_wr(l->fd);
    break;
  case TP_CONNECT_TO:
    tp_close(tp_tcp_connect_nb(l->fd));
    break;
  case TP_KILL_CHILD:
    tp_child_kill(l->child);
    break;
  }
}

tp_thread *tp_after(struct tp_later *l, int fd, int delay_ms,
                    enum tp_action a) {
  l->fd = fd;
  l->delay_ms = delay_ms;
  l->action = a;
  l->child = NULL;
  return tp_thread_start(later_main, l);
}

tp_thread *tp_kill_after(struct tp_later *l, tp_child *c, int delay_ms) {
  l->fd = -1;
  l->delay_ms = delay_ms;
  l->action = TP_KILL_CHILD;
  l->child = c;
  return tp_thread_start(later_main, l);
}
