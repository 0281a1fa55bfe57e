/* SPDX-License-Identifier: MIT */
/* The record of a zero-byte read kept on a set's port (an anypoll_pipe read
 * end's, or an ANYPOLL_ASSOCIATE socket's receive), shared by
 * set_anypipe.c (attach, arm, check) and set_anypipe_end.c (detach, the
 * packet, free). */
#ifndef ANYPOLL_SET_ANYPIPE_H
#define ANYPOLL_SET_ANYPIPE_H

#include "set_win.h"

struct anypoll__anypipe {
  /* The set's list of deleted records whose read is still in flight. */
  struct anypoll__anypipe *next, *prev;
  OVERLAPPED ov;          /* the zero-byte read's */
  struct anypoll__reg *r; /* while attached, or while its read is in flight */
  /* The handle the read, its cancel and the association's end go through.
   * borrowed: the program's own (the read end had no other handle at add),
   * so that the program's close is the last close of the pipe, which ends
   * the pending read: its packet wakes the set and the check reports
   * POLLNVAL. Otherwise a duplicate of ours, closed at detach: the pipe
   * lives on through the program's other handle whatever it closes, so a
   * close would bring no packet anyway, and a read through our own handle
   * can always be cancelled at del. */
  HANDLE h;
  int borrowed;
  /* A borrowed read ended in an error that is not a cancel of ours: the
   * writer has gone, or the program closed the read end (which Windows and
   * Wine both end with STATUS_PIPE_BROKEN). The handle value may name
   * another object by now: no read goes through it any more. */
  int broken;
  int cancelling; /* stop cancelled the pending read */
  int pending;    /* a read is in flight: its packet has not been taken */
  int detached;   /* del or free: freed once its packet has come */
  /* At del the read could not be cancelled (the program closed the value
   * it went through while the pipe lives on through another handle): its
   * packet comes when the pipe has data or loses its writer. */
  int abandoned;
  int packet;     /* the read's packet was taken, not yet checked */
  /* A borrowed value found naming another object at an arm: the program
   * closed the read end while no read was pending and the value was handed
   * out again. Reported POLLNVAL until the del; nothing goes through it. */
  int gone;
  unsigned long long name_hash; /* of the pipe's name, unique per pipe */
  /* A socket's record (set_socket.c): the read is a receive, the handle
   * the socket's base handle, and an error the receive ended with is kept
   * for the check (failed) instead of marking the value broken. */
  int sock, failed;
  int immediate; /* a socket's receive ended at once, with no packet */
  unsigned gen; /* the registration's generation (mod) at the read */
  LONG reads_seen; /* anypoll__anypipe_drained's count, this set's */
};

/* Whether a borrowed value still names the pipe of the add: the program
 * may have closed it, and Windows hands the value out again. */
ANYPOLL__INTERNAL
int anypoll__set_anypipe_still_named(const struct anypoll__anypipe *a);

#endif /* ANYPOLL_SET_ANYPIPE_H */
