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
 * object (PeekNamedPipe, NtQueryInformationFile of any class, GetFileType,
 * getsockopt, another ReadFile) waits for it, from any thread, whatever the
 * handle value it comes through. So:
 *   - one zero-byte read at most per file object, shared by every call that
 *     waits on it through any handle to it (the watch table below; handles
 *     to one file object are recognised with anypoll__same_object);
 *   - every call on a caller's handle goes through the gate: it does not
 *     run while a read of ours is pending on the file object, whose pending
 *     read itself says "synchronous pipe, no data, writer alive";
 *   - a helper does not start its read while a gated call on the same file
 *     object is in progress (calls on other file objects do not hold it);
 *   - the read is cancelled (CancelSynchronousIo) when the last waiting call
 *     returns, so the caller's own reads and CloseHandle never queue behind
 *     it. The cancel can miss if it lands between the helper's decision to
 *     read and its entry into the kernel; the canceller then retries every
 *     millisecond until the helper reports back, which bounds that window.
 * A read that ends at once with neither data nor end-of-file (PIPE_NOWAIT
 * mode, a server end with no client) makes its entry re-checked on the
 * wait loop's back-off instead, or the helper and the caller would spin. */
#include <errno.h>
#include <stdlib.h>

#include "win.h"

/* POSIX requires PIPE_BUF >= 512; msvcrt defines none. A pipe is reported
 * writable when a write of this size would fit. */
#define ANYPOLL_PIPE_BUF 512

#define BUCKET_COUNT 256

/* What a helper's read said when it ended by itself. */
enum {
  OUTCOME_NONE = 0, /* not ended, or cancelled */
  OUTCOME_FIRED,    /* data or end-of-file: the check will tell which */
  OUTCOME_NO_WAIT   /* ended at once with neither (PIPE_NOWAIT, no client
                       yet, ...): this read end cannot be waited on */
};

struct watch {
  struct watch *next; /* bucket chain */
  /* The active list: watches whose helper owns a read (reading). */
  struct watch *act_next, *act_prev;
  HANDLE handle;
  struct anypoll__pipe_sub *subs; /* calls waiting on this file object */
  int users;                      /* length of subs */
  int reading;                    /* a helper owns the zero-byte read */
  int in_read;                    /* ... and may be inside ReadFile */
  int cancel;                     /* the last user left: stop the read */
  int pins;                       /* cancellers waiting for the helper */
  HANDLE thread;                  /* the helper, valid while reading */
  LONG64 owner;                   /* call_id of the call that started it */
  int aborted;   /* the last read ended cancelled while pending: at that
                    moment the pipe had no data and its writer was alive */
  int cancelled; /* a cancel has reached the read (CancelSynchronousIo
                    found it), which will end now: no retry needed */
};

struct anypoll__pipe_sub {
  struct anypoll__pipe_sub *next;
  struct watch *watch;
  struct anypoll__item *item;
  HANDLE event;
  int outcome;
  int cancelling; /* disarming: this sub's call waits for the read to end */
  /* A watch set's registration (set_pipe.c): called instead of setting
   * event when the read ends, under the table lock; it must not wait. */
  anypoll__pipe_notify_fn *notify;
  void *ctx;
};

static SRWLOCK table_lock = SRWLOCK_INIT;
static struct watch *buckets[BUCKET_COUNT];
static struct watch *active;                /* reading watches */
static struct anypoll__gate *queries;       /* gated calls in progress */
static CONDITION_VARIABLE table_cv = CONDITION_VARIABLE_INIT; /* a query
                                     ended, a read ended, or a cancel */

static struct watch **bucket_of(HANDLE h) {
  UINT_PTR v = (UINT_PTR)h >> 2; /* handle values are multiples of 4 */
  return &buckets[(v ^ (v >> 8)) % BUCKET_COUNT];
}

static struct watch *watch_find(HANDLE h) {
  for (struct watch *w = *bucket_of(h); w != NULL; w = w->next)
    if (w->handle == h)
      return w;
  return NULL;
}

/* The reading watch on h's file object under another handle value (a
 * _dup'd descriptor, an inherited or duplicated handle). Asked only while
 * some read of ours is pending, so a single-threaded program never pays
 * for the comparison outside its own arming. skip_call (not 0): reads
 * started by that call are left out (see arm_sync). */
static struct watch *active_same_object(HANDLE h, LONG64 skip_call) {
  for (struct watch *a = active; a != NULL; a = a->act_next)
    if (a->handle != h && (skip_call == 0 || a->owner != skip_call) &&
        anypoll__same_object(a->handle, h))
      return a;
  return NULL;
}

static void set_reading(struct watch *w, int on) {
  if (on) {
    w->reading = 1;
    w->act_prev = NULL;
    w->act_next = active;
    if (active != NULL)
      active->act_prev = w;
    active = w;
  } else {
    w->reading = 0;
    if (w->act_prev != NULL)
      w->act_prev->act_next = w->act_next;
    else
      active = w->act_next;
    if (w->act_next != NULL)
      w->act_next->act_prev = w->act_prev;
    w->act_next = w->act_prev = NULL;
  }
}

static void watch_release_if_unused(struct watch *w) {
  if (w->users != 0 || w->reading || w->pins != 0)
    return;
  for (struct watch **p = bucket_of(w->handle); *p != NULL; p = &(*p)->next) {
    if (*p == w) {
      *p = w->next;
      break;
    }
  }
  free(w);
}

/* ---- The gate ------------------------------------------------------------ */

/* skip_owner (not 0): reads started for that owner on other handle values
 * are not compared (see anypoll__pipe_check_owner). */
static int gate_begin(struct anypoll__gate *g, HANDLE h, LONG64 skip_owner) {
  AcquireSRWLockExclusive(&table_lock);
  struct watch *w = watch_find(h);
  int busy = (w != NULL && w->reading) ||
             active_same_object(h, skip_owner) != NULL;
  if (!busy) {
    g->handle = h;
    g->next = queries;
    queries = g;
  }
  ReleaseSRWLockExclusive(&table_lock);
  return busy;
}

int anypoll__gate_begin(struct anypoll__gate *g, HANDLE h) {
  return gate_begin(g, h, 0);
}

void anypoll__gate_end(struct anypoll__gate *g) {
  AcquireSRWLockExclusive(&table_lock);
  for (struct anypoll__gate **p = &queries; *p != NULL; p = &(*p)->next) {
    if (*p == g) {
      *p = g->next;
      break;
    }
  }
  /* Only helpers wait on the variable, and only while some query is
   * registered: a program without them wakes nobody. */
  if (active != NULL)
    WakeAllConditionVariable(&table_cv);
  ReleaseSRWLockExclusive(&table_lock);
}

/* Whether a gated call is in progress on w's file object: its read must
 * not start yet, or that call would wait behind it. Queries on other file
 * objects do not hold the helper up, even when one of them is itself stuck
 * behind somebody else's read (another thread's or a child's blocking read
 * on an inherited handle). */
static int query_conflicts(const struct watch *w) {
  for (struct anypoll__gate *q = queries; q != NULL; q = q->next)
    if (q->handle == w->handle || anypoll__same_object(q->handle, w->handle))
      return 1;
  return 0;
}

/* ---- Checks ---------------------------------------------------------- */

int anypoll__pipe_query_info(HANDLE h, anypoll__pipe_local_info *info) {
  IO_STATUS_BLOCK iosb;
  anypoll__onh_begin(h, "NtQueryInformationFile(FilePipeLocalInformation)");
  NTSTATUS st = anypoll__nt.query_information_file(
      h, &iosb, info, sizeof *info, ANYPOLL_FILE_PIPE_LOCAL_INFORMATION);
  anypoll__onh_end(h);
  return st >= 0;
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
  anypoll__onh_begin(h, "PeekNamedPipe");
  BOOL ok = PeekNamedPipe(h, NULL, 0, NULL, &avail, NULL);
  DWORD error = ok ? 0 : GetLastError();
  anypoll__onh_end(h);
  if (ok)
    return avail > 0 ? anypoll__readable_bits(events) : 0;
  switch (error) {
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
  short in =
      info->ReadDataAvailable > 0 ? anypoll__readable_bits(events) : 0;
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

/* The revents of a pipe entry, from its local information (have_info) or,
 * for a handle that cannot be asked for it, from PeekNamedPipe. */
static short check_with(const struct anypoll__item *item, short events,
                        int have_info, const anypoll__pipe_local_info *info) {
  HANDLE h = item->handle;
  short revents = 0;
  if (item->readable)
    revents |= have_info ? info_read_side(info, events)
                         : peek_read_side(h, events);
  if (item->writable && !(revents & (POLLHUP | POLLNVAL))) {
    if (!have_info) {
      /* A handle without FILE_READ_ATTRIBUTES cannot be asked; assume room,
       * as a blocking write is the lesser evil (see pipe_has_room). */
      revents |= events & POLLOUT;
    } else if (info->NamedPipeState == ANYPOLL_FILE_PIPE_CLOSING_STATE) {
      /* The reader is gone: Linux gives POLLERR, with POLLOUT as asked. */
      revents |= POLLERR | (events & POLLOUT);
    } else if ((events & POLLOUT) && pipe_has_room(info)) {
      revents |= events & POLLOUT;
    }
  }
  return revents;
}

/* Whether a message is queued on a message-type pipe whose byte count is
 * zero: a zero-length message, which only FSCTL_PIPE_PEEK's
 * NumberOfMessages shows (FILE_PIPE_PEEK_BUFFER; Wine 8 leaves it 0, so
 * there a lone zero-length message is not seen, docs/deviations.md). The
 * peek returns at once; the caller holds the gate. */
static int zero_length_message_queued(HANDLE h) {
  anypoll__pipe_peek_head head;
  ZeroMemory(&head, sizeof head);
  IO_STATUS_BLOCK iosb;
  anypoll__onh_begin(h, "NtFsControlFile(FSCTL_PIPE_PEEK)");
  NTSTATUS st = anypoll__nt.fs_control_file(h, NULL, NULL, NULL, &iosb,
                                            ANYPOLL_FSCTL_PIPE_PEEK, NULL, 0,
                                            &head, sizeof head);
  anypoll__onh_end(h);
  /* STATUS_BUFFER_OVERFLOW: the head was filled and data follows. */
  return (st >= 0 || st == (NTSTATUS)0x80000005L) &&
         head.NumberOfMessages > 0;
}

short anypoll__pipe_check(const struct anypoll__item *item, short events) {
  return anypoll__pipe_check_owner(item, events, 0);
}

short anypoll__pipe_check_owner(const struct anypoll__item *item,
                                short events, LONG64 skip_owner) {
  /* The classification of this call asked the pipe a moment ago (and no
   * read of ours has run on it since: the first check precedes any arm).
   * A message-type read end needs its peek as well, so it asks again. */
  if (item->have_info && !(item->message && item->readable))
    return check_with(item, events, 1, &item->info);
  HANDLE h = item->handle;
  /* Gated even if the handle is asynchronous (not serialised by the I/O
   * manager): finding that out would cost another system call per check. */
  struct anypoll__gate gate;
  if (gate_begin(&gate, h, skip_owner)) {
    /* A read of ours is pending on the file object: no data, writer alive.
     * The write side of a full-duplex pipe cannot be asked now; it counts
     * as having room, the policy of pipe_has_room and of handles that
     * cannot be asked below: a wrong "writable" makes one write wait for
     * the reader, a wrong "not writable" would hold a writer up for as long
     * as another call waits (for ever with timeout -1). */
    return item->writable ? (short)(events & POLLOUT) : 0;
  }
  anypoll__pipe_local_info info;
  ZeroMemory(&info, sizeof info);
  int have_info = anypoll__pipe_query_info(h, &info);
  short revents = check_with(item, events, have_info, &info);
  if (item->message && item->readable && have_info &&
      info.NamedPipeState == ANYPOLL_FILE_PIPE_CONNECTED_STATE &&
      info.ReadDataAvailable == 0 && zero_length_message_queued(h))
    revents |= anypoll__readable_bits(events);
  anypoll__gate_end(&gate);
  return revents;
}

/* ---- Helper-thread reads on synchronous handles ------------------------ */

static void signal_subs(struct watch *w, int outcome) {
  for (struct anypoll__pipe_sub *s = w->subs; s != NULL; s = s->next) {
    s->outcome = outcome;
    if (s->notify != NULL)
      s->notify(s->ctx, outcome == OUTCOME_NO_WAIT);
    else
      SetEvent(s->event);
  }
}

static int read_outcome(BOOL ok, DWORD error) {
  if (ok)
    return OUTCOME_FIRED;
  switch (error) {
  case ERROR_OPERATION_ABORTED:
    return OUTCOME_NONE;
  case ERROR_BROKEN_PIPE:
  case ERROR_INVALID_HANDLE:
    return OUTCOME_FIRED;
  default:
    /* ERROR_NO_DATA (PIPE_NOWAIT), ERROR_PIPE_LISTENING (a server end
     * with no client), and whatever else ends a read at once without data
     * or end-of-file: reading again would end at once again. */
    return OUTCOME_NO_WAIT;
  }
}

static void helper_read(void *arg) {
  struct watch *w = arg;
  int outcome = OUTCOME_NONE;
  AcquireSRWLockExclusive(&table_lock);
  while (!w->cancel && query_conflicts(w))
    SleepConditionVariableSRW(&table_cv, &table_lock, INFINITE, 0);
  if (!w->cancel) {
    w->in_read = 1;
    ReleaseSRWLockExclusive(&table_lock);
    char byte;
    DWORD got;
    anypoll__onh_read_begin(w->handle);
    BOOL ok = ReadFile(w->handle, &byte, 0, &got, NULL);
    DWORD error = ok ? 0 : GetLastError();
    anypoll__onh_read_end(w->handle);
    outcome = read_outcome(ok, error);
    AcquireSRWLockExclusive(&table_lock);
    w->in_read = 0;
    w->aborted = !ok && error == ERROR_OPERATION_ABORTED;
  }
  set_reading(w, 0);
  /* A cancelled read says nothing about the pipe; but a call that
   * subscribed while the cancel was under way found the read still running
   * and started none of its own, so it is woken to re-check and re-arm. */
  if (!w->cancel)
    signal_subs(w, outcome);
  else if (w->users > 0)
    signal_subs(w, OUTCOME_NONE);
  WakeAllConditionVariable(&table_cv);
  /* A canceller still waiting on w holds a pin, so this frees nothing
   * under it; the canceller releases w once it has seen the read end. */
  watch_release_if_unused(w);
  ReleaseSRWLockExclusive(&table_lock);
}

/* Subscribes sub to the read on item's file object, starting one if none
 * is running; under the table lock. skip_call: see active_same_object. */
static int subscribe(struct anypoll__pipe_sub *sub, struct anypoll__item *item,
                     LONG64 call_id, LONG64 skip_call) {
  HANDLE h = item->handle;
  /* One read per file object: a second one would queue behind the first
   * for the file-object lock, where CancelSynchronousIo cannot reach it.
   * A duplicate of a handle already being read shares that read. */
  struct watch *w = watch_find(h);
  if (w == NULL || !w->reading) {
    /* A handle that was the only one to its object when this call
     * classified it cannot share a file object with another entry of the
     * call: a duplicate made since (by another thread) can only have been
     * armed by another call, so only other calls' reads are compared. This
     * keeps a call on N sole pipes from making N*(N-1)/2 comparisons (each
     * a system call) while it arms them. */
    struct watch *other = active_same_object(h, skip_call);
    if (other != NULL)
      w = other;
  }
  if (w == NULL) {
    w = calloc(1, sizeof *w);
    if (w == NULL) {
      errno = ENOMEM;
      return -1;
    }
    w->handle = h;
    struct watch **b = bucket_of(h);
    w->next = *b;
    *b = w;
  }
  if (!w->reading) {
    w->cancel = 0;
    w->cancelled = 0;
    w->aborted = 0;
    w->owner = call_id;
    set_reading(w, 1);
    w->thread = anypoll__pool_run(helper_read, w);
    if (w->thread == NULL) {
      set_reading(w, 0);
      watch_release_if_unused(w);
      errno = EAGAIN;
      return -1;
    }
  }
  sub->watch = w;
  sub->item = item;
  sub->outcome = OUTCOME_NONE;
  sub->next = w->subs;
  w->subs = sub;
  w->users++;
  return 0;
}

static int arm_sync(struct anypoll__waiter *wt, struct anypoll__item *item) {
  struct anypoll__pipe_sub *sub = &wt->pipe_subs[wt->pipe_sub_count];
  sub->event = wt->event;
  sub->notify = NULL;
  AcquireSRWLockExclusive(&table_lock);
  int r = subscribe(sub, item, wt->call_id, item->sole ? wt->call_id : 0);
  if (r == 0)
    wt->pipe_sub_count++;
  ReleaseSRWLockExclusive(&table_lock);
  return r;
}

/* Disarming is done for all of a call's reads at once: every read whose
 * last user this call was is cancelled first, and the call then waits once
 * for all of them to end, instead of one cancel-and-wait round trip per
 * pipe. Under the table lock throughout, except inside the waits. Every
 * watch the call touches is pinned until the end: while the lock is
 * released inside the wait, another call that shared one of them (or its
 * helper) could otherwise free it, and this call would then free it again
 * (seen as heap corruption in stress_concurrent_pollers under Wine). */
/* The disarm's retries of a cancel that found no I/O: the wait between two
 * doubles from 1 ms, and after about ANYPOLL_CANCEL_RETRY_MS in all the
 * call stops waiting (see disarm_sync_all). */
#define ANYPOLL_CANCEL_RETRY_MS 100

ANYPOLL__INTERNAL volatile LONG anypoll__test_cancel_misses;
ANYPOLL__INTERNAL volatile LONG anypoll__test_cancel_tries;

/* CancelSynchronousIo on a helper; the tests' fault hook can make it miss,
 * as it does on Windows when the helper's read is queued for the file
 * object's lock behind a read that is not ours (no I/O request exists yet
 * to cancel), which Wine, lacking that lock, cannot show. */
static BOOL cancel_helper(HANDLE thread) {
  InterlockedIncrement(&anypoll__test_cancel_tries);
  if (anypoll__test_cancel_misses != 0) {
    SetLastError(ERROR_NOT_FOUND);
    return FALSE;
  }
  return CancelSynchronousIo(thread);
}

static void disarm_sync_all(struct anypoll__pipe_sub *subs,
                            anypoll_nfds_t count) {
  if (count == 0)
    return;
  AcquireSRWLockExclusive(&table_lock);
  int waiting = 0;
  for (anypoll_nfds_t i = 0; i < count; i++) {
    struct anypoll__pipe_sub *sub = &subs[i];
    struct watch *w = sub->watch;
    for (struct anypoll__pipe_sub **p = &w->subs; *p != NULL;
         p = &(*p)->next) {
      if (*p == sub) {
        *p = sub->next;
        break;
      }
    }
    w->pins++;
    sub->cancelling = 0;
    if (--w->users == 0 && w->reading) {
      w->cancel = 1;
      if (w->in_read && cancel_helper(w->thread))
        w->cancelled = 1;
      sub->cancelling = 1;
      waiting = 1;
    }
  }
  if (waiting) {
    WakeAllConditionVariable(&table_cv); /* helpers waiting for queries */
    /* A cancel can land before the helper enters ReadFile and find no I/O
     * to cancel; it is repeated until one finds the read (once found, the
     * read ends: no more cancels, which would each be a system call for
     * nothing) and the helper is back. A watch that another call
     * subscribed to meanwhile (users > 0) keeps its read.
     *
     * The retries are bounded. On Windows a cancel also finds nothing
     * while the helper's read is queued for the file object's lock behind
     * a synchronous read that is not ours (the program's own blocking
     * ReadFile through a handle we did not see, another process's): no
     * request exists until the lock is granted, so retrying every
     * millisecond would spin for as long as that read lasts. The wait
     * between retries doubles from 1 ms; after ANYPOLL_CANCEL_RETRY_MS the
     * call stops waiting and leaves the helper detached: its watch keeps
     * "cancel" set, so when its read ends (data, end-of-file) it signals
     * no call of ours and frees the watch, and a later call on the pipe
     * shares the read and retries the cancel when it leaves. The entry is
     * reported not ready, as the gate answers while a read is pending
     * (docs/windows-design.md, The cancellation race). The race of a
     * helper about to enter ReadFile is a few instructions wide and is
     * always closed well within the bound. */
    DWORD pause = 1;
    /* Real time, not the sum of the pauses: a wait on the variable ends
     * early whenever any read or query ends. */
    ULONGLONG start = GetTickCount64();
    for (;;) {
      int pending = 0;
      for (anypoll_nfds_t i = 0; i < count; i++) {
        struct watch *w = subs[i].watch;
        if (subs[i].cancelling && w->reading && w->users == 0) {
          pending = 1;
          if (w->in_read && !w->cancelled && cancel_helper(w->thread))
            w->cancelled = 1;
        }
      }
      if (!pending || GetTickCount64() - start >= ANYPOLL_CANCEL_RETRY_MS)
        break;
      SleepConditionVariableSRW(&table_cv, &table_lock, pause, 0);
      if (pause < 32)
        pause *= 2;
    }
  }
  for (anypoll_nfds_t i = 0; i < count; i++) {
    struct anypoll__pipe_sub *sub = &subs[i];
    /* This call stopped the read and saw it end: if the cancel aborted it
     * while pending, the entry had no data and a live writer then. */
    if (sub->cancelling && !sub->watch->reading && sub->watch->aborted)
      sub->item->quiet = 1;
    sub->watch->pins--;
    if (sub->outcome == OUTCOME_NO_WAIT)
      sub->item->no_wait = 1;
    else if (sub->outcome == OUTCOME_FIRED)
      sub->item->fired = 1;
  }
  /* Freed only now, once all pins are gone: two entries of one call can
   * share a watch. */
  for (anypoll_nfds_t i = 0; i < count; i++) {
    struct watch *w = subs[i].watch;
    if (w == NULL)
      continue;
    for (anypoll_nfds_t k = i; k < count; k++)
      if (subs[k].watch == w)
        subs[k].watch = NULL;
    watch_release_if_unused(w);
  }
  ReleaseSRWLockExclusive(&table_lock);
}

/* ---- Persistent reads for the watch set ---------------------------------
 * A registration of a set (set_pipe.c) keeps one subscription for as long
 * as it is registered, so that the program's other waits (anypoll_poll, or
 * another set) share its read and never cancel it, and the gate knows about
 * it. */

int anypoll__pipe_watch_arm(struct anypoll__pipe_sub **subp,
                            struct anypoll__item *item,
                            anypoll__pipe_notify_fn *fn, void *ctx,
                            LONG64 owner, LONG64 skip_owner) {
  struct anypoll__pipe_sub *sub = *subp;
  if (sub == NULL) {
    sub = calloc(1, sizeof *sub);
    if (sub == NULL) {
      errno = ENOMEM;
      return -1;
    }
    sub->notify = fn;
    sub->ctx = ctx;
  }
  int r = 0;
  AcquireSRWLockExclusive(&table_lock);
  struct watch *w = sub->watch;
  if (w != NULL && w->reading) {
    /* Started again by another wait since ours ended: ours is that one. */
  } else {
    if (w != NULL) {
      /* Our last read ended: look again for a read on the file object
       * (another handle's may be running) before starting one. */
      for (struct anypoll__pipe_sub **p = &w->subs; *p != NULL;
           p = &(*p)->next) {
        if (*p == sub) {
          *p = sub->next;
          break;
        }
      }
      w->users--;
      sub->watch = NULL;
      watch_release_if_unused(w);
    }
    r = subscribe(sub, item, owner, skip_owner);
  }
  ReleaseSRWLockExclusive(&table_lock);
  if (r != 0 && *subp == NULL) {
    free(sub);
    return -1;
  }
  *subp = sub;
  return r;
}

void anypoll__pipe_watch_stop(struct anypoll__pipe_sub *sub) {
  if (sub == NULL)
    return;
  if (sub->watch != NULL)
    disarm_sync_all(sub, 1);
  free(sub);
}

/* ---- Overlapped reads on asynchronous handles ------------------------- */

static int arm_async(struct anypoll__waiter *wt, struct anypoll__item *item) {
  /* The read goes through a private duplicate of the caller's handle (the
   * object manager makes it; the file object's lock is not involved). If
   * another thread of the program closes its handle while the read is
   * pending, and the file object lives on through another handle of the
   * program, a CancelIoEx through the closed handle value could no longer
   * reach the read, and the call could not return before the read ended
   * by itself. Through our own handle it always can. Costs a
   * DuplicateHandle and a CloseHandle per overlapped read end and round. */
  HANDLE h;
  if (!DuplicateHandle(GetCurrentProcess(), item->handle, GetCurrentProcess(),
                       &h, 0, FALSE, DUPLICATE_SAME_ACCESS)) {
    /* Closed meanwhile, most likely: the check will say. */
    wt->failed_arm = 1;
    return 0;
  }
  OVERLAPPED *ov = &wt->overlapped[wt->overlapped_count];
  ZeroMemory(ov, sizeof *ov);
  /* The low bit keeps the completion off any I/O completion port the
   * caller has associated with the handle. */
  ov->hEvent = (HANDLE)((UINT_PTR)wt->event | 1);
  static char byte;
  /* An asynchronous file object has no file-object lock; announced all the
   * same, so that the model sees every call on a caller's handle. */
  anypoll__onh_begin(h, "ReadFile(overlapped)");
  BOOL ok = ReadFile(h, &byte, 0, NULL, ov);
  DWORD error = ok ? 0 : GetLastError();
  anypoll__onh_end(h);
  if (!ok && error != ERROR_IO_PENDING) {
    /* Broken or otherwise not waitable: let the check report it now; a
     * read that cannot block (PIPE_NOWAIT, no client yet) would fail the
     * same way next round, so the entry is re-checked on the back-off. */
    if (read_outcome(FALSE, error) == OUTCOME_NO_WAIT)
      item->no_wait = 1;
    wt->failed_arm = 1;
    CloseHandle(h);
    return 0;
  }
  wt->overlapped_handles[wt->overlapped_count] = h;
  wt->overlapped_items[wt->overlapped_count++] = item;
  return 0;
}

static void cancel_async(struct anypoll__waiter *wt, anypoll_nfds_t i) {
  volatile OVERLAPPED *ov = &wt->overlapped[i];
  if (ov->Internal == (ULONG_PTR)STATUS_PENDING)
    CancelIoEx(wt->overlapped_handles[i], (OVERLAPPED *)ov);
  else
    wt->overlapped_items[i]->fired = 1;
}

/* How long a disarm waits for one cancelled overlapped read to complete. */
#define ANYPOLL_CANCEL_WAIT_MS 1000

static void wait_async(struct anypoll__waiter *wt, anypoll_nfds_t i) {
  volatile OVERLAPPED *ov = &wt->overlapped[i];
  /* The event is shared by all of this call's waits and may already be set
   * by another, so wait on the status word, which the kernel writes when
   * the cancelled read completes (promptly, after CancelIoEx through our
   * own handle). The wait between looks doubles from 1 ms, and the whole
   * wait is bounded: a read that does not complete is abandoned, with its
   * OVERLAPPED left allocated for the kernel to write into (a leak of one
   * array, for a driver that ignores cancels), rather than holding the
   * call for ever or spinning. */
  DWORD pause = 1;
  ULONGLONG start = GetTickCount64();
  while (ov->Internal == (ULONG_PTR)STATUS_PENDING) {
    if (GetTickCount64() - start >= ANYPOLL_CANCEL_WAIT_MS) {
      wt->overlapped_abandoned = 1;
      break;
    }
    WaitForSingleObject(wt->event, pause);
    if (pause < 64)
      pause *= 2;
  }
  /* Closing our duplicate while the read is still pending would leave the
   * file object's cleanup to cancel it; once abandoned, it is kept. */
  if (ov->Internal != (ULONG_PTR)STATUS_PENDING)
    CloseHandle(wt->overlapped_handles[i]);
  /* Cancelled while pending: no data, writer alive, at that moment. */
  if (ov->Internal == (ULONG_PTR)ANYPOLL_STATUS_CANCELLED)
    wt->overlapped_items[i]->quiet = 1;
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
    wt->overlapped_items = calloc(async_pipes, sizeof *wt->overlapped_items);
    wt->overlapped_handles =
        calloc(async_pipes, sizeof *wt->overlapped_handles);
    if (wt->overlapped == NULL || wt->overlapped_items == NULL ||
        wt->overlapped_handles == NULL)
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
  if (!wt->overlapped_abandoned)
    free(wt->overlapped);
  free(wt->overlapped_items);
  free(wt->overlapped_handles);
  wt->pipe_subs = NULL;
  wt->overlapped = NULL;
  wt->overlapped_items = NULL;
  wt->overlapped_handles = NULL;
}

/* A read end whose read cannot block is re-checked on the back-off. */
static int skip_no_wait(struct anypoll__waiter *wt,
                        const struct anypoll__item *item) {
  if (!item->no_wait)
    return 0;
  anypoll__want_recheck(wt, ANYPOLL_RECHECK_NO_WAIT_MS);
  return 1;
}

/* Read ends on which no read of ours may be armed at all, re-checked on
 * the back-off instead:
 *   - a message-type pipe: a zero-byte read (synchronous or overlapped)
 *     completes by consuming a zero-length message, which the program
 *     would then never read;
 *   - a synchronous handle that can also write (a duplex named pipe): the
 *     parked read would hold the file-object lock, and the program's own
 *     WriteFile on that handle, from another thread, would wait until data
 *     arrives. A read of ours must never delay a call of the program. */
static int skip_unarmable(struct anypoll__waiter *wt,
                          const struct anypoll__item *item, int sync) {
  if (!item->message && !(sync && item->writable))
    return 0;
  anypoll__want_recheck(wt, ANYPOLL_RECHECK_UNARMED_MS);
  return 1;
}

int anypoll__pipe_arm_async(struct anypoll__waiter *wt,
                            struct anypoll__item *item) {
  if (!item->readable || !item->async || skip_unarmable(wt, item, 0) ||
      skip_no_wait(wt, item))
    return 0;
  /* An abandoned read still owns a slot of the array: the rest of the call
   * re-checks its overlapped read ends instead of arming them. */
  if (wt->overlapped_abandoned) {
    anypoll__want_recheck(wt, ANYPOLL_RECHECK_UNARMED_MS);
    return 0;
  }
  return arm_async(wt, item);
}

int anypoll__pipe_arm_sync(struct anypoll__waiter *wt,
                           struct anypoll__item *item) {
  if (!item->readable || item->async || skip_unarmable(wt, item, 1) ||
      skip_no_wait(wt, item))
    return 0;
  return arm_sync(wt, item);
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
  /* The overlapped reads' cancels go out first, so that they complete
   * while the helpers are being stopped. */
  for (anypoll_nfds_t i = 0; i < wt->overlapped_count; i++)
    cancel_async(wt, i);
  disarm_sync_all(wt->pipe_subs, wt->pipe_sub_count);
  wt->pipe_sub_count = 0;
  for (anypoll_nfds_t i = 0; i < wt->overlapped_count; i++)
    wait_async(wt, i);
  wt->overlapped_count = 0;
  wt->failed_arm = 0;
}
