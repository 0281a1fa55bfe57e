/* SPDX-License-Identifier: MIT */
/* The one internal header of the Windows backend: the Windows headers (and
 * nt.h), and the contract between the files of src/win32/, by area in the
 * headers it includes (kind.h, gate.h, waiter.h, door.h, anypipe.h; each
 * included by this one only, after the Windows headers). Layers, each
 * calling only those below it: backends.c; poll.c (the wait loop);
 * poll_check.c (a call's checks); the kinds (handle.c, pipe.c, socket.c
 * over socket_afd.c, console.c, file.c); watch.c and pool.c; syscall.c
 * (the door to a caller's handle); model.c, init.c, error.c. */
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

/* ---- Helper threads (pool.c) ---------------------------------------------
 * A pooled thread runs fn(arg) once and returns to the pool; idle threads
 * exit after a while. Returns the worker's thread handle (owned by the pool,
 * valid while fn runs) or NULL with errno EAGAIN. */
ANYPOLL__INTERNAL
HANDLE anypoll__pool_run(void (*fn)(void *), void *arg);

/* How long an idle helper thread waits for work before it exits. */
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__pool_idle_ms;

/* ---- The contract by area ------------------------------------------------ */
#include "kind.h"    /* the kinds: classification and checks */
#include "gate.h"    /* the file-object gate, the shared helper reads */
#include "waiter.h"  /* a call's waiter and each kind's arming */
#include "door.h"    /* the door to a caller's handle */
#include "anypipe.h" /* anypoll_pipe's pipes, the process descriptors */

/* ---- Fault injection for the tests (init.c) -------------------------------
 * Only in the test library (ANYPOLL_TEST_HOOKS); in the installed one the
 * hooks compile away and nothing of them is exported.
 * anypoll__test_fail_resources: when non-zero, the next that many
 * helper-thread or event creations fail as if the system were out of
 * resources, after the first anypoll__test_fail_skip of them have
 * succeeded (so a failure can land in the middle of arming a call).
 * anypoll__test_fail_base_handle: SIO_BASE_HANDLE is taken to have failed,
 * as it does under some layered service providers (socket_afd.c asks for
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
 * another thread creates a process at that moment (spawn.c).
 * anypoll__test_set_peeks counts the pipes a set's peek timer has asked,
 * anypoll__test_set_peek_ticks its ticks, both when a tick ends
 * (set_peek.c). anypoll__test_set_zreads counts the zero-byte receives a
 * set has issued on sockets registered with ANYPOLL_ASSOCIATE
 * (set_anypipe.c). */
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
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_set_peeks;
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_set_peek_ticks;
static inline void anypoll__test_note_set_peek_tick(LONG asked) {
  InterlockedExchangeAdd(&anypoll__test_set_peeks, asked);
  InterlockedIncrement(&anypoll__test_set_peek_ticks);
}
ANYPOLL__INTERNAL_DATA volatile LONG anypoll__test_set_zreads;
static inline void anypoll__test_note_set_zread(void) {
  InterlockedIncrement(&anypoll__test_set_zreads);
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
static inline void anypoll__test_note_set_peek_tick(LONG asked) {
  (void)asked;
}
static inline void anypoll__test_note_set_zread(void) {}
#endif

/* socket_afd.c: a new handle to the AFD driver (for IOCTL_AFD_POLL), or
 * INVALID_HANDLE_VALUE. */
ANYPOLL__INTERNAL
HANDLE anypoll__afd_open(void);
/* socket_afd.c: anypoll_poll's one AFD handle for the process, opened on
 * first use (INVALID_HANDLE_VALUE if it could not be). */
ANYPOLL__INTERNAL
HANDLE anypoll__afd(void);
/* socket_afd.c: the handle AFD must be asked about for socket s (its base
 * provider's); s itself when none can be found. One provider request or
 * more: asked once per socket per check (socket.c). */
ANYPOLL__INTERNAL
HANDLE anypoll__socket_base(HANDLE s);

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
