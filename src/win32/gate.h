/* SPDX-License-Identifier: MIT */
/* The file-object gate and the shared helper reads (watch.c), which keep
 * the library's zero-byte reads from holding up anyone's request on a
 * synchronous file object. Included by win.h only. */
#ifndef ANYPOLL_GATE_H
#define ANYPOLL_GATE_H

/* ---- The file-object gate (watch.c) --------------------------------------
 * While a synchronous zero-byte read of ours is pending on a file object,
 * Windows makes every other synchronous request on that file object wait
 * for it (the I/O manager's file-object lock, FO_SYNCHRONOUS_IO), from any
 * thread: NtQueryInformationFile of any class, GetFileType, PeekNamedPipe,
 * getsockopt (Winsock's device I/O control), another ReadFile. So every
 * call that goes to a caller's handle *before its kind is known* (the
 * classification in handle.c, getsockopt included) and every call on a
 * pipe (its checks, FileModeInformation, FSCTL_PIPE_PEEK) is bracketed by
 * anypoll__gate_begin/anypoll__gate_end. Handles classified as sockets or
 * consoles are not gated afterwards: no read of ours is ever pending on
 * them (reads are armed on pipes only), so the socket files' calls on
 * the caller's socket (SIO_BASE_HANDLE, SIO_BSP_HANDLE_POLL, getsockname; the
 * AFD poll itself goes through a handle of ours) and console.c's run
 * outside the gate; they are announced to the lock model all the same. gate_begin returns 1 (BUSY,
 * nothing registered, do not call gate_end) when a read of ours is pending
 * or about to start on h or on another handle to the same file object: h
 * is then a synchronous pipe read end, empty, with its writer alive, and
 * must not be asked. Otherwise it registers the query and returns 0; no
 * helper enters a read on that file object until gate_end. */
struct anypoll__gate {
  struct anypoll__gate *next;
  HANDLE handle;
};
ANYPOLL__INTERNAL
int anypoll__gate_begin(struct anypoll__gate *g, HANDLE h);
/* gate_begin for a handle that was the only one to its object when this
 * call classified it (item->sole): reads started by call skip_call on
 * other handle values are not compared with it, by the reasoning of
 * anypoll__watch_subscribe. Keeps a back-off re-check of one such entry
 * from costing one NtCompareObjects per pipe armed beside it; the watch
 * set passes its own id the same way (anypoll__pipe_check_owner). */
ANYPOLL__INTERNAL
int anypoll__gate_begin_skip(struct anypoll__gate *g, HANDLE h,
                             LONG64 skip_call);
ANYPOLL__INTERNAL
void anypoll__gate_end(struct anypoll__gate *g);

/* ---- Shared helper reads (watch.c) ---------------------------------------
 * One zero-byte read per synchronous file object, shared by every
 * subscriber waiting on it through any handle to it. A subscriber is told
 * when the read ends by itself: its notify callback is called (under the
 * table lock: it must only post, e.g. SetEvent or a completion-port post),
 * or, with notify NULL, its event is set. anypoll_poll's waiters use the
 * event; the watch set can use a callback. */
enum {
  ANYPOLL_WATCH_NONE = 0, /* not ended, or cancelled */
  ANYPOLL_WATCH_FIRED,    /* data or end-of-file: a check will tell which */
  ANYPOLL_WATCH_NO_WAIT   /* ended at once with neither (PIPE_NOWAIT, no
                             client yet, ...): cannot be waited on */
};
struct anypoll__watch_sub {
  struct anypoll__watch_sub *next; /* watch.c's */
  struct anypoll__watch *watch;    /* watch.h's */
  HANDLE handle;                   /* watch.c's: the handle it came with */
  HANDLE event;                    /* set by the subscriber */
  void (*notify)(struct anypoll__watch_sub *sub); /* or NULL */
  void *ctx;                                      /* the subscriber's */
  int outcome;    /* ANYPOLL_WATCH_*, set when the read ended by itself */
  int cancelling; /* watch.c's: leaving waits for the read to end */
  /* After leaving: this subscriber stopped the read and saw it end
   * cancelled while pending (no data, writer alive, at that moment). */
  int quiet;
};
/* Subscribes to the read on h's file object, starting one if none runs.
 * sole: h was the only handle to its object when classified (only reads
 * of other calls, call_id, are compared with it). 0, or -1 with errno. */
ANYPOLL__INTERNAL
int anypoll__watch_subscribe(struct anypoll__watch_sub *sub, HANDLE h,
                             int sole, LONG64 call_id);
/* For a subscriber that outlives any one wait (the watch set): does
 * nothing while the read sub had still runs; otherwise subscribes sub
 * again (as anypoll__watch_subscribe, owner as call_id), starting a read
 * if none runs on h's file object. anypoll__watch_leave_all(sub, 1) ends
 * it; sub->watch is NULL while sub is not subscribed. */
ANYPOLL__INTERNAL
int anypoll__watch_rearm(struct anypoll__watch_sub *sub, HANDLE h, int sole,
                         LONG64 owner);
/* Leaves every subscription of subs[0..count), cancelling the reads whose
 * last subscriber leaves and waiting (bounded) for them to end. */
ANYPOLL__INTERNAL
void anypoll__watch_leave_all(struct anypoll__watch_sub *subs,
                              anypoll_nfds_t count);
/* The same for subscribers that are not in one array (the watch set's
 * shared pipes, left together at the end of a wait): one cancel-and-wait
 * round for all of them instead of one per pipe. */
ANYPOLL__INTERNAL
void anypoll__watch_leave_each(struct anypoll__watch_sub *const *subs,
                               anypoll_nfds_t count);
/* For a subscriber that outlives any one wait: whether the read sub was
 * given has ended by itself with data or end-of-file (ANYPOLL_WATCH_FIRED)
 * and no read runs for it now. */
ANYPOLL__INTERNAL
int anypoll__watch_fired(struct anypoll__watch_sub *sub);
/* What a zero-byte read's result says: ANYPOLL_WATCH_*. */
ANYPOLL__INTERNAL
int anypoll__watch_read_outcome(BOOL ok, DWORD error);
/* Whether two handles of this process refer to the same kernel object
 * (NtCompareObjects, Windows 10 and later; answered by the object manager,
 * never behind a file object's lock). Where the system lacks it, only equal
 * handle values are recognised. */
ANYPOLL__INTERNAL
int anypoll__same_object(HANDLE a, HANDLE b);

#endif /* ANYPOLL_GATE_H */
