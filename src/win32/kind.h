/* SPDX-License-Identifier: MIT */
/* The Windows backend's handle kinds: what one pollfd entry refers to,
 * worked out once per call (handle.c), and each kind's readiness check
 * (pipe.c, socket.c, console.c, file.c). Included by win.h only. */
#ifndef ANYPOLL_KIND_H
#define ANYPOLL_KIND_H

/* ---- Descriptor classification (handle.c) -------------------------------- */

enum anypoll__kind {
  ANYPOLL_KIND_IGNORED = 0, /* negative fd */
  ANYPOLL_KIND_INVALID,     /* not an open descriptor: POLLNVAL */
  ANYPOLL_KIND_PIPE,        /* anonymous or named pipe */
  ANYPOLL_KIND_SOCKET,
  ANYPOLL_KIND_CONSOLE_IN,
  ANYPOLL_KIND_CONSOLE_OUT,
  ANYPOLL_KIND_FILE /* disk file, NUL, other character device */
};

/* A pipe's state in a call (pipe.c; handle.c fills in the access). */
struct anypoll__pipe_item {
  unsigned readable : 1; /* pipe: the handle has read access */
  unsigned writable : 1; /* pipe: the handle has write access */
  unsigned async : 1;    /* pipe: opened for overlapped I/O (known only
                            once the call is about to wait) */
  unsigned mode_known : 1; /* pipe: async is already known (a read of ours
                              was pending on the file object, which only
                              happens on synchronous ones) */
  /* pipe: a message-type pipe (NamedPipeType of its local information, when
   * it could be asked). A zero-byte read would consume a zero-length
   * message, so no read of ours is ever armed on it: re-checked on the
   * back-off, with FSCTL_PIPE_PEEK counting its messages. */
  unsigned message : 1;
  /* Pipe read ends whose zero-byte read cannot block (PIPE_NOWAIT mode, a
   * named-pipe server with no client): set when a read of ours ended with
   * neither data nor end-of-file, or twice in a row with the entry then not
   * ready; for the rest of the call the entry is re-checked on the back-off
   * instead of armed, as write ends are. */
  unsigned no_wait : 1;
  unsigned fired : 1;       /* this round, the entry's read ended by itself */
  unsigned empty_fires : 2; /* consecutive rounds it fired and was not ready */
  /* pipe: the handle was the only handle to its object when classified
   * (NtQueryObject's HandleCount): no other handle value of this call can
   * share its file object, so arming compares it only with the reads of
   * other calls (see pipe.c, arm_sync). */
  unsigned sole : 1;
  /* pipe: info holds the FilePipeLocalInformation that classified it, in
   * this call; the first check uses it instead of asking again. */
  unsigned have_info : 1;
  /* pipe: the handle answered FilePipeLocalInformation when classified, so
   * a check sees the other end go (NamedPipeState). A write-only handle
   * opened without FILE_READ_ATTRIBUTES cannot be asked. */
  unsigned askable : 1;
  /* pipe: after a wake-up, its read was cancelled while still pending, so
   * at that moment it had no data and its writer was alive: the re-check
   * leaves it out (see poll.c). */
  unsigned quiet : 1;
  anypoll__pipe_local_info info;
};

/* A socket's state in a call (socket.c). */
struct anypoll__socket_item {
  unsigned stream : 1; /* SOCK_STREAM */
  /* The last anypoll__socket_check found a stream socket that never
   * connected, which AFD has no event for (socket.c). */
  unsigned unconnected : 1;
  /* socket: the handle AFD is asked about (socket_afd.c), worked out by
   * every anypoll__socket_check and reused by the anypoll__socket_arm that
   * follows it in the same call; never read before a check has set it. */
  HANDLE afd_base;
};

/* What one pollfd entry refers to, worked out once per call. Each kind
 * sees only its own part of u. */
struct anypoll__item {
  HANDLE handle;
  int kind;
  /* Any kind: this round, the entry could not be armed and is re-checked
   * on the back-off (anypoll__want_recheck). */
  unsigned recheck : 1;
  union {
    struct anypoll__pipe_item pipe;
    struct anypoll__socket_item socket;
  } u;
};

/* Fills in item for the C runtime descriptor stored in a pollfd. */
ANYPOLL__INTERNAL
void anypoll__classify(SOCKET fd, struct anypoll__item *item);


/* The bits Linux sets for "readable", for every kind. Winsock's POLLIN is
 * POLLRDNORM | POLLRDBAND, but Linux never sets POLLRDBAND for ordinary
 * data (pipe_poll, tcp_poll, udp_poll, unix_poll, n_tty_poll and a regular
 * file's default mask all give POLLIN | POLLRDNORM; urgent data is
 * POLLPRI): a call that asks for POLLIN gets POLLIN back, as on Linux, one
 * that asks for POLLRDNORM alone gets POLLRDNORM, and one that asks for
 * POLLRDBAND alone gets nothing. */
static inline short anypoll__readable_bits(short events) {
  if ((events & POLLIN) == POLLIN)
    return POLLIN;
  return (short)(events & POLLRDNORM);
}

/* ---- Readiness checks, one file per kind --------------------------------
 * Each returns the revents for the entry now (POLLERR/POLLHUP/POLLNVAL
 * whatever was asked), without waiting and without consuming data. */
ANYPOLL__INTERNAL
short anypoll__pipe_check(const struct anypoll__item *item, short events);
/* The same, for the watch set: the gate does not compare h with the reads
 * started for skip_owner (0: compares with all). A set passes its own id
 * while none of its pipes had a second handle when registered: none of its
 * reads can then be on h's file object under another handle value, and a
 * check costs the same however many of its pipes are armed. */
ANYPOLL__INTERNAL
short anypoll__pipe_check_owner(const struct anypoll__item *item,
                                short events, LONG64 skip_owner);
/* The check of an entry that could not be armed, on a back-off round of
 * call call_id, while its other entries stay armed. */
/* A pipe whose handle is known to be asynchronous (an anypoll_pipe read
 * end a set holds): checked without the gate. */
ANYPOLL__INTERNAL
short anypoll__pipe_check_async(const struct anypoll__item *item,
                                short events);
ANYPOLL__INTERNAL
short anypoll__pipe_check_unarmed(const struct anypoll__item *item,
                                  short events, LONG64 call_id);
/* The wait loop's check of a pipe entry (pipe.c): after a wake-up, an
 * entry whose read was aborted while pending is left out. */
ANYPOLL__INTERNAL
short anypoll__pipe_recheck(struct anypoll__item *item, short events,
                            int after_wake);
/* After a round that found nothing ready: read ends whose read keeps
 * ending with nothing to report become re-checked instead of armed. */
ANYPOLL__INTERNAL
void anypoll__pipe_after_round(struct anypoll__item *items,
                               anypoll_nfds_t nfds);
ANYPOLL__INTERNAL
short anypoll__console_check(const struct anypoll__item *item, short events);
/* console.c: whether a wait may block on a console input handle that the
 * check found not readable (0: a partial line is queued; re-check). */
ANYPOLL__INTERNAL
int anypoll__console_waitable(const struct anypoll__item *item);
ANYPOLL__INTERNAL
short anypoll__file_check(const struct anypoll__item *item, short events);
/* Sockets are checked all at once: one AFD poll with a zero timeout, with
 * no event of its own (the status word says when it is done). Sets revents
 * and afd_base of every socket entry; returns 0, or -1 with errno. */
ANYPOLL__INTERNAL
int anypoll__socket_check(struct pollfd *fds, struct anypoll__item *items,
                          anypoll_nfds_t nfds);

#endif /* ANYPOLL_KIND_H */
