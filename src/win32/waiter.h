/* SPDX-License-Identifier: MIT */
/* Waiting: the waiter of one anypoll_poll call, the back-off bounds of
 * entries that cannot be waited on, and each kind's arming and disarming
 * (poll.c, poll_check.c, pipe.c, socket.c). Included by win.h only. */
#ifndef ANYPOLL_WAITER_H
#define ANYPOLL_WAITER_H

/* ---- Waiting --------------------------------------------------------------
 * A waiter is one anypoll_poll call that is about to block. Each kind arms
 * its wait so that the waiter's event is set when the entry may have become
 * ready, and disarms it before the call returns. */
struct anypoll__watch_sub;
struct anypoll__waiter {
  HANDLE event; /* auto-reset, owned by the calling thread */
  struct anypoll__watch_sub *pipe_subs;
  anypoll_nfds_t pipe_sub_count;
  /* Overlapped zero-byte reads on asynchronous pipe handles. */
  OVERLAPPED *overlapped;
  struct anypoll__item **overlapped_items;
  /* Each read is issued on a private duplicate of the caller's handle, so
   * that a close of the caller's handle by another thread cannot strand
   * it beyond our cancel (pipe.c, arm_async). */
  HANDLE *overlapped_handles;
  /* A cancelled read did not complete within its bound: the OVERLAPPED
   * array is left allocated for the kernel to write into (pipe.c). */
  int overlapped_abandoned;
  anypoll_nfds_t overlapped_count;
  /* The one AFD poll covering every socket of the call. */
  void *afd_info;
  IO_STATUS_BLOCK afd_iosb;
  int afd_pending;
  /* Some entries cannot be waited on (pipe write ends, read ends whose
   * read cannot block, a console holding a partial line): they are
   * re-checked on a back-off that doubles from 1 ms up to this bound, the
   * smallest any of them asked for this round (ANYPOLL_RECHECK_*_MS);
   * 0: no re-check needed. */
  DWORD recheck_ms;
  /* An overlapped read could not be issued: the re-check must run now. */
  int failed_arm;
  /* This call's number (unique for the process's life), marking the reads
   * it started (pipe.c). */
  LONG64 call_id;
  /* The AFD poll was cancelled while still pending: no socket of the call
   * had any event asked of it then, and the re-check leaves them out. */
  int sockets_quiet;
};

/* The back-off bounds, one per reason an entry cannot be waited on.
 * Write ends: no notification when room appears; 16 ms bounds the added
 * latency near one Windows timer tick. Read ends whose zero-byte read
 * cannot block (PIPE_NOWAIT, a server end with no client yet): 20 checks a
 * second, well under 1% of a CPU even under Wine, where a round of checks
 * costs about ten times what it costs on Windows. A console with a partial
 * line queued (line input mode) stays signalled, and only a person's Enter
 * completes the line: at most ~8 checks a second, each a few console
 * calls. */
#define ANYPOLL_RECHECK_WRITE_MS 16
/* Read ends on which no read of ours may be armed (pipe.c: message-type
 * pipes, synchronous duplex handles): like write ends, a handle the
 * program writes through or reads messages from, one query (plus one peek
 * for a message pipe) per round; the cost is up to 16 ms of added latency
 * for their POLLIN and ~60 checks a second while they are idle. */
#define ANYPOLL_RECHECK_UNARMED_MS 16
#define ANYPOLL_RECHECK_NO_WAIT_MS 50
/* Write ends not asked for POLLOUT: nothing tells a write end that its
 * reader has gone (no read can be armed on a write-only handle, and no
 * documented request on it waits for the other end's close), yet POLLERR
 * is reported whether asked or not. Re-checked at the no-wait bound: the
 * reader's departure seen up to 50 ms late, 20 checks a second while
 * idle (pipe.c, anypoll__pipe_peer_unwatched). */
#define ANYPOLL_RECHECK_PEER_MS 50
#define ANYPOLL_RECHECK_CONSOLE_MS 128

/* Asks for a re-check of the waiter's entry item within cap_ms at most:
 * the entry could not be armed, and a back-off round that times out checks
 * it (and only the entries so marked) again. */
static inline void anypoll__want_recheck(struct anypoll__waiter *w,
                                         struct anypoll__item *item,
                                         DWORD cap_ms) {
  item->recheck = 1;
  if (w->recheck_ms == 0 || cap_ms < w->recheck_ms)
    w->recheck_ms = cap_ms;
}

/* ---- The call's clock (poll.c, poll_check.c) ------------------------------
 * In QueryPerformanceCounter ticks, the unit of a call's deadline (set once,
 * at the call's start), here so that the loop and the checks that stop at
 * the deadline read the same clock. */
static inline LONGLONG anypoll__qpc_now(void) {
  LARGE_INTEGER t;
  QueryPerformanceCounter(&t);
  return t.QuadPart;
}

/* Whether the deadline of a call with a timeout has passed. */
static inline int anypoll__expired(int timeout_ms, LONGLONG deadline) {
  return timeout_ms >= 0 && anypoll__qpc_now() >= deadline;
}

/* ---- The checks of a call (poll_check.c) -------------------------------- */

/* Checks every entry and returns how many are ready, or -1 with errno.
 * After a wake-up (w not NULL), entries whose wake-up source was cancelled
 * while still pending are left out; after the deadline (late), so are the
 * entries that could not be armed. */
ANYPOLL__INTERNAL
int anypoll__check_entries(struct pollfd *fds, struct anypoll__item *items,
                           anypoll_nfds_t nfds,
                           const struct anypoll__waiter *w, int late);
/* On a back-off round of call call_id: checks only the entries that could
 * not be armed (item->recheck), up to the deadline, and returns how many
 * are ready. fds is not written. */
ANYPOLL__INTERNAL
int anypoll__check_unarmed(const struct pollfd *fds,
                           const struct anypoll__item *items,
                           anypoll_nfds_t nfds, LONG64 call_id, int timeout_ms,
                           LONGLONG deadline);

/* pipe.c: finds out which read ends are asynchronous, and makes space for
 * a call that waits on them; 0, or -1 with errno ENOMEM. */
ANYPOLL__INTERNAL
int anypoll__pipe_prepare(struct anypoll__waiter *w,
                          struct anypoll__item *items, anypoll_nfds_t nfds);
ANYPOLL__INTERNAL
void anypoll__pipe_release(struct anypoll__waiter *w);

/* pipe.c: arm a zero-byte read on a pipe read end (a pooled helper thread
 * for synchronous handles, an overlapped read for asynchronous ones).
 * Issuing an overlapped read resets the call's event (the I/O manager
 * clears a request's event when the request starts), so every overlapped
 * request of a call is issued before any helper can set the event: first
 * anypoll__pipe_arm_async for each asynchronous read end and
 * anypoll__socket_arm, then anypoll__pipe_completed and
 * anypoll__socket_completed to catch completions that a later request's
 * reset erased, then anypoll__pipe_arm_sync for each synchronous one. */
ANYPOLL__INTERNAL
int anypoll__pipe_arm_async(struct anypoll__waiter *w,
                            struct anypoll__item *item);
ANYPOLL__INTERNAL
int anypoll__pipe_arm_sync(struct anypoll__waiter *w,
                           struct anypoll__item *item, short events);
/* Whether an overlapped read has completed or could not be issued. */
ANYPOLL__INTERNAL
int anypoll__pipe_completed(const struct anypoll__waiter *w);
ANYPOLL__INTERNAL
void anypoll__pipe_disarm_all(struct anypoll__waiter *w);

/* pipe.c: whether the entry is a write end whose reader's departure only a
 * re-check can see (write-only, askable, POLLOUT not asked: with POLLOUT
 * it is re-checked for room anyway). */
ANYPOLL__INTERNAL
int anypoll__pipe_peer_unwatched(const struct anypoll__item *item,
                                 short events);

/* pipe.c, for the watch set (set.c): whether h was opened for overlapped
 * I/O (through the gate: a handle on whose file object a read of ours is
 * pending is synchronous). */
ANYPOLL__INTERNAL
int anypoll__pipe_is_async(HANDLE h);

/* socket.c: one overlapped AFD poll over the call's sockets. */
ANYPOLL__INTERNAL
int anypoll__socket_arm(struct anypoll__waiter *w, struct pollfd *fds,
                        struct anypoll__item *items, anypoll_nfds_t nfds);
ANYPOLL__INTERNAL
int anypoll__socket_completed(const struct anypoll__waiter *w);
ANYPOLL__INTERNAL
void anypoll__socket_disarm(struct anypoll__waiter *w);

/* socket.c, for the watch set (set_socket.c): the AFD events that stand
 * for a pollfd's events, and the revents Linux gives for what AFD
 * answered. */
ANYPOLL__INTERNAL
ULONG anypoll__socket_afd_events(short events, int stream);
ANYPOLL__INTERNAL
short anypoll__socket_revents(ULONG afd_events, short events, int stream);

#endif /* ANYPOLL_WAITER_H */
