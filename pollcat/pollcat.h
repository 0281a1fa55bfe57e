/* SPDX-License-Identifier: MIT */
/* pollcat: the contract between the portable files (options.c, net.c,
 * relay.c, poll.c, child.c; common.h) and the platform layers (posix.c;
 * win32.c and win32_sock.c). Only the platform files include the system's
 * process and handle headers; the socket headers are needed by both, for
 * getaddrinfo. */
#ifndef POLLCAT_H
#define POLLCAT_H

#include <stddef.h>
#include <stdint.h>

#include "anypoll.h"

#ifdef _WIN32
#  include <ws2tcpip.h>
#else
#  include <netdb.h>
#  include <sys/socket.h>
#endif

/* Exit statuses (man/man1/pollcat.1 has the table). In exec mode the child's
 * own status is passed through once it has started. */
enum {
  PC_EXIT_OK = 0,
  PC_EXIT_USAGE = 2,    /* bad option, missing or extra argument */
  PC_EXIT_PORT = 3,     /* bad port */
  PC_EXIT_HOST = 4,     /* unknown host (name resolution failed) */
  PC_EXIT_REFUSED = 5,  /* connection refused */
  PC_EXIT_INUSE = 6,    /* address in use */
  PC_EXIT_TIMEOUT = 7,  /* -w: connect, accept or idle timeout */
  PC_EXIT_PIPE = 8,     /* a reader went away before all data was delivered */
  PC_EXIT_NET = 9,      /* other network failure (reset, unreachable...) */
  PC_EXIT_IO = 10,      /* other local failure (read error, no memory...) */
  PC_EXIT_NOEXEC = 126, /* exec: command found but could not be started */
  PC_EXIT_NOCMD = 127   /* exec: command not found */
};

/* What a failed platform call meant, portably. */
enum pc_err {
  PCE_NONE = 0,
  PCE_AGAIN,      /* would block */
  PCE_INPROGRESS, /* non-blocking connect under way */
  PCE_PIPE,       /* the reader went away */
  PCE_RESET,      /* connection reset by peer */
  PCE_REFUSED,
  PCE_INUSE,
  PCE_TIMEDOUT,
  PCE_OTHER
};

/* The kind of a relay end point and of the socket handle type. */
typedef intptr_t pc_sock; /* an int descriptor on POSIX, a SOCKET on Windows */
#define PC_NO_SOCK ((pc_sock)-1)

enum { PC_IO_STREAM = 0, PC_IO_SOCKET = 1 };

struct pc_io {
  int fd;           /* what anypoll waits on; -1 when closed or absent */
  int kind;         /* PC_IO_STREAM or PC_IO_SOCKET */
  pc_sock sock;     /* the socket, for PC_IO_SOCKET */
  void *handle;     /* Windows: the HANDLE behind fd, for PC_IO_STREAM */
  size_t max_write; /* a write after POLLOUT of at most this never blocks */
  /* Writes never block (a socket, our end of a child's stdin on POSIX):
   * the relay writes until the data is gone or nothing more fits, rather
   * than one write per wait. */
  int nonblocking;
  /* Reads never block (a non-blocking descriptor of our own): the relay
   * reads until nothing more is ready or the buffer is full. */
  int nb_read;
  /* POSIX: a socket we share (our stdin/stdout): MSG_DONTWAIT per call. */
  int dontwait;
  /* Windows: a pipe read asks PeekNamedPipe first and reads only what is
   * there, so that reads never block and may repeat in a round. */
  int peek;
  /* Windows: our end of a child's pipe (anypoll_spawn), opened for
   * overlapped I/O: read and written with anypoll_read and anypoll_write,
   * as the C runtime's _read would not wait for the data. */
  int overlapped;
  /* POLLERR was reported for this end (a socket): its end of input is a
   * reset, never a clean finish (Wine's recv returns 0 after a reset). */
  int err_seen;
};

/* ---- Provided by posix.c, or win32.c and win32_sock.c ------------------ */

/* Process set-up, first thing in main: SIGPIPE ignored, Winsock started,
 * binary standard I/O. A standard stream the process was started without
 * (a closed descriptor, no standard handle) gets the null device, so that
 * no socket, pipe or file pollcat opens takes its number (a socket on
 * descriptor 0 would be read as stdin); closed[n] says which were missing.
 * Exits with PC_EXIT_IO when the null device cannot be opened. */
void pc_init(int closed[3]);

/* The standard stream n (0, 1, 2) as a relay end point; fd is -1 when the
 * process has no such stream (not after pc_init). */
void pc_std_io(int n, struct pc_io *io);

/* Returns the byte count (> 0), 0 at end of input, or -1 (see pc_error). */
long pc_read(struct pc_io *io, void *buf, size_t len);
/* Returns the bytes written (0 when nothing fitted), or -1. */
long pc_write(struct pc_io *io, const void *buf, size_t len);
/* No more data will be written: a socket is shut down for sending, a pipe
 * closed so that its reader sees end of input. */
void pc_shut(struct pc_io *io);
/* Closes a stream end point we own (a child's pipe). */
void pc_close(struct pc_io *io);

/* The last failure of a platform call, and its text (words, the same on
 * both platforms for the common network errors). */
enum pc_err pc_error(void);
const char *pc_error_text(void);
/* The text of a getaddrinfo failure, without a trailing period. */
const char *pc_gai_text(int rc);

/* A non-blocking, non-inherited TCP socket; PC_NO_SOCK on failure. */
pc_sock pc_socket(int family);
/* 0, or -1 with pc_error (PCE_INPROGRESS when under way). */
int pc_connect(pc_sock s, const struct sockaddr *addr, int len);
/* The outcome of a finished non-blocking connect: 0 or -1 with pc_error. */
int pc_connect_result(pc_sock s);
/* Binds (SO_REUSEADDR on POSIX, exclusive use on Windows; for IPv6 dual
 * 1 is dual-stack, -1 IPv6 only, 0 the system's default) and listens: 0
 * or -1 with pc_error. */
int pc_bind_listen(pc_sock s, const struct sockaddr *addr, int len, int dual);
/* The bound address of s. */
int pc_local_addr(pc_sock s, struct sockaddr_storage *addr, int *len);
/* Accepts one connection (non-blocking, non-inherited); PC_NO_SOCK on
 * failure with pc_error. */
pc_sock pc_accept(pc_sock s, struct sockaddr_storage *addr, int *len);
void pc_sock_close(pc_sock s);
/* Closes the socket of a relay end point made by pc_sock_io. */
void pc_sock_io_close(struct pc_io *io);
/* Makes a connected socket a relay end point. 0, or -1 with pc_error. */
int pc_sock_io(pc_sock s, struct pc_io *io);
/* Whether SO_ERROR reports an error on the socket behind io (1, with
 * pc_error and pc_error_text describing it), or not (0). */
int pc_sock_failed(struct pc_io *io);

/* Makes fd, our end of the child's standard stream n (0, 1, 2) from
 * anypoll_spawn (the write end of its stdin, the read ends of its stdout
 * and stderr), a relay end point. */
void pc_child_io(int n, int fd, struct pc_io *io);

/* A monotonic clock and this process's CPU time (all threads), in ms. */
double pc_now_ms(void);
double pc_cpu_ms(void);

#endif
