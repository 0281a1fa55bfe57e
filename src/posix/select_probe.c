/* SPDX-License-Identifier: MIT */
/* The select() backend's probes: what kind of descriptor an entry is, and,
 * from select()'s three answers, the revents Linux poll() would give it,
 * found by calls that neither wait nor consume anything (select.c says
 * why, and which are deliberately absent). */

/* F_GETPIPE_SZ (Linux) is a GNU extension of <fcntl.h>. */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#ifdef __linux__
#  include <netinet/tcp.h>
#endif

#include "select.h"

/* The test build anypoll_test_nosignal takes the path of systems without
 * MSG_NOSIGNAL on Linux too (tests/CMakeLists.txt). */
#ifdef ANYPOLL_TEST_NO_MSG_NOSIGNAL
#  undef MSG_NOSIGNAL
#endif

int anypoll__select_classify(int fd, struct entry *e) {
  e->quiet_read = 0;
  e->access = O_RDWR;
  if (fd < 0) {
    e->kind = K_SKIP;
    return 0;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) {
    e->kind = K_NVAL;
    return 0;
  }
  /* A closed descriptor of any number is POLLNVAL, as in Linux; only an
   * open one must fit in the sets. */
  if (fd >= FD_SETSIZE) {
    errno = EINVAL;
    return -1;
  }
  e->access = (unsigned char)(fl & O_ACCMODE);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    e->kind = K_NVAL;
    return 0;
  }
  if (S_ISFIFO(st.st_mode)) {
    e->kind = K_PIPE;
  } else if (S_ISSOCK(st.st_mode)) {
    int type = 0, listening = 0;
    socklen_t len = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
    len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 &&
        listening) {
      e->kind = K_LISTEN;
    } else if (type == SOCK_STREAM || type == SOCK_SEQPACKET) {
      e->kind = K_STREAM;
#ifdef TCP_INFO
      struct sockaddr_storage ss;
      socklen_t sl = sizeof ss;
      if (type == SOCK_STREAM &&
          getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
          (ss.ss_family == AF_INET || ss.ss_family == AF_INET6))
        e->kind = K_TCP;
#endif
    } else {
      e->kind = K_SOCKET;
    }
  } else if (S_ISCHR(st.st_mode) && (isatty(fd) || errno == EIO)) {
    /* A hung-up terminal fails isatty's ioctl with EIO; it is still one. */
    e->kind = K_TTY;
  } else {
    e->kind = K_PLAIN;
  }
  return 0;
}

static int bytes_queued(int fd) {
  int n = 0;
  if (ioctl(fd, FIONREAD, &n) != 0)
    return -1;
  return n;
}

/* Whether fd is readable at this moment: a zero-timeout select of it
 * alone (fd is below FD_SETSIZE, as it was just in a set). */
static int readable_now(int fd) {
  fd_set set;
  FD_ZERO(&set);
  FD_SET(fd, &set);
  struct timeval tv = { 0, 0 };
  return select(fd + 1, &set, NULL, NULL, &tv) == 1;
}

/* The revents of a pipe's read end that select() calls readable. Another
 * thread may read the data between select and the count, and a pipe that is
 * readable with nothing in it would then look like one whose writer has
 * gone. The end of input lasts, a drained pipe's readability does not: it
 * is a hang-up only if select and the count agree many times in a row.
 * That is evidence, not proof: a pipe written and drained in a tight loop
 * by another thread fooled a single re-check in about 1 call of 10, and 8
 * re-checks about once in 10^5 calls (pipe_drained_by_other_thread_is_never_hup);
 * 32 cost a pipe whose writer has really gone 64 system calls, once. */
static short pipe_read_revents(int fd, int access) {
  if (access == O_RDWR)
    return IN_BITS;
  for (int round = 0; round < 32; round++) {
    if (bytes_queued(fd) > 0)
      return IN_BITS;
    if (round > 0 && !readable_now(fd))
      return 0;
  }
  return POLLHUP;
}

/* A pipe whose buffer is full gives no POLLOUT even while its reader has
 * gone (when select still calls it writable, for the error). */
static int pipe_full(int fd) {
#ifdef F_GETPIPE_SZ
  int size = fcntl(fd, F_GETPIPE_SZ);
  int queued = bytes_queued(fd);
  return size > 0 && queued >= size;
#else
  (void)fd;
  return 0;
#endif
}

/* -1: nothing to read (EAGAIN); 0: end of stream; 1: data; 2: not
 * connected; 3: an error (which the peek has now collected). */
static int peek(int fd) {
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0)
    return 1;
  if (n == 0)
    return 0;
  /* EWOULDBLOCK is EAGAIN on Linux; comparing both there is what gcc's
   * -Wlogical-op (in gnulib's warning set) reports. */
#if EWOULDBLOCK != EAGAIN
  if (errno == EWOULDBLOCK)
    return -1;
#endif
  if (errno == EAGAIN || errno == EINTR)
    return -1;
  if (errno == ENOTCONN)
    return 2;
  return 3;
}

/* Whether the sending direction is shut, by a zero-byte send: it transfers
 * nothing and fails with EPIPE exactly then. */
#ifdef MSG_NOSIGNAL
static int send_shut(int fd) {
  return send(fd, "", 0, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EPIPE;
}
#else
/* Without MSG_NOSIGNAL the failing send also raises SIGPIPE, whose default
 * action ends the process: a poll must not do that. SIGPIPE from a send is
 * directed at the sending thread, so it is blocked in this thread around
 * the probe and, if the probe made it pending, taken off again with
 * sigwait (which returns at once then). One that was pending before stays
 * pending: standard signals do not queue, so the probe's merged into it.
 * SO_NOSIGPIPE would change the caller's socket for good, so it is not
 * used. */
static int send_shut(int fd) {
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  if (pthread_sigmask(SIG_BLOCK, &pipe_only, &old) != 0)
    return 0; /* cannot probe safely: the hang-up is then not reported */
  int shut = send(fd, "", 0, MSG_DONTWAIT) < 0 && errno == EPIPE;
  if (shut && !was_pending && sigpending(&pending) == 0 &&
      sigismember(&pending, SIGPIPE)) {
    int sig;
    sigwait(&pipe_only, &sig);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return shut;
}
#endif

/* Whether fd is the master side of a pseudo-terminal. */
static int pty_master(int fd) {
#if defined(TIOCGPTN)
  unsigned int n;
  return ioctl(fd, TIOCGPTN, &n) == 0; /* Linux */
#elif defined(TIOCPTYGNAME)
  char name[128];
  return ioctl(fd, TIOCPTYGNAME, name) == 0; /* macOS */
#else
  (void)fd;
  return 0;
#endif
}

/* The revents of a terminal that select() calls readable. */
static short tty_read_revents(int fd) {
  int n = 0;
  if (ioctl(fd, FIONREAD, &n) != 0) {
    /* A hung-up terminal (its line dropped, or the slave of a
     * pseudo-terminal whose master closed) fails every ioctl with EIO, and
     * Linux's poll gives it everything: readable (read() returns 0),
     * POLLERR and POLLHUP. */
    return errno == EIO ? (short)(IN_BITS | POLLERR | POLLHUP) : IN_BITS;
  }
  if (n > 0)
    return IN_BITS;
  /* Readable with nothing counted. In canonical mode that is an
   * end-of-file character (VEOF, Ctrl-D) typed at the start of a line:
   * read() returns 0 at once, Linux's poll says POLLIN, and FIONREAD does
   * not count the character. The master of a pseudo-terminal answers
   * tcgetattr with its slave's settings, but is never at an end-of-file:
   * readable with nothing queued, its slave has closed (POLLHUP). Outside
   * canonical mode there is no end-of-file character either. */
  struct termios t;
  if (!pty_master(fd) && tcgetattr(fd, &t) == 0 && (t.c_lflag & ICANON))
    return IN_BITS;
  return POLLHUP;
}

#ifdef TCP_INFO
static short tcp_revents(int fd, int r, int w, int x) {
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  memset(&ti, 0, sizeof ti);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
    return (short)((r ? IN_BITS : 0) | (w ? OUT_BITS : 0) | (x ? POLLPRI : 0));
  short m = 0;
  switch (ti.tcpi_state) {
  case TCP_CLOSE: {
    /* Linux: closed is always a hang-up, always writable (the write reports
     * what happened). A socket that never tried to connect has no receive
     * MSS yet; one that did and is closed again ended, in every common
     * path, with a reset or a refused connect, whose error is pending:
     * readable with POLLERR. The error cannot be looked at without clearing
     * it, so an orderly close in both directions, or an error the caller
     * has already collected, still shows POLLERR here (docs/deviations.md). */
    m = POLLHUP | OUT_BITS;
    if (ti.tcpi_rcv_mss != 0)
      m |= POLLERR | IN_BITS;
    return m;
  }
  case TCP_SYN_SENT:
  case TCP_SYN_RECV:
    return (short)(w ? OUT_BITS : 0);
  default:
    break;
  }
  if (r)
    m |= IN_BITS; /* data, or the peer's FIN */
  if (w)
    m |= OUT_BITS;
  if (x)
    m |= POLLPRI;
  /* A hang-up needs both directions shut. Having sent our FIN shows in the
   * state; the receiving side is shut by the peer's FIN (also in the state)
   * or by our own shutdown(SHUT_RD), which only a peek shows. */
  switch (ti.tcpi_state) {
  case TCP_LAST_ACK:
  case TCP_CLOSING:
    m |= POLLHUP;
    break;
  case TCP_FIN_WAIT1:
  case TCP_FIN_WAIT2:
    if (r && peek(fd) == 0)
      m |= POLLHUP;
    break;
  default:
    break;
  }
  return m;
}
#endif

short anypoll__select_revents(const struct entry *e, int fd, int r, int w,
                              int x) {
  short m = 0;
  switch (e->kind) {
  case K_NVAL:
    return POLLNVAL;
  case K_PLAIN:
  case K_LISTEN:
  case K_SOCKET:
    return (short)((r ? IN_BITS : 0) | (w ? OUT_BITS : 0) | (x ? POLLPRI : 0));
  case K_TTY:
    if (r)
      m |= tty_read_revents(fd);
    if (w)
      m |= OUT_BITS;
    return m;
  case K_PIPE:
    if (e->access == O_WRONLY) {
      /* A write end is "readable" only for the error: no reader left. */
      if (r)
        m |= POLLERR;
      if (w && !(r && pipe_full(fd)))
        m |= OUT_BITS;
      return m;
    }
    if (r) {
      /* Data wins; with none, readable means the writer is gone. Data that
       * outlives the writer is POLLIN|POLLHUP on Linux, but nothing short of
       * reading tells whether a writer is left (docs/deviations.md). */
      m |= pipe_read_revents(fd, e->access);
    }
    if (w && e->access == O_RDWR)
      m |= OUT_BITS;
    return m;
  case K_TCP:
#ifdef TCP_INFO
    return tcp_revents(fd, r, w, x);
#endif
  case K_STREAM:
    if (w)
      m |= OUT_BITS;
    if (x)
      m |= POLLPRI;
    if (r) {
      int p = peek(fd);
      if (p == 2) {
        m |= POLLHUP; /* never connected */
      } else if (p == 3) {
        m |= POLLERR | POLLHUP | IN_BITS;
      } else {
        m |= IN_BITS;
        /* Both directions shut: Linux's hang-up. The peer's close shuts
         * both at once; with unread data the receiving side cannot be
         * seen, and a shut sending side is then taken to be the peer's
         * close (our own shutdown(SHUT_WR) while data is unread is the
         * rare case this gets wrong). */
        if (p >= 0 && send_shut(fd))
          m |= POLLHUP;
      }
    }
    return m;
  default:
    return 0;
  }
}
