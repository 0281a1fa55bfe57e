/* SPDX-License-Identifier: MIT */
/* Pipes in anypoll_poll: the event-driven wait on read ends, armed for one
 * call and disarmed at its end.
 *
 * A zero-byte ReadFile blocks until data arrives or the writer goes away,
 * and consumes nothing, so a pooled helper thread parked in one is a
 * wake-up source: synchronous read ends subscribe to watch.c's shared
 * helper read (which also explains the file-object lock, and the gate
 * every check in pipe.c goes through). Asynchronous (overlapped) pipe
 * handles get an overlapped zero-byte read instead and need no thread. A
 * read that ends at once with neither data nor end-of-file (PIPE_NOWAIT
 * mode, a server end with no client) makes its entry re-checked on the
 * wait loop's back-off instead, or the helper and the caller would spin. */
#include <errno.h>
#include <stdlib.h>

#include "win.h"

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
  if (!anypoll__sys_duplicate(item->handle, &h)) {
    /* Closed meanwhile, most likely: the check will say. */
    wt->failed_arm = 1;
    return 0;
  }
  OVERLAPPED *ov = &wt->overlapped[wt->overlapped_count];
  ZeroMemory(ov, sizeof *ov);
  /* The low bit keeps the completion off any I/O completion port the
   * caller has associated with the handle. */
  ov->hEvent = (HANDLE)((UINT_PTR)wt->event | 1);
  DWORD error;
  BOOL ok = anypoll__sys_read_zero_overlapped(h, ov, &error);
  if (!ok && error != ERROR_IO_PENDING) {
    /* Broken or otherwise not waitable: let the check report it now; a
     * read that cannot block (PIPE_NOWAIT, no client yet) would fail the
     * same way next round, so the entry is re-checked on the back-off. */
    if (anypoll__watch_read_outcome(FALSE, error) == ANYPOLL_WATCH_NO_WAIT)
      item->u.pipe.no_wait = 1;
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
    anypoll__sys_cancel_io(wt->overlapped_handles[i], (OVERLAPPED *)ov);
  else
    wt->overlapped_items[i]->u.pipe.fired = 1;
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
    wt->overlapped_items[i]->u.pipe.quiet = 1;
}

/* ---- Interface ---------------------------------------------------------- */

/* Works out, once per waiting call, which read ends are asynchronous (a
 * query each, through the gate), and makes room for their reads. */
int anypoll__pipe_prepare(struct anypoll__waiter *wt,
                          struct anypoll__item *items, anypoll_nfds_t nfds) {
  anypoll_nfds_t sync_pipes = 0, async_pipes = 0;
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    if (items[i].kind == ANYPOLL_KIND_PIPE && items[i].u.pipe.readable) {
      if (!items[i].u.pipe.mode_known)
        items[i].u.pipe.async = anypoll__pipe_is_async(items[i].handle);
      if (items[i].u.pipe.async)
        async_pipes++;
      else
        sync_pipes++;
    }
  }
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
                        struct anypoll__item *item) {
  if (!item->u.pipe.no_wait)
    return 0;
  anypoll__want_recheck(wt, item, ANYPOLL_RECHECK_NO_WAIT_MS);
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
                          struct anypoll__item *item, int sync) {
  if (!item->u.pipe.message && !(sync && item->u.pipe.writable))
    return 0;
  anypoll__want_recheck(wt, item, ANYPOLL_RECHECK_UNARMED_MS);
  return 1;
}

int anypoll__pipe_arm_async(struct anypoll__waiter *wt,
                            struct anypoll__item *item) {
  if (!item->u.pipe.readable || !item->u.pipe.async || skip_unarmable(wt, item, 0) ||
      skip_no_wait(wt, item))
    return 0;
  /* An abandoned read still owns a slot of the array: the rest of the call
   * re-checks its overlapped read ends instead of arming them. */
  if (wt->overlapped_abandoned) {
    anypoll__want_recheck(wt, item, ANYPOLL_RECHECK_UNARMED_MS);
    return 0;
  }
  return arm_async(wt, item);
}

int anypoll__pipe_arm_sync(struct anypoll__waiter *wt,
                           struct anypoll__item *item, short events) {
  /* A write end asked for POLLOUT has no notification when room appears;
   * one asked for anything else none when its reader goes, which is
   * POLLERR, reported whatever was asked. */
  if (item->u.pipe.writable && (events & POLLOUT))
    anypoll__want_recheck(wt, item, ANYPOLL_RECHECK_WRITE_MS);
  else if (anypoll__pipe_peer_unwatched(item, events))
    anypoll__want_recheck(wt, item, ANYPOLL_RECHECK_PEER_MS);
  /* Every read end is watched, POLLIN asked or not: its POLLHUP is
   * reported regardless. */
  if (!item->u.pipe.readable || item->u.pipe.async || skip_unarmable(wt, item, 1) ||
      skip_no_wait(wt, item))
    return 0;
  struct anypoll__watch_sub *sub = &wt->pipe_subs[wt->pipe_sub_count];
  sub->event = wt->event;
  sub->notify = NULL;
  sub->ctx = item;
  if (anypoll__watch_subscribe(sub, item->handle, item->u.pipe.sole, wt->call_id) != 0)
    return -1;
  wt->pipe_sub_count++;
  return 0;
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
  anypoll__watch_leave_all(wt->pipe_subs, wt->pipe_sub_count);
  for (anypoll_nfds_t i = 0; i < wt->pipe_sub_count; i++) {
    struct anypoll__watch_sub *sub = &wt->pipe_subs[i];
    struct anypoll__item *item = sub->ctx;
    /* This call stopped the read and saw it end: if the cancel aborted it
     * while pending, the entry had no data and a live writer then. */
    if (sub->quiet)
      item->u.pipe.quiet = 1;
    if (sub->outcome == ANYPOLL_WATCH_NO_WAIT)
      item->u.pipe.no_wait = 1;
    else if (sub->outcome == ANYPOLL_WATCH_FIRED)
      item->u.pipe.fired = 1;
  }
  wt->pipe_sub_count = 0;
  for (anypoll_nfds_t i = 0; i < wt->overlapped_count; i++)
    wait_async(wt, i);
  wt->overlapped_count = 0;
  wt->failed_arm = 0;
}
