/* SPDX-License-Identifier: MIT */
/* The one internal header of the Windows backend: the Windows headers (and
 * nt.h), and the contract between the files of src/win32/. Layers, each
 * calling only those below it: backends.c; poll.c (the wait loop); the
 * kinds (handle.c, pipe.c, socket.c, console.c, file.c); watch.c and
 * pool.c; syscall.c (the door to a caller's handle); model.c, init.c,
 * error.c. */
#ifndef ANYPOLL_WIN_H
#define ANYPOLL_WIN_H

#ifndef WIN32_LEAN_AND_MEAN
#  define WIN32_LEAN_AND_MEAN
#endif
#include <winsock2.h>
#include <windows.h>
#include <winternl.h>

#include "../internal.h"

#include "nt.h"

/* One-time process set-up (init.c: ntdll entry points, Winsock). Returns
 * 0, or -1 with errno. Safe to call from any number of threads. */
ANYPOLL__INTERNAL
int anypoll__win_init(void);

/* ---- Errors (error.c) ---------------------------------------------------- */

/* Sets errno from a Win32 error code and returns -1. */
ANYPOLL__INTERNAL
int anypoll__set_errno_win(DWORD error);

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
  /* socket: the handle AFD is asked about (see socket.c), worked out by
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
 * them (reads are armed on pipes only), so socket.c's calls on the
 * caller's socket (SIO_BASE_HANDLE, SIO_BSP_HANDLE_POLL, getsockname; the
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

/* ---- The lock model (model.c; test builds only) ------------------------
 * Every Windows call on a caller's handle is announced, by the door
 * (syscall.c) and nowhere else: anypoll__model_call_begin(h, "Call")
 * before it, anypoll__model_call_end(h) after. Helpers' zero-byte reads
 * are announced with anypoll__model_read_begin/end.
 * In a library built with ANYPOLL_LOCK_MODEL (the variant the Windows tests
 * link; never the installed one) the model keeps its own record of both and
 * ends the process with a message naming the call and the handles when a
 * call would wait behind a read of ours on real Windows (same file object,
 * either order, or two reads of ours on one file object). Wine does not
 * model the file-object lock, so without this the tests would pass on code
 * that hangs on Windows. Calls that never take the lock (NtQueryObject,
 * NtCompareObjects, CancelIoEx, CancelSynchronousIo on our own thread,
 * _get_osfhandle's table look-up) are not announced.
 * anypoll__model_crt_check emulates the UCRT's parameter validation that
 * Wine's C runtimes lack: _get_osfhandle on a descriptor that is not open
 * calls the invalid-parameter handler in effect.
 * anypoll__model_registered(fd, h, now) enforces delete-before-close for a
 * synchronous pipe a watch set has read (set.c): now, what _get_osfhandle
 * gives for fd at the set's check or del, must still be h, the handle of
 * add, and h must still be open. */
#ifdef ANYPOLL_LOCK_MODEL
ANYPOLL__INTERNAL
void anypoll__model_call_begin(HANDLE h, const char *call);
ANYPOLL__INTERNAL
void anypoll__model_call_end(HANDLE h);
ANYPOLL__INTERNAL
void anypoll__model_read_begin(HANDLE h);
ANYPOLL__INTERNAL
void anypoll__model_read_end(HANDLE h);
ANYPOLL__INTERNAL
void anypoll__model_crt_check(int fd, intptr_t os);
ANYPOLL__INTERNAL
void anypoll__model_registered(int fd, HANDLE h, intptr_t now);
#else
static inline void anypoll__model_call_begin(HANDLE h, const char *call) {
  (void)h, (void)call;
}
static inline void anypoll__model_call_end(HANDLE h) { (void)h; }
static inline void anypoll__model_read_begin(HANDLE h) { (void)h; }
static inline void anypoll__model_read_end(HANDLE h) { (void)h; }
static inline void anypoll__model_crt_check(int fd, intptr_t os) {
  (void)fd, (void)os;
}
#endif

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

/* ---- Helper threads (pool.c) ---------------------------------------------
 * A pooled thread runs fn(arg) once and returns to the pool; idle threads
 * exit after a while. Returns the worker's thread handle (owned by the pool,
 * valid while fn runs) or NULL with errno EAGAIN. */
ANYPOLL__INTERNAL
HANDLE anypoll__pool_run(void (*fn)(void *), void *arg);

/* How long an idle helper thread waits for work before it exits. */
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__pool_idle_ms;

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

/* ---- The door to a caller's handle (syscall.c) ---------------------------
 * Every Windows call on a handle the library does not own. Each announces
 * itself to the lock model; none takes the gate (the callers do). */
ANYPOLL__INTERNAL
intptr_t anypoll__sys_os_handle(int fd);
ANYPOLL__INTERNAL
ACCESS_MASK anypoll__sys_handle_access(HANDLE h, int *sole);
ANYPOLL__INTERNAL
int anypoll__sys_compare_objects(HANDLE a, HANDLE b);
/* HANDLE_FLAG_INHERIT of the handle (0 when it cannot be asked). */
ANYPOLL__INTERNAL
int anypoll__sys_handle_inheritable(HANDLE h);
/* FilePipeLocalInformation; 1 if it answered, which only a pipe does. */
ANYPOLL__INTERNAL
int anypoll__sys_pipe_local_info(HANDLE h, anypoll__pipe_local_info *info);
ANYPOLL__INTERNAL
NTSTATUS anypoll__sys_mode_information(HANDLE h, ULONG *mode);
ANYPOLL__INTERNAL
int anypoll__sys_socket_type(HANDLE h, int *type, int *error);
ANYPOLL__INTERNAL
DWORD anypoll__sys_file_type(HANDLE h, DWORD *error);
/* 1: console input, 0: console output, -1: not a console. */
ANYPOLL__INTERNAL
int anypoll__sys_console_kind(HANDLE h);
ANYPOLL__INTERNAL
BOOL anypoll__sys_peek_named_pipe(HANDLE h, DWORD *avail, DWORD *error);
ANYPOLL__INTERNAL
NTSTATUS anypoll__sys_pipe_peek(HANDLE h, anypoll__pipe_peek_head *head);
ANYPOLL__INTERNAL
BOOL anypoll__sys_read_zero(HANDLE h, DWORD *error);
ANYPOLL__INTERNAL
BOOL anypoll__sys_read_zero_overlapped(HANDLE h, OVERLAPPED *ov,
                                       DWORD *error);
ANYPOLL__INTERNAL
BOOL anypoll__sys_cancel_io(HANDLE h, OVERLAPPED *ov);
ANYPOLL__INTERNAL
BOOL anypoll__sys_duplicate(HANDLE h, HANDLE *out);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_mode(HANDLE h, DWORD *mode);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_count(HANDLE h, DWORD *count);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_peek(HANDLE h, INPUT_RECORD *r, DWORD n, DWORD *got);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_read(HANDLE h, INPUT_RECORD *r, DWORD n, DWORD *got);
ANYPOLL__INTERNAL
BOOL anypoll__sys_console_wait(HANDLE *wait, HANDLE h, WAITORTIMERCALLBACK fn,
                               void *ctx);
ANYPOLL__INTERNAL
int anypoll__sys_socket_ioctl_handle(HANDLE s, DWORD code, const char *call,
                                     SOCKET *out, int *error);
ANYPOLL__INTERNAL
int anypoll__sys_socket_name(HANDLE s, int *error);
/* The program's own reads and writes (rw.c): an overlapped request, its
 * result once complete, and the C runtime's _read/_write. */
ANYPOLL__INTERNAL
BOOL anypoll__sys_read_overlapped(HANDLE h, void *buf, DWORD len,
                                  OVERLAPPED *ov, DWORD *error);
ANYPOLL__INTERNAL
BOOL anypoll__sys_write_overlapped(HANDLE h, const void *buf, DWORD len,
                                   OVERLAPPED *ov, DWORD *error);
ANYPOLL__INTERNAL
BOOL anypoll__sys_overlapped_result(HANDLE h, OVERLAPPED *ov, DWORD *n,
                                    DWORD *error);
ANYPOLL__INTERNAL
int anypoll__sys_crt_read(int fd, HANDLE h, void *buf, unsigned len);
ANYPOLL__INTERNAL
int anypoll__sys_crt_write(int fd, HANDLE h, const void *buf, unsigned len);
ANYPOLL__INTERNAL
DWORD anypoll__sys_close_socket_fd(int fd, HANDLE h);
ANYPOLL__INTERNAL
int anypoll__sys_crt_close(int fd);
/* anypoll_pipe's read ends (set_anypipe.c): the object's name, and the
 * association with a set's port. */
ANYPOLL__INTERNAL
int anypoll__sys_object_name(HANDLE h, WCHAR *name, ULONG cap);
ANYPOLL__INTERNAL
BOOL anypoll__sys_associate(HANDLE h, HANDLE port, ULONG_PTR key);
ANYPOLL__INTERNAL
int anypoll__sys_dissociate(HANDLE h);
/* anypipe.c: the anypoll_pipe read ends that a watch set holds, as
 * (descriptor, handle) pairs, counted (one per set). The rule that a
 * descriptor is deleted before it is closed keeps a noted pair valid, so
 * anypoll_read takes a noted one as asynchronous without asking the file
 * object (a query, and behind the gate a comparison with every read parked
 * on a synchronous pipe when the handle has company: the set's own
 * duplicate of it is that company). note: 0, or -1 when out of memory (the
 * pair is then asked about as any other). */
ANYPOLL__INTERNAL
int anypoll__anypipe_note(int fd, HANDLE h);
ANYPOLL__INTERNAL
void anypoll__anypipe_unnote(int fd, HANDLE h);
ANYPOLL__INTERNAL
int anypoll__anypipe_noted(int fd, HANDLE h);
/* The same pairs: anypoll_read reports each read it ends on one (n bytes
 * of len asked, or -1), and a set asks whether a read has ended since it
 * last asked (*seen, its own count) and the last one left the pipe empty:
 * then the set's zero-byte read alone can tell when data comes, and the
 * query before it would only say "nothing yet" (set_anypipe.c). A hint:
 * data written since makes the zero-byte read end at once, and the set
 * checks the pipe then, so a wrong hint costs requests, never a report. */
ANYPOLL__INTERNAL
void anypoll__anypipe_read_done(int fd, HANDLE h, int n, unsigned len);
ANYPOLL__INTERNAL
int anypoll__anypipe_drained(int fd, HANDLE h, LONG *seen);
/* anypipe.c: a pipe of anypoll_pipe's kind, as two handles, neither
 * inheritable: a named pipe with a unique name whose server end reads (*rd)
 * and whose client end writes (*wr). write_async 0: the read end is opened
 * for overlapped I/O and the write end is synchronous (anypoll_pipe, the
 * child's stdout and stderr, the process descriptor); 1: the other way
 * round (a child's stdin: the parent's write end overlapped, the child's
 * read end synchronous). 0, or -1 with errno. */
ANYPOLL__INTERNAL
int anypoll__anypipe_make(HANDLE *rd, HANDLE *wr, int write_async);
/* spawn.c, for anypoll_close (rw.c): when fd is a process descriptor,
 * releases what stands behind it (the thread-pool wait, the process
 * handle, the pipe's write end; never the child itself) and leaves the
 * descriptor to be closed as any other. */
ANYPOLL__INTERNAL
void anypoll__spawn_release(int fd);
/* spawn_stdin.c: the parent's ends of children's stdin pipes. register:
 * at spawn (0, or -1 and errno). write: anypoll_write on (fd, h) when it is
 * one (returns 1, the result in *result), else 0. busy: a write of ours is
 * pending on h (the pipe is full: no POLLOUT). release: at anypoll_close,
 * before the descriptor closes; a pending write is still delivered. */
ANYPOLL__INTERNAL
int anypoll__stdin_register(int fd, HANDLE h);
ANYPOLL__INTERNAL
int anypoll__stdin_write(int fd, HANDLE h, const void *buf, unsigned len,
                         int *result);
ANYPOLL__INTERNAL
int anypoll__stdin_busy(HANDLE h);
ANYPOLL__INTERNAL
void anypoll__stdin_release(int fd);
/* anypipe.c: the name prefix of anypoll_pipe's pipes. */
#define ANYPOLL__ANYPIPE_PREFIX L"\\\\.\\pipe\\anypoll-pipe-"

/* ---- Fault injection for the tests (init.c) -------------------------------
 * Only in the test library (ANYPOLL_TEST_HOOKS); in the installed one the
 * hooks compile away and nothing of them is exported.
 * anypoll__test_fail_resources: when non-zero, the next that many
 * helper-thread or event creations fail as if the system were out of
 * resources, after the first anypoll__test_fail_skip of them have
 * succeeded (so a failure can land in the middle of arming a call).
 * anypoll__test_fail_base_handle: SIO_BASE_HANDLE is taken to have failed,
 * as it does under some layered service providers (socket.c then asks for
 * SIO_BSP_HANDLE_POLL); anypoll__test_bsp_poll_asked counts those asks.
 * anypoll__test_cancel_misses: a disarming call's CancelSynchronousIo on a
 * helper is taken to have found no I/O, as on Windows when the helper's
 * read is queued behind a synchronous read that is not ours (watch.c);
 * anypoll__test_cancel_tries counts the attempts.
 * anypoll__test_post_fails: the next that many packets a watch set posts
 * to its port fail as if non-paged pool were exhausted (set_post.c).
 * anypoll__test_unarmed_checks counts the entries anypoll_poll's back-off
 * rounds check; anypoll__test_late_checks the back-off entries it checks
 * after its deadline (poll.c).
 * anypoll__test_spawn_window: called by anypoll_spawn with the child's
 * handles while they are inheritable, just before CreateProcessW, as when
 * another thread creates a process at that moment (spawn.c). */
#ifdef ANYPOLL_TEST_HOOKS
ANYPOLL__INTERNAL_DATA void (*volatile anypoll__test_spawn_window)(const HANDLE *list,
                                                                  int count);
static inline void anypoll__test_in_spawn_window(const HANDLE *list, int count) {
  if (anypoll__test_spawn_window != NULL)
    anypoll__test_spawn_window(list, count);
}
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_fail_resources;
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_fail_skip;
ANYPOLL__INTERNAL
int anypoll__test_should_fail(void);
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_fail_base_handle;
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_bsp_poll_asked;
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_cancel_misses;
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_cancel_tries;
static inline int anypoll__test_base_handle_fails(void) {
  return anypoll__test_fail_base_handle != 0;
}
static inline void anypoll__test_note_bsp_poll(void) {
  InterlockedIncrement(&anypoll__test_bsp_poll_asked);
}
static inline int anypoll__test_cancel_miss(void) {
  InterlockedIncrement(&anypoll__test_cancel_tries);
  return anypoll__test_cancel_misses != 0;
}
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_post_fails;
ANYPOLL__INTERNAL
int anypoll__test_post_fail(void);
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_unarmed_checks;
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_late_checks;
static inline void anypoll__test_note_checks(volatile LONG *count,
                                             anypoll_nfds_t n) {
  if (n != 0)
    InterlockedExchangeAdd(count, (LONG)n);
}
#else
static inline int anypoll__test_should_fail(void) { return 0; }
static inline int anypoll__test_base_handle_fails(void) { return 0; }
static inline void anypoll__test_note_bsp_poll(void) {}
static inline int anypoll__test_cancel_miss(void) { return 0; }
static inline int anypoll__test_post_fail(void) { return 0; }
#define anypoll__test_note_checks(count, n) ((void)(n))
static inline void anypoll__test_in_spawn_window(const HANDLE *list, int count) {
  (void)list, (void)count;
}
#endif

/* socket.c: a new handle to the AFD driver (for IOCTL_AFD_POLL), or
 * INVALID_HANDLE_VALUE. */
ANYPOLL__INTERNAL
HANDLE anypoll__afd_open(void);

/* ---- Diagnostics (debug.c) ------------------------------------------------
 * ANYPOLL_DEBUG=1 in the environment (read once, by anypoll__win_init):
 * anypoll__debug_on is then non-zero and the wait loop reports each wait on
 * stderr. Unset, each hook costs one test of this flag. */
ANYPOLL__INTERNAL_DATA int anypoll__debug_on;
ANYPOLL__INTERNAL
void anypoll__debug_init(void);
/* How each entry was classified and armed, before the first wait. */
ANYPOLL__INTERNAL
void anypoll__debug_armed(LONG64 call, const struct pollfd *fds,
                          const struct anypoll__item *items,
                          anypoll_nfds_t nfds, DWORD wait_ms);
/* What ended a wait (r from WaitForMultipleObjectsEx over handles), after
 * how long, and how long the disarm took. */
ANYPOLL__INTERNAL
void anypoll__debug_woke(LONG64 call, DWORD r, DWORD handles,
                         long long waited_us, long long disarm_us);
/* The call's result and each entry's revents. */
ANYPOLL__INTERNAL
void anypoll__debug_result(LONG64 call, const struct pollfd *fds,
                           anypoll_nfds_t nfds, int result);

/* ---- Backends (poll.c) ---------------------------------------------------- */
ANYPOLL__INTERNAL
anypoll__poll_fn anypoll__win_event_poll;

#endif /* ANYPOLL_WIN_H */
