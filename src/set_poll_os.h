/* SPDX-License-Identifier: MIT */
/* The few platform primitives of the watch set's portable backend
 * (set_poll.c, set_poll_wait.c): locks, the wake pipe, cancellation. They
 * are all this backend needs of a platform besides anypoll_poll, and are
 * kept apart from its shared state (set_poll.h, the one file that includes
 * this one) so that what a port must provide stands in one place. */
#ifndef ANYPOLL_SET_POLL_OS_H
#define ANYPOLL_SET_POLL_OS_H

#include <errno.h>

#include "set.h"

#ifdef _WIN32
#  include <io.h>
#  include "win32/win.h"
typedef SRWLOCK set_lock;
typedef CONDITION_VARIABLE set_cond;
static inline int lock_init(set_lock *l, set_cond *c) {
  InitializeSRWLock(l);
  InitializeConditionVariable(c);
  return 0;
}
static inline void lock_fini(set_lock *l, set_cond *c) {
  (void)l; /* SRW locks and condition variables hold no resources. */
  (void)c;
}
static inline void lock_take(set_lock *l) { AcquireSRWLockExclusive(l); }
static inline void lock_give(set_lock *l) { ReleaseSRWLockExclusive(l); }
static inline void cond_wait(set_cond *c, set_lock *l) {
  SleepConditionVariableSRW(c, l, INFINITE, 0);
}
static inline void cond_wake_all(set_cond *c) { WakeAllConditionVariable(c); }
/* The wake pipe is an anypoll_pipe: its read end is opened for overlapped
 * I/O, which _read cannot read (src/win32/rw.c). */
static inline long fd_read(int fd, void *b, unsigned n) {
  return anypoll_read(fd, b, n);
}
static inline long fd_write(int fd, const void *b, unsigned n) {
  return _write(fd, b, n);
}
static inline void fd_close(int fd) { _close(fd); }
/* The wake pipe's byte, if it is there: a program that closed a registered
 * descriptor before its del may read the number our pipe has since taken,
 * and a blocking read of ours would then wait with the set's lock held.
 * The pipe's read end cannot be made non-blocking here; it is looked at
 * first. */
static inline void drain_wake(int fd) {
  struct pollfd p;
  char b;
  p.fd = fd;
  p.events = POLLIN;
  p.revents = 0;
  if (anypoll_poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
    (void)fd_read(fd, &b, 1);
}
static inline int wake_pipe_setup(int rfd) {
  (void)rfd;
  return 0;
}
/* No thread cancellation on Windows. */
typedef int cancel_state;
static inline void cancel_off(cancel_state *old) { *old = 0; }
static inline void cancel_restore(cancel_state old) { (void)old; }
#else
#  include <fcntl.h>
#  include <pthread.h>
#  include <unistd.h>
typedef pthread_mutex_t set_lock;
typedef pthread_cond_t set_cond;
static inline int lock_init(set_lock *l, set_cond *c) {
  if (pthread_mutex_init(l, NULL) != 0)
    return -1;
  if (pthread_cond_init(c, NULL) != 0) {
    pthread_mutex_destroy(l);
    return -1;
  }
  return 0;
}
static inline void lock_fini(set_lock *l, set_cond *c) {
  pthread_cond_destroy(c);
  pthread_mutex_destroy(l);
}
static inline void lock_take(set_lock *l) { pthread_mutex_lock(l); }
static inline void lock_give(set_lock *l) { pthread_mutex_unlock(l); }
static inline void cond_wait(set_cond *c, set_lock *l) {
  pthread_cond_wait(c, l);
}
static inline void cond_wake_all(set_cond *c) { pthread_cond_broadcast(c); }
static inline long fd_write(int fd, const void *b, unsigned n) {
  return write(fd, b, n);
}
static inline void fd_close(int fd) { close(fd); }
/* The wake pipe's byte, if it is there. Its read end is non-blocking: a
 * program that closed a registered descriptor before its del may read the
 * number our pipe has since taken, and take the byte; a blocking read of
 * ours would then wait with the set's lock held. */
static inline void drain_wake(int fd) {
  char b;
  (void)!read(fd, &b, 1);
}
static inline int wake_pipe_setup(int rfd) {
  int fl = fcntl(rfd, F_GETFL);
  return fl < 0 || fcntl(rfd, F_SETFL, fl | O_NONBLOCK) != 0 ? -1 : 0;
}
/* The calls are safe with deferred cancellation: none is a cancellation
 * point while the lock or a count of the set is held (write, read and
 * pthread_cond_wait are). ctl runs with cancellation disabled and
 * completes; a wait is cancelled only inside its anypoll_poll, where a
 * cleanup handler gives the waiter back (poll_cancellable). */
typedef int cancel_state;
static inline void cancel_off(cancel_state *old) {
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, old);
}
static inline void cancel_restore(cancel_state old) {
  pthread_setcancelstate(old, NULL);
}
#endif

/* Puts the caller's cancellation state back (after cancel_off) and returns
 * r, with errno as the call left it: the end of every entry point. */
static inline int cancel_restore_result(cancel_state old, int r) {
  int saved = errno;
  cancel_restore(old);
  errno = saved;
  return r;
}

#endif /* ANYPOLL_SET_POLL_OS_H */
