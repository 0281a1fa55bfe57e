/* SPDX-License-Identifier: MIT */
/* pollcat's POSIX layer: descriptors, sockets and children. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include "pollcat.h"


/* The largest write that a pipe reporting POLLOUT takes without blocking:
 * Linux reports POLLOUT when a page is free, and a write of up to PIPE_BUF
 * is atomic, so it fits whole. */
#define PIPE_CHUNK 4096

static int last_errno;

static enum pc_err classify(int e) {
  switch (e) {
  case EAGAIN:
#if EWOULDBLOCK != EAGAIN
  case EWOULDBLOCK:
#endif
    return PCE_AGAIN;
  case EINPROGRESS: return PCE_INPROGRESS;
  case EPIPE: return PCE_PIPE;
  case ECONNRESET: return PCE_RESET;
  case ECONNREFUSED: return PCE_REFUSED;
  case EADDRINUSE: return PCE_INUSE;
  case ETIMEDOUT: return PCE_TIMEDOUT;
  case 0: return PCE_NONE;
  default: return PCE_OTHER;
  }
}

static int fail(void) {
  last_errno = errno;
  return -1;
}

enum pc_err pc_error(void) { return classify(last_errno); }

const char *pc_error_text(void) {
  switch (last_errno) {
  /* The lower-case wording people know from other tools. */
  case ECONNREFUSED: return "connection refused";
  case EADDRINUSE: return "address in use";
  default: return strerror(last_errno);
  }
}

const char *pc_gai_text(int rc) { return gai_strerror(rc); }

void pc_init(int closed[3]) {
  /* In increasing order, so that open takes the lowest free number: the
   * missing descriptor itself. */
  for (int n = 0; n < 3; n++) {
    closed[n] = fcntl(n, F_GETFD) == -1 && errno == EBADF;
    if (!closed[n])
      continue;
    int fd = open("/dev/null", n == 0 ? O_RDONLY : O_WRONLY);
    if (fd < 0 || (fd != n && dup2(fd, n) != n)) {
      /* stderr itself may be what is missing: no message to give. */
      _exit(PC_EXIT_IO);
    }
    if (fd != n)
      close(fd);
  }
  /* A reader that goes away is reported by EPIPE and handled; the default
   * action would kill pollcat without a word. */
  signal(SIGPIPE, SIG_IGN);
}

static void stream_io(int fd, struct pc_io *io) {
  memset(io, 0, sizeof *io);
  io->fd = fd;
  io->kind = PC_IO_STREAM;
  io->sock = PC_NO_SOCK;
  struct stat st;
  int is_pipe = fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) ||
                                        S_ISCHR(st.st_mode) ||
                                        S_ISSOCK(st.st_mode));
  io->max_write = is_pipe ? PIPE_CHUNK : SIZE_MAX;
}

/* /dev/null (Linux's character device 1,3) takes any write at once. */
static int is_dev_null(const struct stat *st) {
  return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 &&
         minor(st->st_rdev) == 3;
}

void pc_std_io(int n, struct pc_io *io) {
  struct stat st;
  if (fcntl(n, F_GETFD) == -1 || fstat(n, &st) != 0) {
    memset(io, 0, sizeof *io);
    io->fd = -1;
    io->sock = PC_NO_SOCK;
    return;
  }
  stream_io(n, io);
  if (S_ISSOCK(st.st_mode)) {
    /* MSG_DONTWAIT makes each call non-blocking without touching the
     * descriptor's mode, which we share with whoever started us. */
    io->dontwait = 1;
    io->nonblocking = 1;
    io->nb_read = 1;
    io->max_write = SIZE_MAX;
  } else if (S_ISFIFO(st.st_mode)) {
    /* A pipe's O_NONBLOCK flag belongs to its open file description,
     * which the processes of a pipeline share, so it is not ours to set.
     * Opening the pipe again through /proc gives a description of our
     * own: non-blocking reads and writes that take what is ready, many
     * per poll round, instead of one PIPE_BUF write per round. Without
     * /proc (or for a FIFO whose reader is gone: ENXIO) the shared
     * descriptor is used with bounded writes as before. */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", n);
    int fd = open(path, (n == 0 ? O_RDONLY : O_WRONLY) | O_NONBLOCK |
                            O_CLOEXEC);
    if (fd >= 0) {
      io->fd = fd;
      io->nonblocking = 1;
      io->nb_read = 1;
      io->max_write = SIZE_MAX;
    }
  } else if (S_ISREG(st.st_mode) || is_dev_null(&st)) {
    /* Files and /dev/null never wait for another process: as many reads
     * and writes per round as there is data for. */
    io->max_write = SIZE_MAX;
    io->nonblocking = 1;
    io->nb_read = 1;
  }
}

long pc_read(struct pc_io *io, void *buf, size_t len) {
  for (;;) {
    /* Streams through anypoll_read, which is read() here, as the
     * Windows layer reads a child's pipes. */
    ssize_t n = io->kind == PC_IO_SOCKET || io->dontwait
                    ? recv(io->fd, buf, len, io->dontwait ? MSG_DONTWAIT : 0)
                    : anypoll_read(io->fd, buf, (unsigned)len);
    if (n >= 0)
      return (long)n;
    if (errno != EINTR)
      return fail();
  }
}

long pc_write(struct pc_io *io, const void *buf, size_t len) {
  for (;;) {
    ssize_t n = io->kind == PC_IO_SOCKET || io->dontwait
                    ? send(io->fd, buf, len,
                           MSG_NOSIGNAL | (io->dontwait ? MSG_DONTWAIT : 0))
                    : anypoll_write(io->fd, buf, (unsigned)len);
    if (n >= 0)
      return (long)n;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return 0; /* nothing fitted */
    if (errno != EINTR)
      return fail();
  }
}

void pc_shut(struct pc_io *io) {
  if (io->kind == PC_IO_SOCKET)
    shutdown(io->fd, SHUT_WR);
  else
    pc_close(io);
}

void pc_close(struct pc_io *io) {
  if (io->fd >= 0)
    anypoll_close(io->fd);
  io->fd = -1;
}

pc_sock pc_socket(int family) {
  int s = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) {
    fail();
    return PC_NO_SOCK;
  }
  return s;
}

int pc_connect(pc_sock s, const struct sockaddr *addr, int len) {
  if (connect((int)s, addr, (socklen_t)len) == 0)
    return 0;
  return fail();
}

int pc_connect_result(pc_sock s) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt((int)s, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
    return fail();
  if (err == 0)
    return 0;
  errno = err;
  return fail();
}

int pc_bind_listen(pc_sock s, const struct sockaddr *addr, int len,
                   int dual) {
  int on = 1, off = 0;
  /* Lets a listener restart while old connections linger in TIME_WAIT; on
   * Linux it never lets two sockets listen on one port. */
  setsockopt((int)s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (dual != 0)
    setsockopt((int)s, IPPROTO_IPV6, IPV6_V6ONLY, dual > 0 ? &off : &on,
               sizeof off);
  if (bind((int)s, addr, (socklen_t)len) != 0 || listen((int)s, 64) != 0)
    return fail();
  return 0;
}

int pc_local_addr(pc_sock s, struct sockaddr_storage *addr, int *len) {
  socklen_t l = sizeof *addr;
  if (getsockname((int)s, (struct sockaddr *)addr, &l) != 0)
    return fail();
  *len = (int)l;
  return 0;
}

pc_sock pc_accept(pc_sock s, struct sockaddr_storage *addr, int *len) {
  socklen_t l = sizeof *addr;
  int c = accept4((int)s, (struct sockaddr *)addr, &l,
                  SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (c < 0) {
    fail();
    if (last_errno == ECONNABORTED)
      last_errno = ECONNRESET;
    return PC_NO_SOCK;
  }
  *len = (int)l;
  return c;
}

void pc_sock_close(pc_sock s) { close((int)s); }

void pc_sock_io_close(struct pc_io *io) {
  if (io->fd >= 0)
    close(io->fd);
  io->fd = -1;
}

int pc_sock_io(pc_sock s, struct pc_io *io) {
  memset(io, 0, sizeof *io);
  io->fd = (int)s;
  io->kind = PC_IO_SOCKET;
  io->sock = s;
  io->max_write = SIZE_MAX;
  io->nonblocking = 1;
  io->nb_read = 1;
  return 0;
}

int pc_sock_failed(struct pc_io *io) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err == 0)
    return 0;
  last_errno = err;
  return 1;
}

/* Our end of a child's pipe: non-blocking, so that a child that stops
 * reading its stdin cannot stop the relay (and with it the reading of
 * its own output), and so that each round reads all that is ready. */
void pc_child_io(int n, int fd, struct pc_io *io) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  /* The pipe is ours: 1 MiB (Linux's default limit for unprivileged
   * processes) instead of 64 KiB, so that each round moves more. Best
   * effort: a smaller limit leaves the pipe as it is. */
#ifdef F_SETPIPE_SZ
  fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#endif
  stream_io(fd, io);
  if (n == 0) {
    io->max_write = SIZE_MAX; /* non-blocking: partial writes are fine */
    io->nonblocking = 1;
  } else {
    io->nb_read = 1;
  }
}

double pc_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

double pc_cpu_ms(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}
