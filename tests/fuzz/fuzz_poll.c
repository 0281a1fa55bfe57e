/* SPDX-License-Identifier: MIT */
/* libFuzzer target: every input is one call of anypoll_poll_with, on a fixed
 * set of descriptors of every kind opened once at start-up, and the result
 * is checked against anypoll's contract (include/anypoll.h) and against the
 * kernel's own poll() on the same entries. Linux only; built with
 * clang -fsanitize=fuzzer,address,undefined (cmake -DANYPOLL_FUZZ=ON, preset
 * "fuzz"). A broken invariant ends the run with abort() and a message.
 *
 * Input layout (missing bytes read as 0):
 *   byte 0   backend: 0..5 the enum values, 6 and 7 unknown ones (99, -1)
 *   byte 1   shape of the call: entries from the input, nfds 0, a NULL
 *            array (nfds 0 or not), or an nfds above the limit
 *   byte 2   timeout: 0, 1 or 2 ms; negative only when the kernel says an
 *            entry is ready, so that no call can wait forever
 *   byte 3   extra parameter of the shape (which huge nfds, ...)
 *   then 3 bytes per entry: the descriptor (an index into the table below)
 *   and 16 bits of events, taken as they come.
 *
 * The descriptors never change state while the fuzzer runs (nothing reads
 * or writes them after set-up), so the kernel's poll() with timeout 0 on a
 * copy of the entries gives exactly what every backend must report. */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "anypoll.h"

#define MAX_ENTRIES 200 /* above the select backend's 64 on-stack entries */

enum {
  D_PIPE_R_DATA,      /* pipe read end, data queued, writer open */
  D_PIPE_R_EMPTY,     /* pipe read end, empty, writer open */
  D_PIPE_R_HUP,       /* pipe read end, empty, writer closed */
  D_PIPE_R_HUP_DATA,  /* pipe read end, data queued, writer closed */
  D_PIPE_W,           /* pipe write end, reader open */
  D_PIPE_W_NOREADER,  /* pipe write end, reader closed */
  D_UNIX_DATA,        /* connected AF_UNIX stream socket with data queued */
  D_UNIX_EMPTY,       /* its peer: nothing queued */
  D_UNIX_PEER_CLOSED, /* AF_UNIX stream socket whose peer has closed */
  D_TCP_DATA,         /* connected TCP socket with data queued */
  D_TCP_EMPTY,        /* its peer: nothing queued */
  D_TCP_PEER_CLOSED,  /* TCP socket whose peer has closed (CLOSE_WAIT) */
  D_LISTEN_IDLE,      /* listening TCP socket, no connection pending */
  D_LISTEN_PENDING,   /* listening TCP socket, a connection pending */
  D_DEVNULL,          /* /dev/null, read-write */
  D_FILE,             /* a regular file, read-write */
  D_PTY_EMPTY,        /* a pseudo-terminal's slave, no input */
  D_PTY_LINE,         /* another one with a line of input typed */
  D_PTY_MASTER,       /* the master of that one: the echo to read */
  D_OPEN_HIGH,        /* /dev/null again, numbered FD_SETSIZE or more */
  D_CLOSED_LOW,       /* a closed descriptor below FD_SETSIZE */
  D_CLOSED_HIGH,      /* INT_MAX, never open */
  D_NEG1,             /* negative descriptors: ignored */
  D_NEG2,
  D_NEG_MIN,
  D_COUNT
};

static int desc[D_COUNT];
static unsigned long nfds_limit;   /* RLIMIT_NOFILE soft limit */
static struct pollfd *big;         /* backs calls with nfds above the limit */
static unsigned long big_entries;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fuzz_poll: invariant broken: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

static void setup_fail(const char *what) {
  fprintf(stderr, "fuzz_poll: set-up failed: %s: %s\n", what, strerror(errno));
  exit(2);
}

static void make_pipe(int p[2]) {
  if (pipe(p) != 0)
    setup_fail("pipe");
}

static void put(int fd) {
  if (write(fd, "x", 1) != 1)
    setup_fail("write");
}

static int tcp_listener(struct sockaddr_in *addr) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0)
    setup_fail("socket");
  memset(addr, 0, sizeof *addr);
  addr->sin_family = AF_INET;
  addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof *addr;
  if (bind(l, (struct sockaddr *)addr, sizeof *addr) != 0 ||
      listen(l, 4) != 0 ||
      getsockname(l, (struct sockaddr *)addr, &len) != 0)
    setup_fail("listen");
  return l;
}

static int tcp_connect(const struct sockaddr_in *addr) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (const struct sockaddr *)addr, sizeof *addr) != 0)
    setup_fail("connect");
  return s;
}

static void tcp_pair(int s[2]) {
  struct sockaddr_in addr;
  int l = tcp_listener(&addr);
  s[0] = tcp_connect(&addr);
  s[1] = accept(l, NULL, NULL);
  if (s[1] < 0)
    setup_fail("accept");
  close(l);
}

/* Waits until the kernel reports the given bits on fd (a close's FIN, a
 * connection reaching the accept queue), so that the states are settled
 * before the first input runs. */
static void settle(int fd, short bits) {
  for (int i = 0; i < 1000; i++) {
    struct pollfd p = { fd, (short)(POLLIN | POLLOUT), 0 };
    if (poll(&p, 1, 10) >= 0 && (p.revents & bits) == bits)
      return;
  }
  fprintf(stderr, "fuzz_poll: set-up: descriptor %d never settled\n", fd);
  exit(2);
}

static int pty_slave(int *master) {
  int m = posix_openpt(O_RDWR | O_NOCTTY);
  if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0)
    setup_fail("posix_openpt");
  int s = open(ptsname(m), O_RDWR | O_NOCTTY);
  if (s < 0)
    setup_fail("open pty slave");
  *master = m;
  return s;
}

static int fd_is_open(int fd) {
  return fd >= 0 && fcntl(fd, F_GETFD) >= 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  int p[2], s[2];

  make_pipe(p);
  put(p[1]);
  desc[D_PIPE_R_DATA] = p[0]; /* the writer p[1] stays open, unlisted */

  make_pipe(p);
  desc[D_PIPE_R_EMPTY] = p[0];
  desc[D_PIPE_W] = p[1];

  make_pipe(p);
  close(p[1]);
  desc[D_PIPE_R_HUP] = p[0];

  make_pipe(p);
  put(p[1]);
  close(p[1]);
  desc[D_PIPE_R_HUP_DATA] = p[0];

  make_pipe(p);
  close(p[0]);
  desc[D_PIPE_W_NOREADER] = p[1];

  if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0)
    setup_fail("socketpair");
  put(s[1]);
  desc[D_UNIX_DATA] = s[0];
  desc[D_UNIX_EMPTY] = s[1];

  if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0)
    setup_fail("socketpair");
  close(s[1]);
  desc[D_UNIX_PEER_CLOSED] = s[0];

  tcp_pair(s);
  put(s[1]);
  desc[D_TCP_DATA] = s[0];
  desc[D_TCP_EMPTY] = s[1];
  settle(s[0], POLLIN);

  tcp_pair(s);
  close(s[1]);
  desc[D_TCP_PEER_CLOSED] = s[0];
  settle(s[0], POLLIN);

  struct sockaddr_in addr;
  desc[D_LISTEN_IDLE] = tcp_listener(&addr);
  desc[D_LISTEN_PENDING] = tcp_listener(&addr);
  tcp_connect(&addr); /* left open and unaccepted */
  settle(desc[D_LISTEN_PENDING], POLLIN);

  desc[D_DEVNULL] = open("/dev/null", O_RDWR);
  if (desc[D_DEVNULL] < 0)
    setup_fail("/dev/null");

  char path[] = "/tmp/fuzz_poll.XXXXXX";
  desc[D_FILE] = mkstemp(path);
  if (desc[D_FILE] < 0)
    setup_fail("mkstemp");
  unlink(path);
  put(desc[D_FILE]);

  int m;
  desc[D_PTY_EMPTY] = pty_slave(&m); /* the master stays open, unlisted */
  desc[D_PTY_LINE] = pty_slave(&m);
  desc[D_PTY_MASTER] = m;
  if (write(m, "x\n", 2) != 2)
    setup_fail("write pty");
  settle(desc[D_PTY_LINE], POLLIN);
  settle(desc[D_PTY_MASTER], POLLIN); /* the echo */

  /* The select backend refuses it (docs/deviations.md); poll() takes it. */
  desc[D_OPEN_HIGH] = FD_SETSIZE + 100;
  while (fd_is_open(desc[D_OPEN_HIGH]))
    desc[D_OPEN_HIGH]++;
  if (dup2(desc[D_DEVNULL], desc[D_OPEN_HIGH]) < 0)
    setup_fail("dup2");

  /* Well above anything libFuzzer opens for itself, below FD_SETSIZE (the
   * select backend treats closed descriptors of any number alike, but an
   * open one must be below it). Checked again before every use. */
  desc[D_CLOSED_LOW] = 1000;
  while (fd_is_open(desc[D_CLOSED_LOW]))
    desc[D_CLOSED_LOW]++;
  desc[D_CLOSED_HIGH] = INT_MAX;
  desc[D_NEG1] = -1;
  desc[D_NEG2] = -2;
  desc[D_NEG_MIN] = INT_MIN;

  /* An nfds above the limit must fail with EINVAL before anything is read,
   * but ASan's poll() interceptor checks nfds entries of the array before
   * the kernel refuses. Such calls therefore get an array that really has
   * that many entries: an anonymous mapping, untouched, so it costs no
   * memory. The soft limit is lowered (never raised) so that it stays
   * small. */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    setup_fail("getrlimit");
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536) {
    rl.rlim_cur = 65536;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
      setup_fail("setrlimit");
  }
  nfds_limit = (unsigned long)rl.rlim_cur;
  big_entries = 2 * nfds_limit + 64;
  if (big_entries < ANYPOLL_MAX_NFDS + 64)
    big_entries = ANYPOLL_MAX_NFDS + 64;
  big = mmap(NULL, big_entries * sizeof *big, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (big == MAP_FAILED)
    setup_fail("mmap");
  return 0;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The bits the select backend reconstructs; outside them it reports
 * nothing (POLLRDBAND, POLLWRBAND, POLLMSG, POLLRDHUP: it has no way to
 * see them, and the header promises only IN, PRI, OUT and their NORM
 * forms), so only these are compared with the kernel for it. */
#define SELECT_BITS                                                          \
  (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM | POLLPRI | POLLERR |          \
   POLLHUP | POLLNVAL)

/* Whether backend b's result for this entry must equal the kernel's. */
static short compared_bits(int backend, int kind) {
  if (backend != ANYPOLL_BACKEND_SELECT)
    return -1; /* every bit: poll(), or loops over it */
  /* docs/deviations.md, "A pipe whose writer has gone while data is
   * unread": POLLIN without POLLHUP. */
  if (kind == D_PIPE_R_HUP_DATA)
    return 0;
  return SELECT_BITS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t head[4] = { 0, 0, 0, 0 };
  for (size_t i = 0; i < 4 && i < size; i++)
    head[i] = data[i];
  const uint8_t *rest = size > 4 ? data + 4 : NULL;
  size_t nrest = size > 4 ? size - 4 : 0;

  static const int backends[8] = {
    ANYPOLL_BACKEND_DEFAULT, ANYPOLL_BACKEND_POLL, ANYPOLL_BACKEND_SELECT,
    ANYPOLL_BACKEND_EVENT, ANYPOLL_BACKEND_SLEEP1, ANYPOLL_BACKEND_YIELD,
    99, -1
  };
  int backend = backends[head[0] % 8];
  int known = anypoll_backend_name(backend) != NULL;

  /* The entries of the input. */
  size_t n = nrest / 3;
  if (n > MAX_ENTRIES)
    n = MAX_ENTRIES;
  int kinds[MAX_ENTRIES];
  struct pollfd in[MAX_ENTRIES];
  for (size_t i = 0; i < n; i++) {
    kinds[i] = rest[3 * i] % D_COUNT;
    in[i].fd = desc[kinds[i]];
    in[i].events = (short)(rest[3 * i + 1] | rest[3 * i + 2] << 8);
    in[i].revents = (short)0x5a5a; /* must be overwritten */
  }

  /* The kernel's answer now, for the same entries. */
  struct pollfd ref[MAX_ENTRIES];
  memcpy(ref, in, n * sizeof *in);
  int ref_ready = n > 0 ? poll(ref, n, 0) : 0;
  if (ref_ready < 0)
    fail("reference poll() failed: %s", strerror(errno));

  enum { SHAPE_ENTRIES, SHAPE_ZERO, SHAPE_NULL_ZERO, SHAPE_NULL, SHAPE_HUGE };
  int shape;
  switch (head[1] % 16) {
  case 12: shape = SHAPE_ZERO; break;
  case 13: shape = SHAPE_NULL_ZERO; break;
  case 14: shape = SHAPE_NULL; break;
  case 15: shape = SHAPE_HUGE; break;
  default: shape = SHAPE_ENTRIES; break;
  }

  struct pollfd *arr = NULL;
  anypoll_nfds_t nfds = 0;
  if (shape == SHAPE_ENTRIES || shape == SHAPE_ZERO) {
    /* On the heap and exactly as long as the call says, so that ASan sees
     * any access past the end. */
    arr = malloc((n > 0 ? n : 1) * sizeof *arr);
    if (arr == NULL)
      fail("out of memory");
    memcpy(arr, in, n * sizeof *in);
    nfds = shape == SHAPE_ZERO ? 0 : n;
  } else if (shape == SHAPE_NULL) {
    nfds = head[3] & 0x80 ? nfds_limit + 1 + head[3] % 8 : 1UL + head[3] % 64;
  } else if (shape == SHAPE_HUGE) {
    /* Through poll() only what the mapping backs (see above). The select
     * backend checks the limit before it reads anything, and an unknown
     * backend is refused first: those also get values nothing backs. */
    int unbacked = backend == ANYPOLL_BACKEND_SELECT || !known;
    switch (head[3] % 8) {
    case 0: nfds = nfds_limit + 1; break;
    case 1: nfds = nfds_limit + 2 + head[3] / 8; break;
    case 2: nfds = 2 * nfds_limit; break;
    case 3: nfds = ANYPOLL_MAX_NFDS + 1; break;
    case 4: nfds = unbacked ? (anypoll_nfds_t)-1 : nfds_limit + 1; break;
    case 5: nfds = unbacked ? (anypoll_nfds_t)UINT_MAX + 1 : nfds_limit + 1;
            break;
    case 6: nfds = unbacked ? (anypoll_nfds_t)INT_MAX + 1 : nfds_limit + 1;
            break;
    default: nfds = unbacked ? (anypoll_nfds_t)UINT_MAX : nfds_limit + 1;
             break;
    }
    if (nfds <= nfds_limit) /* a limit near ANYPOLL_MAX_NFDS */
      nfds = nfds_limit + 1;
    arr = big;
  }

  /* A negative timeout only when something is certainly ready: the
   * descriptors do not change, so the kernel's answer above holds. */
  int timeout = head[2] % 3;
  int can_block = 0;
  for (size_t i = 0; shape == SHAPE_ENTRIES && ref_ready > 0 && i < n; i++)
    if (ref[i].revents & compared_bits(backend, kinds[i]))
      can_block = 1;
  if ((head[2] & 0x80) && can_block)
    timeout = head[2] & 0x40 ? -1 : -(int)(head[2] & 0x3f) - 1;

  /* Which low closed descriptors are still closed (the number could be
   * reused by the fuzzer itself between runs; then the kernel's answer is
   * still the reference, only the POLLNVAL check is skipped). */
  int closed_low = !fd_is_open(desc[D_CLOSED_LOW]);

  errno = 0;
  double start = now_ms();
  int ret = anypoll_poll_with(backend, arr, nfds, timeout);
  double elapsed = now_ms() - start;
  int err = errno;

  const char *bname = known ? anypoll_backend_name(backend) : "unknown";

  /* Failures: exactly the documented ones, for the documented reasons. */
  if (!known) {
    if (ret != -1 || err != EINVAL)
      fail("backend %d: returned %d errno %d, want -1/EINVAL", backend, ret,
           err);
    goto done;
  }
  if (shape == SHAPE_NULL) {
    /* With nfds also above the limit either error is right. */
    int ok = err == EFAULT || (nfds > nfds_limit && err == EINVAL);
    if (ret != -1 || !ok)
      fail("%s: NULL array, nfds %lu: returned %d errno %d, want -1/EFAULT",
           bname, (unsigned long)nfds, ret, err);
    goto done;
  }
  if (shape == SHAPE_HUGE) {
    if (ret != -1 || err != EINVAL)
      fail("%s: nfds %lu above the limit %lu: returned %d errno %d, want "
           "-1/EINVAL", bname, (unsigned long)nfds, nfds_limit, ret, err);
    goto done;
  }
  int has_high = 0;
  for (size_t i = 0; i < (size_t)nfds; i++)
    has_high |= kinds[i] == D_OPEN_HIGH;
  if (backend == ANYPOLL_BACKEND_SELECT && has_high) {
    /* docs/deviations.md, "An open descriptor numbered FD_SETSIZE or
     * more": the whole call fails. */
    if (ret != -1 || err != EINVAL)
      fail("select: open fd >= FD_SETSIZE: returned %d errno %d, want "
           "-1/EINVAL", ret, err);
    goto check_unchanged;
  }
  if (ret < 0) {
    /* libFuzzer's own timer signal may interrupt a wait. */
    if (err == EINTR && timeout != 0)
      goto check_unchanged;
    fail("%s: %lu entries, timeout %d: returned %d errno %d (%s)", bname,
         (unsigned long)nfds, timeout, ret, err, strerror(err));
  }
  if (ret > (int)nfds)
    fail("%s: returned %d for %lu entries", bname, ret, (unsigned long)nfds);
  if (nfds == 0) {
    if (ret != 0)
      fail("%s: nfds 0 returned %d", bname, ret);
  }

  /* The results. */
  int nonzero = 0;
  for (size_t i = 0; i < (size_t)nfds; i++) {
    short ev = in[i].events, rev = arr[i].revents;
    nonzero += rev != 0;
    if ((rev & ~(ev | POLLERR | POLLHUP | POLLNVAL)) != 0)
      fail("%s: entry %zu (kind %d, fd %d) events 0x%04hx: revents 0x%04hx "
           "has bits neither asked for nor always reported", bname, i,
           kinds[i], in[i].fd, (unsigned short)ev, (unsigned short)rev);
    if (in[i].fd < 0 && rev != 0)
      fail("%s: entry %zu negative fd %d: revents 0x%04hx, want 0", bname, i,
           in[i].fd, (unsigned short)rev);
    int closed = kinds[i] == D_CLOSED_HIGH ||
                 (kinds[i] == D_CLOSED_LOW && closed_low);
    if (closed && rev != POLLNVAL)
      fail("%s: entry %zu closed fd %d: revents 0x%04hx, want POLLNVAL",
           bname, i, in[i].fd, (unsigned short)rev);
    if (in[i].fd >= 0 && !closed && (rev & POLLNVAL))
      fail("%s: entry %zu open fd %d (kind %d): POLLNVAL", bname, i,
           in[i].fd, kinds[i]);
    /* A call that returned (not a timeout) looked at every entry once
     * more; a timeout means nothing was ready, as the kernel found. */
    short mask = compared_bits(backend, kinds[i]);
    if ((rev & mask) != (ref[i].revents & mask))
      fail("%s: entry %zu (kind %d, fd %d) events 0x%04hx: revents 0x%04hx, "
           "the kernel's poll() gives 0x%04hx", bname, i, kinds[i], in[i].fd,
           (unsigned short)ev, (unsigned short)rev,
           (unsigned short)ref[i].revents);
  }
  if (ret != nonzero)
    fail("%s: returned %d, but %d entries have non-zero revents", bname, ret,
         nonzero);
  /* Never early: a timeout waits at least as long as asked. */
  if (ret == 0 && timeout > 0 && elapsed < timeout)
    fail("%s: timed out after %.3f ms, timeout %d ms", bname, elapsed,
         timeout);

check_unchanged:
  for (size_t i = 0; i < (size_t)nfds; i++)
    if (arr[i].fd != in[i].fd || arr[i].events != in[i].events)
      fail("%s: entry %zu changed: fd %d events 0x%04hx, was fd %d events "
           "0x%04hx", bname, i, arr[i].fd, (unsigned short)arr[i].events,
           in[i].fd, (unsigned short)in[i].events);
done:
  if (arr != big)
    free(arr);
  return 0;
}
