/* SPDX-License-Identifier: MIT */
/* The conformance matrix: every descriptor kind and state of cases.h, polled
 * through one backend, compared with what Linux's own poll() answered.
 *
 *   matrix --generate [FILE]      run against Linux poll(), write reference
 *   matrix --backend NAME [--console] [--case NAME]
 *          [--reference FILE] [--deviations FILE]
 *   matrix --list
 *
 * Built as matrix_compat (MATRIX_COMPAT, tests/compat/), the same table runs
 * through poll() of the gnulib-ABI pair dist/compat/poll.{c,h}: this file is
 * then a program written against that poll.h, its struct pollfd and POLL*
 * values, and --backend names the library's default backend, whose
 * reference and deviations the pair must match.
 *
 * One line per case (ok / FAIL name: got X expected Y), then exactly
 * "N passed, N failed"; the exit status is non-zero on any failure. A result
 * that differs from Linux passes only if deviations.txt lists that very
 * result for this platform and backend (docs/deviations.md says why); a
 * listed deviation that no longer occurs fails, so the list cannot rot.
 *
 * Results are symbolic (IN, OUT, PRI, ERR, HUP, NVAL) so that one reference
 * serves every platform: on Windows POLLIN is POLLRDNORM|POLLRDBAND, and a
 * revents with only one of the two shows up as a raw hex value. */
#ifdef MATRIX_COMPAT
/* First, as git's and gnulib's programs have it before their own code. */
#  include MATRIX_COMPAT_HEADER
/* tp_poll and tp_pfd take the library's struct pollfd (Winsock's on
 * Windows); these take poll.h's, and test.h declares them in their place. */
#  define tp_poll matrix_compat_poll
#  define tp_pfd matrix_compat_pfd
#endif
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#ifndef _WIN32
#  include <sys/resource.h>
#  include <sys/utsname.h>
#endif

#include "test.h"

#ifdef MATRIX_COMPAT
int matrix_compat_poll(struct pollfd *fds, anypoll_nfds_t nfds, int timeout) {
  return poll(fds, nfds, timeout);
}

void matrix_compat_pfd(struct pollfd *p, int fd, short events) {
  p->fd = fd;
  p->events = events;
  p->revents = (short)0x5a5a; /* must be overwritten */
}
#endif

#ifndef MATRIX_DATA_DIR
#  define MATRIX_DATA_DIR "."
#endif

#ifdef _WIN32
#  define PLATFORM "windows"
#else
#  define PLATFORM "linux"
#endif

/* E_BANDS: also ask POLLRDNORM, POLLRDBAND, POLLWRNORM and POLLWRBAND,
 * one at a time (four more cases). */
enum { E_IN = 1, E_OUT = 2, E_PRI = 4, E_BANDS = 8 };
enum { F_TTY = 1 };

/* How long a state change on a socket may take to reach the other end. */
#define SETTLE_MS 3000

/* ---- Results ------------------------------------------------------------ */

struct res {
  char text[256];
};

static void res_add(struct res *r, const char *fmt, ...) {
  size_t len = strlen(r->text);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->text + len, sizeof r->text - len, fmt, ap);
  va_end(ap);
}

/* Winsock's POLLIN is POLLRDNORM | POLLRDBAND, and its POLLOUT is
 * POLLWRNORM, so on Windows a bit has two names where Linux has two bits.
 * The names are tried in order, a composite name first: POLLIN shows as IN
 * on both. A case that asked POLLWRNORM alone names that bit WRNORM (see
 * name_wrnorm), as Linux's answer does. */
static const struct {
  const char *name;
  short bits;
} symbols[] = {
  { "IN", POLLIN },         { "PRI", POLLPRI },       { "OUT", POLLOUT },
  { "ERR", POLLERR },       { "HUP", POLLHUP },       { "NVAL", POLLNVAL },
  { "RDNORM", POLLRDNORM }, { "RDBAND", POLLRDBAND }, { "WRNORM", POLLWRNORM },
  { "WRBAND", POLLWRBAND },
};
#define SYMBOL_COUNT (sizeof symbols / sizeof symbols[0])

/* Set while a case that asked POLLWRNORM alone runs. */
static int name_wrnorm;

static void res_revents(struct res *r, short revents) {
  unsigned left = (unsigned short)revents;
  if (left == 0) {
    res_add(r, " 0");
    return;
  }
  const char *sep = " ";
  if (name_wrnorm && (left & (unsigned short)POLLWRNORM) != 0) {
    res_add(r, "%sWRNORM", sep);
    sep = "+";
    left &= ~(unsigned short)POLLWRNORM;
  }
  for (size_t i = 0; i < SYMBOL_COUNT; i++) {
    unsigned b = (unsigned short)symbols[i].bits;
    if ((left & b) == b) {
      res_add(r, "%s%s", sep, symbols[i].name);
      sep = "+";
      left &= ~b;
    }
  }
  if (left != 0)
    res_add(r, "%s0x%x", sep, left);
}

static const char *errno_name(int e) {
  switch (e) {
  case EFAULT: return "EFAULT";
  case EINVAL: return "EINVAL";
  case EINTR: return "EINTR";
  case ENOMEM: return "ENOMEM";
  case EAGAIN: return "EAGAIN";
  case EBADF: return "EBADF";
  default: return NULL;
  }
}

/* "ret rev rev ..." or "-1 ERRNO". */
static void res_call(struct res *r, int ret, int err, const struct pollfd *fds,
                     int n) {
  if (ret < 0) {
    const char *name = errno_name(err);
    if (name != NULL)
      res_add(r, "-1 %s", name);
    else
      res_add(r, "-1 errno%d", err);
    return;
  }
  res_add(r, "%d", ret);
  for (int i = 0; i < n; i++)
    res_revents(r, fds[i].revents);
}

static int poll_into(struct res *r, struct pollfd *fds, anypoll_nfds_t n,
                     int timeout) {
  errno = 0;
  int ret = tp_poll(fds, n, timeout);
  res_call(r, ret, errno, fds, (int)n);
  return ret;
}

/* A positive timeout must never end the call early. */
static void require_waited(struct res *r, double t0, int ms) {
  double took = tp_now_ms() - t0;
  if (took < ms)
    res_add(r, " early-after-%.1fms", took);
}

/* A call with something ready must not wait for its timeout. */
static void require_prompt(struct res *r, double t0, int ms) {
  double took = tp_now_ms() - t0;
  if (took >= ms)
    res_add(r, " waited-the-timeout");
}

/* ---- Fixtures ----------------------------------------------------------- */

struct fx {
  int fd;       /* the descriptor polled */
  int keep[8];  /* closed afterwards */
  int nkeep;
  int terminal; /* tp_terminal_close afterwards */
};

static int keep(struct fx *fx, int fd) {
  fx->keep[fx->nkeep++] = fd;
  return fd;
}

static void pipe_pair(struct fx *fx, int p[2]) {
  tp_pipe(p);
  keep(fx, p[0]);
  keep(fx, p[1]);
}

/* Closes a descriptor that fx also keeps, so that teardown skips it. */
static void close_kept(struct fx *fx, int fd) {
  for (int i = 0; i < fx->nkeep; i++)
    if (fx->keep[i] == fd)
      fx->keep[i] = -1;
  tp_close(fd);
}

static void put(int fd, const char *s) {
  ASSERT_EQ(tp_write(fd, s, strlen(s)), (long)strlen(s));
}

static void sendstr(int fd, const char *s) {
  ASSERT_EQ(tp_send(fd, s, strlen(s)), (long)strlen(s));
}

static void settle(int fd) {
  ASSERT(tp_wait_socket(fd, SETTLE_MS));
  /* A close right after a send arrives as two segments: the first makes
   * the socket readable, the second must have landed too. */
  tp_sleep_ms(5);
}

static int fx_pipe_r_empty(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  fx->fd = p[0];
  return 0;
}

static int fx_pipe_r_data(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  put(p[1], "abc");
  fx->fd = p[0];
  return 0;
}

static int fx_pipe_r_full(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  ASSERT_GT(tp_fill_pipe(p[1]), 0);
  fx->fd = p[0];
  return 0;
}

static int fx_pipe_r_writer_closed(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  close_kept(fx, p[1]);
  fx->fd = p[0];
  return 0;
}

static int fx_pipe_r_writer_closed_data(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  put(p[1], "abc");
  close_kept(fx, p[1]);
  fx->fd = p[0];
  return 0;
}

static int fx_pipe_w_empty(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  fx->fd = p[1];
  return 0;
}

static int fx_pipe_w_data(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  put(p[1], "abc");
  fx->fd = p[1];
  return 0;
}

static int fx_pipe_w_full(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  ASSERT_GT(tp_fill_pipe(p[1]), 0);
  fx->fd = p[1];
  return 0;
}

static int fx_pipe_w_reader_closed(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  close_kept(fx, p[0]);
  fx->fd = p[1];
  return 0;
}

static int fx_pipe_w_reader_closed_full(struct fx *fx) {
  int p[2];
  pipe_pair(fx, p);
  ASSERT_GT(tp_fill_pipe(p[1]), 0);
  close_kept(fx, p[0]);
  fx->fd = p[1];
  return 0;
}

/* A connected pair: s[0] is polled, s[1] is the peer. */
static void tcp_pair(struct fx *fx, int s[2]) {
  tp_tcp_pair(s);
  keep(fx, s[0]);
  keep(fx, s[1]);
  fx->fd = s[0];
}

static int fx_tcp_idle(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  return 0;
}

static int fx_tcp_data(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  sendstr(s[1], "abc");
  settle(s[0]);
  return 0;
}

static int fx_tcp_recv_full(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  ASSERT_GT(tp_fill_socket(s[1]), 0);
  settle(s[0]);
  return 0;
}

static int fx_tcp_send_full(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  ASSERT_GT(tp_fill_socket(s[0]), 0);
  settle(s[1]);
  return 0;
}

static int fx_tcp_peer_shut_wr(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  tp_shutdown_wr(s[1]);
  settle(s[0]);
  return 0;
}

static int fx_tcp_peer_shut_wr_data(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  sendstr(s[1], "abc");
  tp_shutdown_wr(s[1]);
  settle(s[0]);
  return 0;
}

static int fx_tcp_peer_closed(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  close_kept(fx, s[1]);
  settle(s[0]);
  return 0;
}

static int fx_tcp_peer_closed_data(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  sendstr(s[1], "abc");
  close_kept(fx, s[1]);
  settle(s[0]);
  return 0;
}

static int fx_tcp_peer_reset(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  fx->keep[--fx->nkeep] = -1;
  tp_close_reset(s[1]);
  settle(s[0]);
  return 0;
}

static int fx_tcp_peer_reset_data(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  sendstr(s[1], "abc");
  settle(s[0]);
  fx->keep[--fx->nkeep] = -1;
  tp_close_reset(s[1]);
  tp_sleep_ms(5);
  return 0;
}

static int fx_tcp_oob(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  ASSERT_EQ(tp_send_oob(s[1], "!", 1), 1);
  settle(s[0]);
  return 0;
}

static int fx_tcp_oob_data(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  sendstr(s[1], "abc");
  ASSERT_EQ(tp_send_oob(s[1], "!", 1), 1);
  settle(s[0]);
  return 0;
}

static int fx_tcp_self_shut_wr(struct fx *fx) {
  int s[2];
  tcp_pair(fx, s);
  tp_shutdown_wr(s[0]);
  settle(s[1]);
  return 0;
}

static int fx_tcp_listen_pending(struct fx *fx) {
  int port;
  fx->fd = keep(fx, tp_tcp_listener(&port));
  keep(fx, tp_tcp_connect_nb(port));
  settle(fx->fd);
  return 0;
}

static int fx_tcp_listen_idle(struct fx *fx) {
  int port;
  fx->fd = keep(fx, tp_tcp_listener(&port));
  return 0;
}

static int fx_tcp_connecting(struct fx *fx) {
  /* A listener with backlog 0 takes one connection into its accept queue
   * and then drops SYNs: the second connect stays in progress. */
  int port;
  int l = keep(fx, tp_tcp_listener_backlog(&port, 0));
  keep(fx, tp_tcp_connect_nb(port));
  settle(l);
  fx->fd = keep(fx, tp_tcp_connect_nb(port));
  tp_sleep_ms(5);
  return 0;
}

static int fx_tcp_refused(struct fx *fx) {
  int port;
  int l = tp_tcp_listener(&port);
  tp_close(l);
  fx->fd = keep(fx, tp_tcp_connect_nb(port));
  settle(fx->fd);
  return 0;
}

static int fx_tcp_unconnected(struct fx *fx) {
  fx->fd = keep(fx, tp_tcp_socket());
  return 0;
}

/* UDP: a bound socket connected to itself, idle or with a datagram. */
static int fx_udp_idle(struct fx *fx) {
  fx->fd = keep(fx, tp_udp_self());
  return 0;
}

static int fx_udp_data(struct fx *fx) {
  fx->fd = keep(fx, tp_udp_self());
  sendstr(fx->fd, "abc");
  settle(fx->fd);
  return 0;
}

static int unix_pair(struct fx *fx, int u[2]) {
  if (tp_unix_pair(u) != 0)
    return -1;
  keep(fx, u[0]);
  keep(fx, u[1]);
  fx->fd = u[0];
  return 0;
}

static int fx_unix_idle(struct fx *fx) {
  int u[2];
  return unix_pair(fx, u);
}

static int fx_unix_data(struct fx *fx) {
  int u[2];
  if (unix_pair(fx, u) != 0)
    return -1;
  sendstr(u[1], "abc");
  settle(u[0]);
  return 0;
}

static int fx_unix_send_full(struct fx *fx) {
  int u[2];
  if (unix_pair(fx, u) != 0)
    return -1;
  ASSERT_GT(tp_fill_socket(u[0]), 0);
  return 0;
}

static int fx_unix_peer_shut_wr(struct fx *fx) {
  int u[2];
  if (unix_pair(fx, u) != 0)
    return -1;
  tp_shutdown_wr(u[1]);
  settle(u[0]);
  return 0;
}

static int fx_unix_peer_closed(struct fx *fx) {
  int u[2];
  if (unix_pair(fx, u) != 0)
    return -1;
  close_kept(fx, u[1]);
  settle(u[0]);
  return 0;
}

static int fx_unix_peer_closed_data(struct fx *fx) {
  int u[2];
  if (unix_pair(fx, u) != 0)
    return -1;
  sendstr(u[1], "abc");
  close_kept(fx, u[1]);
  settle(u[0]);
  return 0;
}

static int fx_file_rw(struct fx *fx) {
  fx->fd = keep(fx, tp_temp_file(0));
  return 0;
}

static int fx_file_readonly(struct fx *fx) {
  fx->fd = keep(fx, tp_temp_file(1));
  return 0;
}

static int fx_null_device(struct fx *fx) {
  fx->fd = keep(fx, tp_null_device());
  return 0;
}

static int terminal(struct fx *fx, int *in, int *out) {
  if (tp_terminal_open(in, out) != 0)
    return -1;
  fx->terminal = 1;
  return 0;
}

static int fx_tty_in_empty(struct fx *fx) {
  int in, out;
  if (terminal(fx, &in, &out) != 0)
    return -1;
  fx->fd = in;
  return 0;
}

static int fx_tty_in_typed(struct fx *fx) {
  int in, out;
  if (terminal(fx, &in, &out) != 0)
    return -1;
  tp_terminal_type();
  fx->fd = in;
  return 0;
}

static int fx_tty_out(struct fx *fx) {
  int in, out;
  if (terminal(fx, &in, &out) != 0)
    return -1;
  fx->fd = out;
  return 0;
}

static int fx_fd_closed(struct fx *fx) {
  fx->fd = tp_unused_fd();
  return 0;
}

static int fx_fd_closed_high(struct fx *fx) {
  fx->fd = 5000; /* beyond FD_SETSIZE, and never opened by this program */
  return 0;
}

static int fx_fd_negative(struct fx *fx) {
  fx->fd = -1;
  return 0;
}

static int fx_fd_negative_other(struct fx *fx) {
  fx->fd = -77;
  return 0;
}

static int open_numbered(struct fx *fx, int target) {
  int p[2];
  pipe_pair(fx, p);
  put(p[1], "abc");
  if (tp_dup_to(p[0], target) != target)
    return -1;
  fx->fd = keep(fx, target);
  return 0;
}

static int fx_fd_open_1023(struct fx *fx) {
  return open_numbered(fx, 1023);
}

static int fx_fd_open_high(struct fx *fx) {
  return open_numbered(fx, 1024);
}

static void teardown(struct fx *fx) {
  for (int i = 0; i < fx->nkeep; i++)
    if (fx->keep[i] >= 0)
      tp_close(fx->keep[i]);
  if (fx->terminal)
    tp_terminal_close();
}

/* ---- Whole-call rules --------------------------------------------------- */

static void wc_count_mixed(struct res *r) {
  int a[2], b[2];
  tp_pipe(a);
  tp_pipe(b);
  put(a[1], "abc");
  struct pollfd f[5];
  tp_pfd(&f[0], a[0], POLLIN);
  tp_pfd(&f[1], b[0], POLLIN);
  tp_pfd(&f[2], tp_unused_fd(), POLLIN);
  tp_pfd(&f[3], -1, POLLIN);
  tp_pfd(&f[4], b[1], POLLOUT);
  poll_into(r, f, 5, 0);
  tp_close(a[0]), tp_close(a[1]), tp_close(b[0]), tp_close(b[1]);
}

static void wc_revents_cleared(struct res *r) {
  int p[2], s[2];
  tp_pipe(p);
  tp_tcp_pair(s);
  struct pollfd f[4];
  tp_pfd(&f[0], p[0], POLLIN); /* tp_pfd leaves garbage in revents */
  tp_pfd(&f[1], s[0], POLLIN | POLLPRI);
  tp_pfd(&f[2], p[0], POLLPRI);
  tp_pfd(&f[3], -1, POLLIN | POLLOUT);
  poll_into(r, f, 4, 0);
  tp_close(p[0]), tp_close(p[1]), tp_close(s[0]), tp_close(s[1]);
}

static void wc_events_zero_all(struct res *r) {
  int p[2], s[2];
  tp_pipe(p);
  tp_tcp_pair(s);
  put(p[1], "abc");
  sendstr(s[1], "abc");
  settle(s[0]);
  int file = tp_temp_file(0);
  struct pollfd f[4];
  tp_pfd(&f[0], p[0], 0);
  tp_pfd(&f[1], s[0], 0);
  tp_pfd(&f[2], file, 0);
  tp_pfd(&f[3], p[1], 0);
  poll_into(r, f, 4, 0);
  tp_close(p[0]), tp_close(p[1]), tp_close(s[0]), tp_close(s[1]);
  tp_close(file);
}

static void wc_dup_same_events(struct res *r) {
  int p[2];
  tp_pipe(p);
  put(p[1], "abc");
  struct pollfd f[2];
  tp_pfd(&f[0], p[0], POLLIN);
  tp_pfd(&f[1], p[0], POLLIN);
  poll_into(r, f, 2, 0);
  tp_close(p[0]), tp_close(p[1]);
}

static void wc_dup_different_events(struct res *r) {
  int s[2];
  tp_tcp_pair(s);
  sendstr(s[1], "abc");
  settle(s[0]);
  struct pollfd f[5];
  tp_pfd(&f[0], s[0], POLLIN);
  tp_pfd(&f[1], s[0], POLLOUT);
  tp_pfd(&f[2], s[0], POLLPRI);
  tp_pfd(&f[3], s[0], POLLIN | POLLOUT);
  tp_pfd(&f[4], s[0], 0);
  poll_into(r, f, 5, 0);
  tp_close(s[0]), tp_close(s[1]);
}

static void wc_dup_closed(struct res *r) {
  int fd = tp_unused_fd();
  struct pollfd f[2];
  tp_pfd(&f[0], fd, POLLIN);
  tp_pfd(&f[1], fd, 0);
  poll_into(r, f, 2, 0);
}

static void wc_mixed_kinds(struct res *r) {
  int p[2], s[2], port;
  tp_pipe(p);
  tp_tcp_pair(s);
  put(p[1], "abc");
  sendstr(s[1], "abc");
  settle(s[0]);
  int file = tp_temp_file(0), null = tp_null_device();
  int l = tp_tcp_listener(&port);
  struct pollfd f[6];
  tp_pfd(&f[0], p[0], POLLIN);
  tp_pfd(&f[1], s[0], POLLIN | POLLOUT);
  tp_pfd(&f[2], file, POLLIN);
  tp_pfd(&f[3], null, POLLOUT);
  tp_pfd(&f[4], l, POLLIN);
  tp_pfd(&f[5], p[1], POLLOUT);
  poll_into(r, f, 6, 0);
  tp_close(p[0]), tp_close(p[1]), tp_close(s[0]), tp_close(s[1]);
  tp_close(file), tp_close(null), tp_close(l);
}

static void wc_nfds_zero(struct res *r) {
  struct pollfd f[1];
  tp_pfd(&f[0], -1, POLLIN);
  poll_into(r, f, 0, 0);
}

static void wc_nfds_zero_timeout(struct res *r) {
  struct pollfd f[1];
  tp_pfd(&f[0], -1, POLLIN);
  double t0 = tp_now_ms();
  poll_into(r, f, 0, 30);
  require_waited(r, t0, 30);
}

static void wc_null_nfds_zero(struct res *r) {
  poll_into(r, NULL, 0, 0);
}

static void wc_null_nfds_one(struct res *r) {
  poll_into(r, NULL, 1, 0);
}

static void wc_nfds_over_limit(struct res *r) {
  /* A whole array of valid (ignored) entries: the count alone is wrong. */
  unsigned long n = tp_nfds_limit() + 1;
  struct pollfd *f = malloc(n * sizeof *f);
  ASSERT(f != NULL);
  for (unsigned long i = 0; i < n; i++)
    tp_pfd(&f[i], -1, POLLIN);
  errno = 0;
  int ret = tp_poll(f, (anypoll_nfds_t)n, 0);
  res_call(r, ret, errno, NULL, 0);
  free(f);
}

static void wc_nfds_at_limit(struct res *r) {
  unsigned long n = tp_nfds_limit();
  struct pollfd *f = malloc(n * sizeof *f);
  ASSERT(f != NULL);
  for (unsigned long i = 0; i < n; i++)
    tp_pfd(&f[i], -1, POLLIN);
  int p[2];
  tp_pipe(p);
  put(p[1], "abc");
  tp_pfd(&f[n - 1], p[0], POLLIN);
  errno = 0;
  int ret = tp_poll(f, (anypoll_nfds_t)n, 0);
  /* Only the last entry is shown; every other must be 0. */
  res_call(r, ret, errno, &f[n - 1], ret < 0 ? 0 : 1);
  unsigned long nonzero = 0;
  for (unsigned long i = 0; ret >= 0 && i + 1 < n; i++)
    nonzero += f[i].revents != 0;
  if (nonzero)
    res_add(r, " and-%lu-ignored-entries-nonzero", nonzero);
  tp_close(p[0]), tp_close(p[1]);
  free(f);
}

static void wc_timeout_zero_nothing(struct res *r) {
  int p[2];
  tp_pipe(p);
  struct pollfd f[1];
  tp_pfd(&f[0], p[0], POLLIN);
  poll_into(r, f, 1, 0);
  tp_close(p[0]), tp_close(p[1]);
}

static void wc_timeout_positive_nothing(struct res *r) {
  int p[2];
  tp_pipe(p);
  struct pollfd f[2];
  tp_pfd(&f[0], p[0], POLLIN);
  tp_pfd(&f[1], p[0], POLLPRI);
  double t0 = tp_now_ms();
  poll_into(r, f, 2, 50);
  require_waited(r, t0, 50);
  tp_close(p[0]), tp_close(p[1]);
}

static void wc_timeout_positive_negative_fds(struct res *r) {
  struct pollfd f[2];
  tp_pfd(&f[0], -1, POLLIN);
  tp_pfd(&f[1], -3, POLLOUT);
  double t0 = tp_now_ms();
  poll_into(r, f, 2, 30);
  require_waited(r, t0, 30);
}

static void ready_pipe_call(struct res *r, short events, int timeout) {
  int p[2];
  tp_pipe(p);
  put(p[1], "abc");
  struct pollfd f[1];
  tp_pfd(&f[0], p[0], events);
  double t0 = tp_now_ms();
  poll_into(r, f, 1, timeout);
  if (timeout > 0)
    require_prompt(r, t0, timeout);
  tp_close(p[0]), tp_close(p[1]);
}

static void wc_timeout_positive_ready(struct res *r) {
  ready_pipe_call(r, POLLIN, 10000);
}

static void wc_timeout_positive_closed_fd(struct res *r) {
  struct pollfd f[1];
  tp_pfd(&f[0], tp_unused_fd(), POLLIN);
  double t0 = tp_now_ms();
  poll_into(r, f, 1, 10000);
  require_prompt(r, t0, 10000);
}

static void wc_timeout_minus1_ready(struct res *r) {
  ready_pipe_call(r, POLLIN, -1);
}

static void wc_timeout_negative_other_ready(struct res *r) {
  ready_pipe_call(r, POLLIN | POLLOUT, -1000);
}

/* Something happens on another thread after a while. */
enum act { ACT_WRITE, ACT_CLOSE, ACT_SEND };
struct later {
  int fd;
  enum act act;
};

static void later_main(void *arg) {
  struct later *l = arg;
  tp_sleep_ms(30);
  switch (l->act) {
  case ACT_WRITE:
    put(l->fd, "x");
    break;
  case ACT_CLOSE:
    tp_close(l->fd);
    break;
  case ACT_SEND:
    sendstr(l->fd, "x");
    break;
  }
}

static void wakeup_call(struct res *r, int tcp, enum act act, int timeout) {
  int p[2];
  if (tcp)
    tp_tcp_pair(p);
  else
    tp_pipe(p);
  struct later l = { p[1], act };
  struct pollfd f[2];
  tp_pfd(&f[0], p[0], POLLIN);
  tp_pfd(&f[1], p[0], POLLPRI);
  tp_thread *t = tp_thread_start(later_main, &l);
  double t0 = tp_now_ms();
  poll_into(r, f, 2, timeout);
  if (timeout > 0)
    require_prompt(r, t0, timeout);
  tp_thread_join(t);
  tp_close(p[0]);
  if (act != ACT_CLOSE)
    tp_close(p[1]);
}

static void wc_timeout_positive_wakeup_pipe(struct res *r) {
  wakeup_call(r, 0, ACT_WRITE, 10000);
}

static void wc_timeout_positive_wakeup_hup(struct res *r) {
  wakeup_call(r, 0, ACT_CLOSE, 10000);
}

static void wc_timeout_positive_wakeup_tcp(struct res *r) {
  wakeup_call(r, 1, ACT_SEND, 10000);
}

static void wc_timeout_minus1_wakeup_pipe(struct res *r) {
  wakeup_call(r, 0, ACT_WRITE, -1);
}

static void wc_timeout_minus1_wakeup_tcp(struct res *r) {
  wakeup_call(r, 1, ACT_SEND, -1);
}

static void wc_timeout_positive_unasked_data(struct res *r) {
  /* Data nobody asked for must neither be reported nor end the wait. */
  int p[2];
  tp_pipe(p);
  put(p[1], "abc");
  struct pollfd f[1];
  tp_pfd(&f[0], p[0], POLLOUT);
  double t0 = tp_now_ms();
  poll_into(r, f, 1, 50);
  require_waited(r, t0, 50);
  tp_close(p[0]), tp_close(p[1]);
}

/* A signal (POSIX) or user APC (Windows) ends the wait with EINTR. */
static void interrupted_call(struct res *r, int timeout) {
  int p[2];
  tp_pipe(p);
  struct pollfd f[1];
  tp_pfd(&f[0], p[0], POLLIN);
  tp_thread *t = tp_interrupt_after(30);
  double t0 = tp_now_ms();
  poll_into(r, f, 1, timeout);
  if (timeout > 0)
    require_prompt(r, t0, timeout);
  tp_interrupt_join(t);
  tp_close(p[0]), tp_close(p[1]);
}

static void wc_interrupted_positive(struct res *r) {
  interrupted_call(r, 10000);
}

static void wc_interrupted_minus1(struct res *r) {
  interrupted_call(r, -1);
}

/* ---- The table ---------------------------------------------------------- */

struct fixture {
  const char *name;
  int (*setup)(struct fx *);
  int mask;
  int flags;
};

static const struct fixture fixtures[] = {
#define FIXTURE(name, setup, mask, flags) { #name, fx_##setup, mask, flags },
#define CALL(name, fn)
#include "cases.h"
#undef FIXTURE
#undef CALL
};
#define FIXTURE_COUNT (sizeof fixtures / sizeof fixtures[0])

static const struct {
  const char *name;
  void (*fn)(struct res *);
} calls[] = {
#define FIXTURE(name, setup, mask, flags)
#define CALL(name, fn) { #name, wc_##fn },
#include "cases.h"
#undef FIXTURE
#undef CALL
};
#define CALL_COUNT (sizeof calls / sizeof calls[0])

static const char *const event_labels[8] = {
  "none", "IN", "OUT", "IN+OUT", "PRI", "IN+PRI", "OUT+PRI", "IN+OUT+PRI"
};

static const struct {
  const char *label;
  short events;
} bands[4] = {
  { "RDNORM", POLLRDNORM },
  { "RDBAND", POLLRDBAND },
  { "WRNORM", POLLWRNORM },
  { "WRBAND", POLLWRBAND },
};

static short events_of(int e) {
  return (short)(((e & E_IN) ? POLLIN : 0) | ((e & E_OUT) ? POLLOUT : 0) |
                 ((e & E_PRI) ? POLLPRI : 0));
}

/* A case is one fixture with one events subset, or one call. */
struct case_ref {
  char name[96];
  const struct fixture *fx;
  short events;
  int wrnorm; /* asks POLLWRNORM alone */
  void (*call)(struct res *);
};

static struct case_ref *cases;
static size_t case_count;

static void build_cases(void) {
  size_t cap = FIXTURE_COUNT * 12 + CALL_COUNT;
  cases = calloc(cap, sizeof *cases);
  ASSERT(cases != NULL);
  for (size_t i = 0; i < FIXTURE_COUNT; i++) {
    for (int e = 0; e < 8; e++) {
      if ((e & ~fixtures[i].mask & 7) != 0)
        continue;
      struct case_ref *c = &cases[case_count++];
      snprintf(c->name, sizeof c->name, "%s/%s", fixtures[i].name,
               event_labels[e]);
      c->fx = &fixtures[i];
      c->events = events_of(e);
    }
    for (int b = 0; b < 4 && (fixtures[i].mask & E_BANDS); b++) {
      struct case_ref *c = &cases[case_count++];
      snprintf(c->name, sizeof c->name, "%s/%s", fixtures[i].name,
               bands[b].label);
      c->fx = &fixtures[i];
      c->events = bands[b].events;
      c->wrnorm = bands[b].events == POLLWRNORM;
    }
  }
  for (size_t i = 0; i < CALL_COUNT; i++) {
    struct case_ref *c = &cases[case_count++];
    snprintf(c->name, sizeof c->name, "call/%s", calls[i].name);
    c->call = calls[i].fn;
  }
}

/* The case running, named when a set-up assertion ends the program. */
static const char *current_case;

static void name_failed_case(void) {
  if (current_case != NULL)
    printf("FAIL %s: the set-up failed (see the assertion above)\n",
           current_case);
}

static void run_case(const struct case_ref *c, struct res *r) {
  r->text[0] = '\0';
  current_case = c->name;
  if (c->call != NULL) {
    c->call(r);
    current_case = NULL;
    return;
  }
  struct fx fx;
  memset(&fx, 0, sizeof fx);
  fx.fd = -1;
  if (c->fx->setup(&fx) != 0) {
    res_add(r, "unsupported");
    teardown(&fx);
    current_case = NULL;
    return;
  }
  struct pollfd p;
  tp_pfd(&p, fx.fd, c->events);
  name_wrnorm = c->wrnorm;
  poll_into(r, &p, 1, 0);
  name_wrnorm = 0;
  teardown(&fx);
  current_case = NULL;
}

/* ---- Data files --------------------------------------------------------- */

struct entry {
  char *key;    /* deviations: the platform/backend */
  char *name;   /* case */
  char *result; /* expected (reference) or given instead (deviation) */
  char *reason;
  int used;
};

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' ||
                   s[n - 1] == '\r'))
    s[--n] = '\0';
  return s;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  ASSERT(d != NULL);
  memcpy(d, s, n);
  return d;
}

/* reference.txt: "case result..." per line. deviations.txt:
 * "platform/backend | case | result | reason" per line. '#' comments. */
static struct entry *load(const char *path, int deviations, size_t *count) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "matrix: cannot open %s\n", path);
    exit(2);
  }
  size_t cap = 64, n = 0;
  struct entry *v = malloc(cap * sizeof *v);
  ASSERT(v != NULL);
  char line[512];
  int lineno = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    lineno++;
    char *s = trim(line);
    if (*s == '\0' || *s == '#')
      continue;
    if (n == cap) {
      cap *= 2;
      v = realloc(v, cap * sizeof *v);
      ASSERT(v != NULL);
    }
    struct entry *e = &v[n];
    memset(e, 0, sizeof *e);
    if (deviations) {
      char *fields[4];
      int k = 0;
      for (char *p = s; k < 4; k++) {
        fields[k] = p;
        char *bar = k < 3 ? strchr(p, '|') : NULL;
        if (bar == NULL)
          break;
        *bar = '\0';
        p = bar + 1;
      }
      if (k != 3) {
        fprintf(stderr, "%s:%d: want 4 fields separated by |\n", path,
                lineno);
        exit(2);
      }
      e->key = dup_str(trim(fields[0]));
      e->name = dup_str(trim(fields[1]));
      e->result = dup_str(trim(fields[2]));
      e->reason = dup_str(trim(fields[3]));
    } else {
      char *sp = strchr(s, ' ');
      if (sp == NULL) {
        fprintf(stderr, "%s:%d: want \"case result\"\n", path, lineno);
        exit(2);
      }
      *sp = '\0';
      e->name = dup_str(s);
      e->result = dup_str(trim(sp + 1));
    }
    n++;
  }
  fclose(f);
  *count = n;
  return v;
}

/* A name ending in '*' matches every case it is a prefix of (a whole kind
 * of descriptor the platform lacks, say). */
static int name_matches(const char *pattern, const char *name) {
  size_t n = strlen(pattern);
  if (n > 0 && pattern[n - 1] == '*')
    return strncmp(pattern, name, n - 1) == 0;
  return strcmp(pattern, name) == 0;
}

static struct entry *find(struct entry *v, size_t n, const char *key,
                          const char *name) {
  for (size_t i = 0; i < n; i++)
    if ((key == NULL || strcmp(v[i].key, key) == 0) &&
        name_matches(v[i].name, name))
      return &v[i];
  return NULL;
}

static void unload(struct entry *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(v[i].key);
    free(v[i].name);
    free(v[i].result);
    free(v[i].reason);
  }
  free(v);
}

static const struct case_ref *case_named(const char *pattern) {
  for (size_t i = 0; i < case_count; i++)
    if (name_matches(pattern, cases[i].name))
      return &cases[i];
  return NULL;
}

/* ---- Main --------------------------------------------------------------- */

static void raise_fd_limit(void) {
#ifndef _WIN32
  /* A known soft limit (the nfds limit cases use it) that leaves room for
   * descriptor FD_SETSIZE (fd_open_high). Lowering needs no privilege. */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rlim_t want = 4096;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
      want = rl.rlim_max;
    rl.rlim_cur = want;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
#endif
}

static int generate(const char *path) {
#ifdef _WIN32
  (void)path;
  fprintf(stderr, "matrix: the reference comes from Linux poll(); generate "
                  "it on Linux\n");
  return 2;
#else
  tp_backend = ANYPOLL_BACKEND_POLL;
  FILE *out = fopen(path, "w");
  if (out == NULL) {
    perror(path);
    return 2;
  }
  struct utsname u;
  uname(&u);
  fprintf(out, "# The conformance matrix's expected results: Linux %s poll(),\n"
               "# written by `matrix --generate`; do not edit by hand.\n"
               "# case  return  revents of each entry (or errno)\n",
          u.release);
  for (size_t i = 0; i < case_count; i++) {
    struct res r;
    run_case(&cases[i], &r);
    fprintf(out, "%s %s\n", cases[i].name, r.text);
  }
  fclose(out);
  printf("%zu cases written to %s\n", case_count, path);
  return 0;
#endif
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  raise_fd_limit();
  build_cases();
  atexit(name_failed_case);
  const char *backend = NULL, *only = NULL;
  const char *ref_path = MATRIX_DATA_DIR "/reference.txt";
  const char *dev_path = MATRIX_DATA_DIR "/deviations.txt";
  int console = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--list") == 0) {
      for (size_t k = 0; k < case_count; k++)
        printf("%s\n", cases[k].name);
      return 0;
    } else if (strcmp(a, "--generate") == 0) {
      return generate(next != NULL && next[0] != '-' ? next : ref_path);
    } else if (strcmp(a, "--backend") == 0 && next != NULL) {
      backend = next, i++;
    } else if (strcmp(a, "--case") == 0 && next != NULL) {
      only = next, i++;
    } else if (strcmp(a, "--reference") == 0 && next != NULL) {
      ref_path = next, i++;
    } else if (strcmp(a, "--deviations") == 0 && next != NULL) {
      dev_path = next, i++;
    } else if (strcmp(a, "--console") == 0) {
      console = 1;
    } else {
      fprintf(stderr, "usage: matrix --generate [FILE] | --list | --backend "
                      "NAME [--console] [--case NAME] [--reference FILE] "
                      "[--deviations FILE]\n");
      return 2;
    }
  }
  if (backend == NULL) {
    fprintf(stderr, "matrix: --backend NAME or --generate\n");
    return 2;
  }
  tp_backend = anypoll_backend_from_name(backend);
  if (tp_backend < 0) {
    fprintf(stderr, "matrix: backend %s is not available here\n", backend);
    return 2;
  }
  char key[64];
  snprintf(key, sizeof key, "%s/%s", PLATFORM, backend);

  size_t nref, ndev;
  struct entry *ref = load(ref_path, 0, &nref);
  struct entry *dev = load(dev_path, 1, &ndev);

  int passed = 0, failed = 0, deviations = 0, skipped = 0;
  for (size_t i = 0; i < ndev; i++) {
    if (case_named(dev[i].name) == NULL) {
      printf("FAIL %s: deviations.txt names no case that exists\n",
             dev[i].name);
      failed++;
    }
  }
  for (size_t i = 0; i < case_count; i++) {
    const struct case_ref *c = &cases[i];
    if (only != NULL && strcmp(only, c->name) != 0)
      continue;
    /* On Windows a console exists only when the program runs under
     * script(1); those cases run as their own test (--console). */
    int tty = c->fx != NULL && (c->fx->flags & F_TTY);
#ifdef _WIN32
    if (tty != console) {
      if (tty) {
        printf("skip %s: needs a console (matrix --console)\n", c->name);
        skipped++;
      }
      continue;
    }
#else
    if (console && !tty)
      continue;
#endif
    struct entry *want = find(ref, nref, NULL, c->name);
    struct entry *d = find(dev, ndev, key, c->name);
    if (d != NULL)
      d->used = 1;
    struct res r;
    run_case(c, &r);
    if (want == NULL) {
      printf("FAIL %s: got %s, and reference.txt has no line for it\n",
             c->name, r.text);
      failed++;
    } else if (strcmp(r.text, want->result) == 0) {
      if (d != NULL) {
        printf("FAIL %s: got %s as Linux does, but deviations.txt says %s "
               "(remove the entry)\n",
               c->name, r.text, d->result);
        failed++;
      } else {
        printf("ok %s\n", c->name);
        passed++;
      }
    } else if (d != NULL && strcmp(r.text, d->result) == 0) {
      printf("ok %s: deviation: got %s, Linux gives %s (%s)\n", c->name,
             r.text, want->result, d->reason);
      passed++;
      deviations++;
    } else {
      printf("FAIL %s: got %s expected %s\n", c->name, r.text, want->result);
      if (d != NULL)
        printf("     (deviations.txt expects %s)\n", d->result);
      failed++;
    }
  }
  if (deviations > 0)
    printf("%d of the passes are documented deviations (docs/deviations.md)\n",
           deviations);
  if (skipped > 0)
    printf("%d console cases not run here, not counted\n", skipped);
  printf("%d passed, %d failed\n", passed, failed);
  unload(ref, nref);
  unload(dev, ndev);
  free(cases);
  return failed == 0 && passed > 0 ? 0 : 1;
}
