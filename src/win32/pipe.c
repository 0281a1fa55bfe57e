/* Pipes: readiness checks, and the event-driven wait on read ends.
 *
 * Windows has no readiness notification for anonymous pipes. A zero-byte
 * ReadFile, however, blocks until data arrives or the writer goes away, and
 * consumes nothing, so a pooled helper thread parked in one is a wake-up
 * source. Asynchronous (overlapped) pipe handles get an overlapped zero-byte
 * read instead and need no thread.
 *
 * The trap: while a synchronous ReadFile is pending, the I/O manager holds
 * the file object's lock, and every other synchronous call on that file
 * object (PeekNamedPipe, NtQueryInformationFile, another ReadFile) waits for
 * it, from any thread. So:
 *   - one zero-byte read at most per handle, shared by every call that
 *     waits on it (the watch table below);
 *   - no call peeks at a handle while a helper's read is pending on it: the
 *     pending read itself says "no data, writer alive";
 *   - a helper does not start its read while some call is peeking (it waits
 *     for the bucket's peek count to drop to zero);
 *   - the read is cancelled (CancelSynchronousIo) when the last waiting call
 *     returns, so the caller's own reads and CloseHandle never queue behind
 *     it. The cancel can miss if it lands between the helper's decision to
 *     read and its entry into the kernel; the canceller then retries every
 *     millisecond until the helper reports back, which bounds that window. */
#include <errno.h>
#include <stdlib.h>

#include "win.h"

/* POSIX requires PIPE_BUF >= 512; msvcrt defines none. A pipe is reported
 * writable when a write of this size would fit. */
#define ANYPOLL_PIPE_BUF 512

#define BUCKET_COUNT 256

struct watch {
  struct watch *next;
  HANDLE handle;
  struct anypoll__pipe_sub *subs; /* calls waiting on this handle */
  int users;                      /* length of subs */
  int reading;                    /* a helper owns the zero-byte read */
  int in_read;                    /* ... and may be inside ReadFile */
  int cancel;                     /* the last user left: stop the read */
  int pins;                       /* cancellers waiting for the helper */
  HANDLE thread;                  /* the helper, valid while reading */
};

struct anypoll__pipe_sub {
  struct anypoll__pipe_sub *next;
  struct watch *watch;
  HANDLE event;
};

struct bucket {
  struct watch *head;
  int peekers; /* calls inside a query on some handle of this bucket */
  CONDITION_VARIABLE cv; /* peekers reached 0, or a read ended */
};

static SRWLOCK table_lock = SRWLOCK_INIT;
static struct bucket buckets[BUCKET_COUNT];

static struct bucket *bucket_of(HANDLE h) {
  UINT_PTR v = (UINT_PTR)h >> 2; /* handle values are multiples of 4 */
  return &buckets[(v ^ (v >> 8)) % BUCKET_COUNT];
}

static struct watch *watch_find(struct bucket *b, HANDLE h) {
  for (struct watch *w = b->head; w != NULL; w = w->next)
    if (w->handle == h)
      return w;
  return NULL;
}

static void watch_release_if_unused(struct bucket *b, struct watch *w) {
  if (w->users != 0 || w->reading || w->pins != 0)
    return;
  for (struct watch **p = &b->head; *p != NULL; p = &(*p)->next) {
    if (*p == w) {
      *p = w->next;
      break;
    }
  }
  free(w);
}

/* ---- Checks ---------------------------------------------------------- */

/* Returns 0 when the caller may query h (and must call peek_end), 1 when a
 * helper's zero-byte read is pending on h, meaning: no data, writer alive. */
static int peek_begin(HANDLE h) {
  struct bucket *b = bucket_of(h);
  AcquireSRWLockExclusive(&table_lock);
  struct watch *w = watch_find(b, h);
  int busy = w != NULL && w->reading;
  if (!busy)
    b->peekers++;
  ReleaseSRWLockExclusive(&table_lock);
  return busy;
}

static void peek_end(HANDLE h) {
  struct bucket *b = bucket_of(h);
  AcquireSRWLockExclusive(&table_lock);
  if (--b->peekers == 0)
    WakeAllConditionVariable(&b->cv);
  ReleaseSRWLockExclusive(&table_lock);
}

static int query_local_info(HANDLE h, anypoll__pipe_local_info *info) {
  IO_STATUS_BLOCK iosb;
  return anypoll__nt.query_information_file(
             h, &iosb, info, sizeof *info,
             ANYPOLL_FILE_PIPE_LOCAL_INFORMATION) >= 0;
}

/* Whether a write of ANYPOLL_PIPE_BUF bytes would complete at once.
 * WriteQuotaAvailable is the free space, except that it also drops to zero
 * while the reader has a read pending on an empty pipe (the quota is charged
 * for the pending read), when any write would complete at once. Windows
 * cannot tell "full" from "reader waiting" from the write end, and Wine 8
 * reports zero always, so zero counts as writable: a wrong "writable" makes
 * one write wait for the reader, a wrong "not writable" deadlocks a writer
 * whose reader is waiting for it (git for Windows hit that). */
static int pipe_has_room(const anypoll__pipe_local_info *info) {
  ULONG quota = info->NamedPipeEnd == 0 /* FILE_PIPE_CLIENT_END */
                    ? info->InboundQuota
                    : info->OutboundQuota;
  ULONG avail = info->WriteQuotaAvailable;
  if (avail == 0)
    return 1;
  return avail >= ANYPOLL_PIPE_BUF || avail >= quota;
}

/* The read side from PeekNamedPipe, for a handle that cannot be asked for
 * its local information. */
static short peek_read_side(HANDLE h, short events) {
  DWORD avail = 0;
  if (PeekNamedPipe(h, NULL, 0, NULL, &avail, NULL))
    return avail > 0 ? (short)(events & POLLIN) : 0;
  switch (GetLastError()) {
  case ERROR_BROKEN_PIPE:
    return POLLHUP;
  case ERROR_INVALID_HANDLE:
    return POLLNVAL;
  case ERROR_PIPE_LISTENING:
  case ERROR_BAD_PIPE:
    return 0; /* a named pipe not yet connected is simply not ready */
  default:
    return POLLERR;
  }
}

/* One query answers both sides: the bytes waiting to be read, the room to
 * write, and whether the other end is gone. */
static short info_read_side(const anypoll__pipe_local_info *info,
                            short events) {
  short in = info->ReadDataAvailable > 0 ? (short)(events & POLLIN) : 0;
  switch (info->NamedPipeState) {
  case ANYPOLL_FILE_PIPE_CLOSING_STATE:
    /* Linux reports POLLHUP with POLLIN while data outlives the writer. */
    return (short)(in | POLLHUP);
  case ANYPOLL_FILE_PIPE_DISCONNECTED_STATE:
    return POLLHUP;
  case ANYPOLL_FILE_PIPE_CONNECTED_STATE:
    return in;
  default:
    return 0; /* listening: no client yet */
  }
}

short anypoll__pipe_check(const struct anypoll__item *item, short events) {
  HANDLE h = item->handle;
  short revents = 0;
  /* Guarded even if the handle is asynchronous (not serialised by the I/O
   * manager): finding that out would cost another system call per check. */
  if (peek_begin(h))
    return 0;

  anypoll__pipe_local_info info;
  int have_info = query_local_info(h, &info);
  if (item->readable)
    revents |= have_info ? info_read_side(&info, events)
                         : peek_read_side(h, events);
  if (item->writable && !(revents & (POLLHUP | POLLNVAL))) {
    if (!have_info) {
      /* A handle without FILE_READ_ATTRIBUTES cannot be asked; assume room,
       * as a blocking write is the lesser evil (see pipe_has_room). */
      revents |= events & POLLOUT;
    } else if (info.NamedPipeState == ANYPOLL_FILE_PIPE_CLOSING_STATE) {
      /* The reader is gone: Linux gives POLLERR, with POLLOUT as asked. */
      revents |= POLLERR | (events & POLLOUT);
    } else if ((events & POLLOUT) && pipe_has_room(&info)) {
      revents |= events & POLLOUT;
    }
  }
  peek_end(h);
  return revents;
}

/* ---- Helper-thread reads on synchronous handles ------------------------ */

static void signal_subs(struct watch *w) {
  for (struct anypoll__pipe_sub *s = w->subs; s != NULL; s = s->next)
    SetEvent(s->event);
}

static void helper_read(void *arg) {
  struct watch *w = arg;
  struct bucket *b = bucket_of(w->handle);
  AcquireSRWLockExclusive(&table_lock);
  while (b->peekers > 0 && !w->cancel)
    SleepConditionVariableSRW(&b->cv, &table_lock, INFINITE, 0);
  if (!w->cancel) {
    w->in_read = 1;
    ReleaseSRWLockExclusive(&table_lock);
    char byte;
    DWORD got;
    ReadFile(w->handle, &byte, 0, &got, NULL);
    AcquireSRWLockExclusive(&table_lock);
    w->in_read = 0;
  }
  w->reading = 0;
  /* A cancelled read says nothing about the pipe; but a call that
   * subscribed while the cancel was under way found the read still running
   * and started none of its own, so it is woken to re-check and re-arm. */
  if (!w->cancel || w->users > 0)
    signal_subs(w);
  WakeAllConditionVariable(&b->cv);
  /* A canceller still waiting on w holds a pin, so this frees nothing
   * under it; the canceller releases w once it has seen the read end. */
  watch_release_if_unused(b, w);
  ReleaseSRWLockExclusive(&table_lock);
}

static int arm_sync(struct anypoll__waiter *wt, HANDLE h) {
  struct bucket *b = bucket_of(h);
  struct anypoll__pipe_sub *sub = &wt->pipe_subs[wt->pipe_sub_count];
  AcquireSRWLockExclusive(&table_lock);
  struct watch *w = watch_find(b, h);
  if (w == NULL) {
    w = calloc(1, sizeof *w);
    if (w == NULL) {
      ReleaseSRWLockExclusive(&table_lock);
      errno = ENOMEM;
      return -1;
    }
    w->handle = h;
    w->next = b->head;
    b->head = w;
  }
  if (!w->reading) {
    w->cancel = 0;
    w->reading = 1;
    w->thread = anypoll__pool_run(helper_read, w);
    if (w->thread == NULL) {
      w->reading = 0;
      watch_release_if_unused(b, w);
      ReleaseSRWLockExclusive(&table_lock);
      errno = EAGAIN;
      return -1;
    }
  }
  sub->watch = w;
  sub->event = wt->event;
  sub->next = w->subs;
  w->subs = sub;
  w->users++;
  wt->pipe_sub_count++;
  ReleaseSRWLockExclusive(&table_lock);
  return 0;
}

static void disarm_sync(struct anypoll__pipe_sub *sub) {
  struct watch *w = sub->watch;
  struct bucket *b = bucket_of(w->handle);
  AcquireSRWLockExclusive(&table_lock);
  for (struct anypoll__pipe_sub **p = &w->subs; *p != NULL; p = &(*p)->next) {
    if (*p == sub) {
      *p = sub->next;
      break;
    }
  }
  if (--w->users == 0 && w->reading) {
    w->cancel = 1;
    WakeAllConditionVariable(&b->cv); /* a helper still waiting for peeks */
    /* The pin keeps the helper, which ends the read, from freeing w under
     * us while the lock is released inside the wait. */
    w->pins++;
    while (w->reading && w->users == 0) {
      if (w->in_read)
        CancelSynchronousIo(w->thread);
      SleepConditionVariableSRW(&b->cv, &table_lock, 1, 0);
    }
    w->pins--;
  }
  watch_release_if_unused(b, w);
  ReleaseSRWLockExclusive(&table_lock);
}

/* ---- Overlapped reads on asynchronous handles ------------------------- */

static int arm_async(struct anypoll__waiter *wt, HANDLE h) {
  OVERLAPPED *ov = &wt->overlapped[wt->overlapped_count];
  ZeroMemory(ov, sizeof *ov);
  /* The low bit keeps the completion off any I/O completion port the
   * caller has associated with the handle. */
  ov->hEvent = (HANDLE)((UINT_PTR)wt->event | 1);
  static char byte;
  if (!ReadFile(h, &byte, 0, NULL, ov) && GetLastError() != ERROR_IO_PENDING) {
    /* Broken or otherwise not waitable: let the check report it. */
    wt->failed_arm = 1;
    return 0;
  }
  wt->overlapped_handles[wt->overlapped_count++] = h;
  return 0;
}

static void disarm_async(struct anypoll__waiter *wt, anypoll_nfds_t i) {
  volatile OVERLAPPED *ov = &wt->overlapped[i];
  if (ov->Internal == (ULONG_PTR)STATUS_PENDING)
    CancelIoEx(wt->overlapped_handles[i], (OVERLAPPED *)ov);
  /* The event is shared by all of this call's waits and may already be set
   * by another, so wait on the status word, which the kernel writes when
   * the cancelled read completes (promptly, after CancelIoEx). */
  while (ov->Internal == (ULONG_PTR)STATUS_PENDING)
    WaitForSingleObject(wt->event, 1);
}

/* ---- Interface ---------------------------------------------------------- */

int anypoll__pipe_prepare(struct anypoll__waiter *wt, anypoll_nfds_t sync_pipes,
                          anypoll_nfds_t async_pipes) {
  if (sync_pipes > 0) {
    wt->pipe_subs = calloc(sync_pipes, sizeof *wt->pipe_subs);
    if (wt->pipe_subs == NULL)
      goto nomem;
  }
  if (async_pipes > 0) {
    wt->overlapped = calloc(async_pipes, sizeof *wt->overlapped);
    wt->overlapped_handles = calloc(async_pipes, sizeof(HANDLE));
    if (wt->overlapped == NULL || wt->overlapped_handles == NULL)
      goto nomem;
  }
  return 0;
nomem:
  anypoll__pipe_release(wt);
  errno = ENOMEM;
  return -1;
}

void anypoll__pipe_release(struct anypoll__waiter *wt) {
  free(wt->pipe_subs);
  free(wt->overlapped);
  free(wt->overlapped_handles);
  wt->pipe_subs = NULL;
  wt->overlapped = NULL;
  wt->overlapped_handles = NULL;
}

int anypoll__pipe_arm_async(struct anypoll__waiter *wt,
                            const struct anypoll__item *item) {
  return item->readable && item->async ? arm_async(wt, item->handle) : 0;
}

int anypoll__pipe_arm_sync(struct anypoll__waiter *wt,
                           const struct anypoll__item *item) {
  return item->readable && !item->async ? arm_sync(wt, item->handle) : 0;
}

int anypoll__pipe_completed(const struct anypoll__waiter *wt) {
  if (wt->failed_arm)
    return 1;
  for (anypoll_nfds_t i = 0; i < wt->overlapped_count; i++)
    if (((volatile OVERLAPPED *)&wt->overlapped[i])->Internal !=
        (ULONG_PTR)STATUS_PENDING)
      return 1;
  return 0;
}

void anypoll__pipe_disarm_all(struct anypoll__waiter *wt) {
  for (anypoll_nfds_t i = 0; i < wt->pipe_sub_count; i++)
    disarm_sync(&wt->pipe_subs[i]);
  wt->pipe_sub_count = 0;
  for (anypoll_nfds_t i = 0; i < wt->overlapped_count; i++)
    disarm_async(wt, i);
  wt->overlapped_count = 0;
  wt->failed_arm = 0;
}
