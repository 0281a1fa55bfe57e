/* SPDX-License-Identifier: MIT */
/* The compat consumer: a program written against gnulib's or git's
 * compat/poll/poll.h, built with dist/compat/poll.c alone (no anypoll
 * library), with the header included in the orders real programs use. */
#ifndef COMPAT_CONSUMER_H
#define COMPAT_CONSUMER_H

/* Descriptors, made without any poll header in sight
 * (consumer_platform.c): C runtime descriptors on Windows. */
struct cc_fds {
  int pipe_r, pipe_w;     /* a pipe, "abc" written into it */
  int empty_r, empty_w;   /* a pipe, empty */
  int hup_r;              /* a pipe whose writer is closed, drained */
  int sock_a, sock_b;     /* a connected TCP pair, "s" sent from b to a */
};
void cc_make_fds(struct cc_fds *f);

/* One of these per include order; each returns the number of failed
 * checks, naming them on stderr. */
int cc_winsock_first(const struct cc_fds *f);
int cc_compat_first(const struct cc_fds *f);
int cc_git_order(const struct cc_fds *f);

#endif
