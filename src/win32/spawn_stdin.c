/* SPDX-License-Identifier: MIT */
/* The parent's end of a child's stdin pipe (anypoll_spawn): writes that
 * make POLLOUT mean something.
 *
 * Windows cannot say how much room a pipe has from its write end (Wine 8
 * reports WriteQuotaAvailable as 0 always, and Windows reports 0 too while
 * the reader waits on an empty pipe), so a full pipe looks writable
 * (docs/deviations.md) and a program that writes on POLLOUT to a child
 * that never reads would block in its write. This end is ours and opened
 * for overlapped I/O, which gives a better answer: an overlapped WriteFile
 * on a named pipe completes at once when its bytes fit in the pipe's
 * buffer, and stays pending until the reader has made room otherwise. So
 * anypoll_write copies the bytes, issues the write and returns the count
 * at once, whether the write completed or is pending; while one is
 * pending the end is not writable (no POLLOUT), and the next anypoll_write
 * first waits for it (blocking, as a write to a full pipe does). A pending
 * write that fails (the child has gone) makes that next write fail with
 * EPIPE, as it would have; POLLERR comes from the pipe's state. The pipe
 * thus holds one write more than its 64 KiB buffer.
 *
 * The handle is associated with a completion port of ours that nobody
 * reads (the writes' events have their low bit set, so no packet is
 * queued): Windows does not cancel I/O on a handle with a port when the
 * thread that issued it exits. Wine 8 does: there the rest of a write
 * left pending by a thread that then exits is lost (seen: 4096 bytes of
 * 139264); write from a thread that outlives the write, or close the end
 * first. anypoll_close does not cancel a pending write:
 * the pipe end stays open, through a duplicate of ours, until the write
 * has completed (a thread-pool wait closes it), so the child reads every
 * byte before its end-of-file, as after a close() on POSIX. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "spawn.h"

struct out {
  struct out *next;
  int fd;
  HANDLE handle;
  SRWLOCK lock; /* one write at a time */
  HANDLE event; /* manual reset; the write's */
  OVERLAPPED ov;
  char *buf;
  int pending;
  PTP_WAIT closer; /* after anypoll_close with a write pending */
};

static SRWLOCK outs_lock = SRWLOCK_INIT;
static struct out *outs;
static volatile LONG outs_count;
static INIT_ONCE port_once = INIT_ONCE_STATIC_INIT;
static HANDLE stdin_port;

static BOOL CALLBACK port_init(INIT_ONCE *once, void *param, void **ctx) {
  (void)once, (void)param, (void)ctx;
  stdin_port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1);
  return stdin_port != NULL;
}

int anypoll__stdin_register(int fd, HANDLE h) {
  struct out *o = calloc(1, sizeof *o);
  if (o == NULL) {
    errno = ENOMEM;
    return -1;
  }
  o->fd = fd;
  o->handle = h;
  InitializeSRWLock(&o->lock);
  o->event = CreateEventW(NULL, TRUE, FALSE, NULL);
  if (o->event == NULL || !InitOnceExecuteOnce(&port_once, port_init, NULL, NULL) ||
      CreateIoCompletionPort(h, stdin_port, 0, 0) == NULL) {
    DWORD error = GetLastError();
    if (o->event != NULL)
      CloseHandle(o->event);
    free(o);
    return anypoll__set_errno_win(error);
  }
  AcquireSRWLockExclusive(&outs_lock);
  o->next = outs;
  outs = o;
  InterlockedIncrement(&outs_count);
  ReleaseSRWLockExclusive(&outs_lock);
  return 0;
}

/* The entry of (fd, h), under outs_lock; NULL if none. */
static struct out **out_find(int fd, HANDLE h) {
  struct out **pp = &outs;
  while (*pp != NULL && ((*pp)->fd != fd || (*pp)->handle != h))
    pp = &(*pp)->next;
  return *pp != NULL ? pp : NULL;
}

/* Collects the pending write (waiting for it); 0, or -1 and errno. */
static int out_finish(struct out *o) {
  if (!o->pending)
    return 0;
  DWORD n;
  BOOL ok = GetOverlappedResult(o->handle, &o->ov, &n, TRUE);
  DWORD error = GetLastError();
  o->pending = 0;
  free(o->buf);
  o->buf = NULL;
  if (ok)
    return 0;
  if (error == ERROR_BROKEN_PIPE || error == ERROR_NO_DATA ||
      error == ERROR_PIPE_NOT_CONNECTED) {
    errno = EPIPE;
    return -1;
  }
  return anypoll__set_errno_win(error);
}

int anypoll__stdin_write(int fd, HANDLE h, const void *buf, unsigned len,
                         int *result) {
  if (InterlockedCompareExchange(&outs_count, 0, 0) == 0)
    return 0;
  AcquireSRWLockShared(&outs_lock);
  struct out **pp = out_find(fd, h);
  struct out *o = pp != NULL ? *pp : NULL;
  if (o != NULL)
    AcquireSRWLockExclusive(&o->lock);
  ReleaseSRWLockShared(&outs_lock);
  if (o == NULL)
    return 0;
  *result = out_finish(o);
  if (*result == 0 && len > 0) {
    o->buf = malloc(len);
    if (o->buf == NULL) {
      errno = ENOMEM;
      *result = -1;
    } else {
      memcpy(o->buf, buf, len);
      ZeroMemory(&o->ov, sizeof o->ov);
      o->ov.hEvent = (HANDLE)((UINT_PTR)o->event | 1);
      DWORD n = 0;
      if (WriteFile(h, o->buf, len, &n, &o->ov) ||
          GetLastError() == ERROR_IO_PENDING) {
        o->pending = 1; /* collected by the next write, or by close */
        *result = (int)len;
        if (HasOverlappedIoCompleted(&o->ov) && out_finish(o) != 0)
          *result = -1;
      } else {
        DWORD error = GetLastError();
        free(o->buf);
        o->buf = NULL;
        *result = error == ERROR_BROKEN_PIPE || error == ERROR_NO_DATA
                      ? (errno = EPIPE, -1)
                      : anypoll__set_errno_win(error);
      }
    }
  }
  ReleaseSRWLockExclusive(&o->lock);
  return 1;
}

int anypoll__stdin_busy(HANDLE h) {
  if (InterlockedCompareExchange(&outs_count, 0, 0) == 0)
    return 0;
  int busy = 0;
  AcquireSRWLockShared(&outs_lock);
  for (struct out *o = outs; o != NULL && !busy; o = o->next)
    if (o->handle == h)
      busy = o->pending && !HasOverlappedIoCompleted(&o->ov);
  ReleaseSRWLockShared(&outs_lock);
  return busy;
}

static void out_free(struct out *o) {
  free(o->buf);
  CloseHandle(o->event);
  free(o);
}

/* After anypoll_close: the write has completed; our handle goes. */
static void CALLBACK out_closed(PTP_CALLBACK_INSTANCE instance, void *ctx,
                                PTP_WAIT wait, TP_WAIT_RESULT result) {
  (void)result;
  struct out *o = ctx;
  CloseHandle(o->handle);
  (void)instance;
  /* Freed once this callback has returned. */
  CloseThreadpoolWait(wait);
  out_free(o);
}

void anypoll__stdin_release(int fd) {
  if (InterlockedCompareExchange(&outs_count, 0, 0) == 0)
    return;
  intptr_t os = anypoll__sys_os_handle(fd);
  HANDLE h = (HANDLE)os;
  AcquireSRWLockExclusive(&outs_lock);
  struct out **pp = out_find(fd, h);
  struct out *o = pp != NULL ? *pp : NULL;
  if (o != NULL) {
    *pp = o->next;
    InterlockedDecrement(&outs_count);
  }
  ReleaseSRWLockExclusive(&outs_lock);
  if (o == NULL)
    return;
  AcquireSRWLockExclusive(&o->lock); /* a write under way ends first */
  ReleaseSRWLockExclusive(&o->lock);
  if (o->pending && !HasOverlappedIoCompleted(&o->ov)) {
    /* Our own handle keeps the pipe end open past the descriptor's close
     * until the write completes. */
    HANDLE own;
    o->closer = CreateThreadpoolWait(out_closed, o, NULL);
    if (o->closer != NULL && anypoll__sys_duplicate(h, &own)) {
      o->handle = own;
      SetThreadpoolWait(o->closer, o->event, NULL);
      return;
    }
    if (o->closer != NULL)
      CloseThreadpoolWait(o->closer);
    /* Cannot keep it open: the bytes go when the end closes. */
  }
  out_free(o);
}
