/* SPDX-License-Identifier: MIT */
/* The watch set's Windows backend: one I/O completion port per set, and
 * the contract between the port (set.c: the registrations; set_list.c:
 * their lists; set_wait.c: the wait) and the registration kinds
 * (set_pipe.c, set_peek.c, set_anypipe.c, set_socket.c, set_console.c). */
#ifndef ANYPOLL_SET_WIN_H
#define ANYPOLL_SET_WIN_H

#include "../set.h"
#include "win.h"

/* The most shared pipes (set_shared.c) a set reads during its waits;
 * those beyond are peeked at on its timer (set_peek.c). */
#define ANYPOLL_SET_SHARED_READS 64
/* The most pipes one tick of a set's peek timer asks (set_peek.c): with
 * more, each is asked every ceil(n / this) ticks. */
#define ANYPOLL_SET_PEEKS_PER_TICK 32

/* The most packets one removal takes out of the port. */
#define ANYPOLL_SET_DEQUEUE_MAX 64

/* Test builds: a synchronous pipe the set has started a read on must still
 * be the caller's at each check and at del (model.c, delete before close). */
#ifdef ANYPOLL_LOCK_MODEL
#  define ANYPOLL_SET_MODEL_REGISTERED(r)                                     \
    ((r)->sub.watch != NULL ? anypoll__model_registered(                      \
         (r)->fd, (r)->item.handle, anypoll__sys_os_handle((r)->fd)) : (void)0)
#else
#  define ANYPOLL_SET_MODEL_REGISTERED(r) ((void)0)
#endif

/* Completion keys of the packets a set's port receives. */
enum {
  ANYPOLL_SET_KEY_WAKE = 1, /* a ctl or another waiter wants a look */
  ANYPOLL_SET_KEY_REG = 2,  /* lpOverlapped is a registration to check */
  ANYPOLL_SET_KEY_AFD = 3,  /* an AFD poll ended: lpOverlapped is its
                               registration's iosb */
  /* An anypoll_pipe read end's association (set_anypipe.c): this plus
   * the descriptor it was added as. */
  ANYPOLL_SET_KEY_ANYPIPE = 4
};

/* One AFD poll over one socket (the layout IOCTL_AFD_POLL takes). */
struct anypoll__afd_poll {
  LARGE_INTEGER timeout;
  ULONG count;
  ULONG exclusive;
  HANDLE handle;
  ULONG events;
  NTSTATUS status;
};

struct anypoll__set;
struct anypoll__anypipe; /* set_anypipe.c */

/* One registered descriptor. Reference-counted: the set's table holds one
 * reference, and so does each packet on its way through the port (a
 * posted notification, a pending AFD poll), so that a registration
 * deleted while one is in flight is freed only when it comes out. */
struct anypoll__reg {
  struct anypoll__set *set;
  struct anypoll__reg *check_prev, *check_next; /* the check list */
  /* The update queue, doubly linked so that a del before the next wait
   * takes r out in constant time. */
  struct anypoll__reg *update_prev, *update_next;
  unsigned on_check : 1, on_update : 1;
  unsigned disabled : 1; /* ONESHOT reported; until mod */
  unsigned deleted : 1;  /* out of the table; freed with the last ref */
  unsigned noted : 1;    /* an asynchronous read end noted in anypipe.c */
  /* Found closed before its del (POLLNVAL): so until the del, whatever the
   * number or the handle value names by then; mod fails (set.c). */
  unsigned nval : 1;
  int fd;
  unsigned events;
  void *data;
  struct anypoll__item item;
  volatile LONG refs;
  volatile LONG posted; /* a KEY_REG packet of it is in the port */
  volatile LONG stopping; /* del/mod/free: callbacks post nothing more */
  /* On the set's retry list (set_post.c), under its retry_lock. */
  struct anypoll__reg *retry_next;
  LONG retrying;
  /* Pipes (set_pipe.c). */
  /* A synchronous read end's subscription to the helper read (watch.c);
   * sub.watch is NULL while not subscribed. */
  struct anypoll__watch_sub sub;
  /* Its read cannot block: timer instead. Set by watch.c's helper thread
   * (iocp_notify, under watch.c's lock), read under the set's. */
  volatile LONG no_wait;
  /* A synchronous read end that another process may share (set_pipe.c):
   * shared is valid while share_known, which stop clears (mod). peeking:
   * its wake-up is the set's periodic peek (a duplex handle, or one beyond
   * ANYPOLL_SET_SHARED_READS). listed: on
   * the set's shared list (set_shared.c), read only while a wait sleeps. */
  unsigned share_known : 1, shared : 1, peeking : 1, listed : 1;
  /* On the set's peek list (set_peek.c) while peeking, under peek_lock. */
  struct anypoll__reg *peek_prev, *peek_next;
  /* On the set's shared list while listed, under the set's lock. */
  struct anypoll__reg *shared_prev, *shared_next;
  HANDLE timer;                  /* a re-check timer, or NULL */
  /* Asynchronous pipes and consoles: a thread-pool wait posting to the
   * port (wait), and for asynchronous pipes the overlapped read. */
  HANDLE wait;
  HANDLE event;
  OVERLAPPED ov;
  int ov_pending;
  /* Our duplicate of an asynchronous pipe's or a console's handle, made
   * once per registration: the read, its cancel and the console wait go
   * through it, so a caller's close cannot strand them. NULL when none. */
  HANDLE own;
  /* anypoll_pipe read ends on the port (set_anypipe.c), or NULL. */
  struct anypoll__anypipe *anypipe;
  /* Sockets (set_socket.c). */
  HANDLE base;
  IO_STATUS_BLOCK iosb;
  struct anypoll__afd_poll afd;
  int afd_pending;
  int have_result; /* afd.events holds an answer not yet reported */
  int fresh;       /* never checked: the first check is a full one */
  int zr_tried;    /* ANYPOLL_ASSOCIATE: the association was attempted */
  unsigned zr_ends; /* receives ended (set_socket.c: every 8th is checked) */
  int zr_off;      /* its receive failed, or ended at once with nothing
                      to read (end of stream, reset): the AFD poll now */
  /* Bumped by each mod; afd_gen is its value when the pending poll was
   * issued. A poll of an older generation may have completed before the
   * mod cancelled it, its packet still in the port: its answer is of
   * before the mod and is dropped (set_socket.c). */
  unsigned gen, afd_gen;
};

struct anypoll__set {
  HANDLE port;
  SRWLOCK lock;
  HANDLE afd; /* this set's AFD handle (associated with port), or NULL */
  LONG64 id;  /* owner of the helper reads it starts (watch.c) */
  int has_dups; /* a registered pipe had other handles: compare them all */
  /* anypoll_pipe records deleted while their read was in flight
   * (set_anypipe.c), until its packet comes. */
  struct anypoll__anypipe *anypipes;
  int anypipes_abandoned; /* of those, reads no cancel can reach */
  struct anypoll__reg **by_fd;
  int cap;
  struct anypoll__reg *check_head, *check_tail;
  struct anypoll__reg *update_head, *update_tail;
  int waiters;
  volatile LONG inflight; /* packets owed by the port */
  /* Posted packets (KEY_REG and KEY_WAKE) not yet taken out: counted
   * before each PostQueuedCompletionStatus, so a packet of ours is never in
   * the port uncounted. */
  volatile LONG queued;
  /* AFD polls and anypoll_pipe reads issued and not yet taken out of the
   * port (under the lock): while there are any, a packet can be in the port
   * uncounted. */
  int afd_out;
  /* Posts that failed (out of non-paged pool), posted again by retry_timer
   * (set_post.c); retry_head and wake_retry under retry_lock, a leaf lock
   * taken from any thread. */
  SRWLOCK retry_lock;
  struct anypoll__reg *retry_head;
  int wake_retry;
  int retry_armed;  /* the timer is due: not armed again before it fires */
  int retry_ending; /* set_free: the timer is not armed again */
  PTP_TIMER retry_timer;
  /* The shared pipes' peek timer (set_peek.c): made with the first, due
   * while peek_head is not empty. peek_lock guards the list, a leaf lock
   * taken under the set's lock (start, stop) and by the timer's callback. */
  SRWLOCK peek_lock;
  struct anypoll__reg *peek_head;
  PTP_TIMER peek_timer;
  LONG peek_count; /* on the list */
  LONG peek_turn;  /* where the next tick starts, counted along the list */
  LONG peek_busy;  /* a tick runs: one due meanwhile is skipped */
  /* The shared pipes that want a read while a wait sleeps (set_shared.c),
   * and how many waits have armed them and not yet returned (under the
   * set's lock). */
  struct anypoll__reg *shared_head;
  int shared_count; /* listed, at most ANYPOLL_SET_SHARED_READS */
  int shared_sleepers;
  ULONGLONG shared_seen; /* GetTickCount64 when they last were looked at */
};

/* set_list.c, under the set's lock: the check list and the update queue
 * (a push of a registration already on the list does nothing, a remove of
 * one not on it neither); wake_one posts a wake-up when a waiter sleeps;
 * take_packet handles one packet out of the port (a registration it names
 * joins the check list). */
ANYPOLL__INTERNAL
void anypoll__set_check_push(struct anypoll__set *s, struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_check_remove(struct anypoll__set *s, struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_update_push(struct anypoll__set *s, struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_update_remove(struct anypoll__set *s,
                                struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_wake_one(struct anypoll__set *s);
ANYPOLL__INTERNAL
void anypoll__set_take_packet(struct anypoll__set *s,
                              const OVERLAPPED_ENTRY *e);

/* set_post.c: queues a KEY_REG packet for r unless one is in the port already
 * or r is stopping; from any thread, never waits. */
ANYPOLL__INTERNAL
void anypoll__set_post(struct anypoll__reg *r);
/* set_post.c: wakes one waiter (a KEY_WAKE packet); from any thread. */
ANYPOLL__INTERNAL
void anypoll__set_post_wake(struct anypoll__set *s);
/* set_post.c: the retry timer, made with the set (0, or -1 and errno), and
 * ended before it is freed, once no registration can post any more. */
ANYPOLL__INTERNAL
int anypoll__set_retry_init(struct anypoll__set *s);
ANYPOLL__INTERNAL
void anypoll__set_retry_end(struct anypoll__set *s);
/* set_post.c: drops a reference; frees r with the last. */
ANYPOLL__INTERNAL
void anypoll__set_unref(struct anypoll__reg *r);
/* set_post.c: a thread-pool callback that posts r (for waits and timers). */
ANYPOLL__INTERNAL
void CALLBACK anypoll__set_post_cb(void *r, BOOLEAN timed_out);
/* set_post.c: (re)starts r's re-check timer (ms), posting r when it fires. */
ANYPOLL__INTERNAL
int anypoll__set_timer(struct anypoll__reg *r, DWORD ms);

/* set_peek.c, under the set's lock: puts a shared synchronous read end
 * on the set's peek list (0, or -1 and errno when the timer cannot be
 * made), takes it off (no peek of it runs after), and ends the timer at
 * free, once the list is empty. */
ANYPOLL__INTERNAL
int anypoll__set_peek_start(struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_peek_stop(struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_peek_end(struct anypoll__set *s);

/* set_shared.c, under the set's lock: a shared synchronous read end gets
 * its zero-byte read only while a wait of the set sleeps. arm: lists r
 * (and reads it now if a wait sleeps), or when ANYPOLL_SET_SHARED_READS
 * are listed, puts it on the peek timer; unlist: at stop (the caller leaves
 * its subscription). sleep: before each sleep of a wait (*armed: this wait
 * has counted itself), reads every listed pipe that has none; end: before
 * the wait returns, the last one leaves every read (cancelled unless ended),
 * so that between waits no read of ours is pending on a shared pipe. */
ANYPOLL__INTERNAL
int anypoll__set_shared_arm(struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_shared_unlist(struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_shared_sleep(struct anypoll__set *s, int *armed);
ANYPOLL__INTERNAL
void anypoll__set_shared_end(struct anypoll__set *s, int armed);
/* At the start of a wait: puts the listed pipes on the check list when no
 * wait has read them for ANYPOLL_RECHECK_UNARMED_MS (waits that all
 * return at once, never sleeping, would otherwise never see their data). */
ANYPOLL__INTERNAL
void anypoll__set_shared_due(struct anypoll__set *s);
/* set_shared.c: subscribes r to the helper read on its pipe (a read of ours
 * starts if none runs), 0 or -1 and errno. */
ANYPOLL__INTERNAL
int anypoll__set_pipe_read(struct anypoll__reg *r);

/* Per kind, under the set's lock. check: revents now, or -1 when only the
 * armed source can tell (a socket's AFD poll; an anypoll_pipe read end
 * read empty since its last check). arm: start the wake-up
 * source(s), 0 or -1 and errno. stop: end them and wait until no callback
 * of them runs (mod, del, free). */
ANYPOLL__INTERNAL
short anypoll__set_pipe_check(struct anypoll__reg *r);
ANYPOLL__INTERNAL
int anypoll__set_pipe_arm(struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_pipe_stop(struct anypoll__reg *r);
ANYPOLL__INTERNAL
int anypoll__set_socket_open(struct anypoll__set *s);
ANYPOLL__INTERNAL
int anypoll__set_socket_check(struct anypoll__reg *r);
ANYPOLL__INTERNAL
int anypoll__set_socket_arm(struct anypoll__reg *r);
/* A KEY_AFD packet of r came out of the port. */
ANYPOLL__INTERNAL
void anypoll__set_socket_done(struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_socket_stop(struct anypoll__reg *r);
ANYPOLL__INTERNAL
short anypoll__set_console_check(struct anypoll__reg *r);
ANYPOLL__INTERNAL
int anypoll__set_console_arm(struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_console_stop(struct anypoll__reg *r);

/* anypoll_pipe read ends (set_anypipe.c), under the set's lock. attach: at
 * add, associates r's handle with the set's port when it is an
 * anypoll_pipe read end and can be (else r stays on set_pipe.c's
 * overlapped path). arm: keeps one zero-byte read pending on the port.
 * stop: cancels it (mod). detach: at del and free, ends the association
 * (where the system can) and frees what it can. done: a packet whose key
 * is ANYPOLL_SET_KEY_ANYPIPE or above: the registration whose read it ends
 * (with the read's reference), or NULL for a packet that is not ours.
 * free_all: after the port has been drained. */
ANYPOLL__INTERNAL
void anypoll__set_anypipe_attach(struct anypoll__reg *r);
ANYPOLL__INTERNAL
int anypoll__set_anypipe_arm(struct anypoll__reg *r);
ANYPOLL__INTERNAL
void anypoll__set_anypipe_stop(struct anypoll__reg *r);
/* check_left: 1 when r's check can be left to its zero-byte read (the
 * pipe was read empty since, nothing came through the port), so the
 * check answers "arm it". */
ANYPOLL__INTERNAL
int anypoll__set_anypipe_check_left(struct anypoll__reg *r);
/* gone: r's borrowed handle value was found naming another object (the
 * read end closed before its del): POLLNVAL until the del. */
ANYPOLL__INTERNAL
int anypoll__set_anypipe_gone(const struct anypoll__reg *r);
/* A socket registered with ANYPOLL_ASSOCIATE (set_socket.c): attach_socket
 * associates its base handle (1) or cannot (0: the AFD poll then); arm and
 * stop as above, the read a zero-byte receive (one that ends at once sends
 * no packet: the socket's completion mode skips the port on success).
 * packet: 1 when the receive ended since the last call, in r's current
 * generation; *failed when it ended in an error (not a cancel of ours),
 * *immediate when it ended at the arm. */
ANYPOLL__INTERNAL
int anypoll__set_anypipe_attach_socket(struct anypoll__reg *r);
ANYPOLL__INTERNAL
int anypoll__set_anypipe_packet(struct anypoll__reg *r, int *failed,
                                int *immediate);
ANYPOLL__INTERNAL
void anypoll__set_anypipe_detach(struct anypoll__reg *r);
ANYPOLL__INTERNAL
struct anypoll__reg *anypoll__set_anypipe_done(struct anypoll__set *s,
                                               const OVERLAPPED_ENTRY *e);
ANYPOLL__INTERNAL
void anypoll__set_anypipe_free_all(struct anypoll__set *s);

/* The backend's functions (set_default.c names them as the default). */
ANYPOLL__INTERNAL
void *anypoll__set_iocp_create(void);
ANYPOLL__INTERNAL
int anypoll__set_iocp_destroy(void *state);
ANYPOLL__INTERNAL
int anypoll__set_iocp_ctl(void *state, int op, int fd, unsigned events,
                          void *data);
ANYPOLL__INTERNAL
int anypoll__set_iocp_wait(void *state, struct anypoll_event *out, int max,
                           int timeout_ms);

#endif /* ANYPOLL_SET_WIN_H */
