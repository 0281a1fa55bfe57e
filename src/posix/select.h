/* SPDX-License-Identifier: MIT */
/* The select() backend (select.c: the wait; select_probe.c: what a
 * descriptor is, and the revents Linux's poll() would give it): what the
 * two files share. */
#ifndef ANYPOLL_POSIX_SELECT_H
#define ANYPOLL_POSIX_SELECT_H

#include "posix.h"

enum kind {
  K_SKIP,    /* negative fd: ignored */
  K_NVAL,    /* not open */
  K_PLAIN,   /* regular file, directory, block or plain character device */
  K_TTY,     /* terminal */
  K_PIPE,    /* pipe or FIFO */
  K_LISTEN,  /* listening socket */
  K_TCP,     /* TCP stream socket whose state TCP_INFO tells */
  K_STREAM,  /* other connection-oriented socket (AF_UNIX, ...) */
  K_SOCKET   /* datagram and other sockets */
};

struct entry {
  unsigned char kind;
  unsigned char access;     /* O_RDONLY, O_WRONLY or O_RDWR */
  unsigned char quiet_read; /* readable only because of data nobody asked
                               for: left out of readfds (see wait loop) */
};

#define IN_BITS (POLLIN | POLLRDNORM)
#define OUT_BITS (POLLOUT | POLLWRNORM)

/* Fills e for fd: its kind and access mode; quiet_read cleared. 0, or -1
 * with errno EINVAL for an open descriptor at or above FD_SETSIZE. */
ANYPOLL__INTERNAL int anypoll__select_classify(int fd, struct entry *e);

/* The revents Linux poll() would give fd, of kind e, that select() called
 * readable (r), writable (w) or exceptional (x), before the mask by the
 * events asked for. */
ANYPOLL__INTERNAL short anypoll__select_revents(const struct entry *e, int fd,
                                                int r, int w, int x);

#endif /* ANYPOLL_POSIX_SELECT_H */
