/* SPDX-License-Identifier: MIT */
/* The watch set's wait on Windows (set.c's head says how the set works):
 * the checks of what is on the check list, each kind's check and arm, the
 * fairness between the check list and the port, and the sleep in
 * GetQueuedCompletionStatusEx. */
#include <errno.h>

#include "set_win.h"

/* How many packets a removal should ask the port for, under the lock: as
 * many as can be there. Every packet that can be in the port is one we
 * posted and counted first (s->queued), or the one packet of an AFD poll
 * or an anypoll_pipe read in flight (s->afd_out, each yields exactly one,
 * cancelled or not, and is counted until its packet is taken). Asking for
 * that many takes all of them and no more: a larger count costs nothing on
 * Windows, but under Wine NtRemoveIoCompletionEx then makes one more
 * remove_completion request only to find the port empty. (Idle
 * registrations' polls and reads are in flight too, so with any of them
 * the count is above what is there and Wine's extra request stays: it is
 * a Wine artefact, one request the Windows call does not make.) 0: the port is
 * known to be empty (a post counted but not yet made is as if it came just
 * after). A packet of someone else's request on an associated handle
 * (set_anypipe.c) is not counted; it is dropped by a later removal. */
static ULONG iocp_port_count(const struct anypoll__set *s) {
  LONG64 n = (LONG64)s->queued + s->afd_out;
  return n <= 0                         ? 0
         : n >= ANYPOLL_SET_DEQUEUE_MAX ? ANYPOLL_SET_DEQUEUE_MAX
                                        : (ULONG)n;
}

/* ---- Per kind --------------------------------------------------------------- */

/* revents now, or -1 when only the armed source can tell. */
static int iocp_check(struct anypoll__reg *r) {
  short ev = (short)(r->events & 0xffff);
  if (r->item.kind == ANYPOLL_KIND_PIPE)
    ANYPOLL_SET_MODEL_REGISTERED(r);
  /* A descriptor closed while registered (against the header's rule): the
   * handle value of the add may already name something else (Windows and
   * Wine hand out the lowest free value again at once), and asking that
   * object would report its state as the entry's. The C runtime's table,
   * read without a system call, tells: the number no longer maps to the
   * handle of the add, so it is POLLNVAL, as anypoll_poll says of a closed
   * number. */
  if (anypoll__sys_os_handle(r->fd) != (intptr_t)r->item.handle)
    return POLLNVAL;
  switch (r->item.kind) {
  case ANYPOLL_KIND_PIPE:
    return anypoll__set_pipe_check(r);
  case ANYPOLL_KIND_SOCKET:
    return anypoll__set_socket_check(r);
  case ANYPOLL_KIND_CONSOLE_IN:
  case ANYPOLL_KIND_CONSOLE_OUT:
    return anypoll__set_console_check(r);
  case ANYPOLL_KIND_INVALID:
    return POLLNVAL;
  default:
    return anypoll__file_check(&r->item, ev);
  }
}

static int iocp_arm(struct anypoll__reg *r) {
  switch (r->item.kind) {
  case ANYPOLL_KIND_PIPE:
    return anypoll__set_pipe_arm(r);
  case ANYPOLL_KIND_SOCKET:
    return anypoll__set_socket_arm(r);
  case ANYPOLL_KIND_CONSOLE_IN:
  case ANYPOLL_KIND_CONSOLE_OUT:
    return anypoll__set_console_arm(r);
  default:
    return 0; /* always ready: never armed */
  }
}

/* Checks what is on the check list (after the queued registrations have
 * joined it), from `from` (NULL: the head) to `last` (NULL: the entry that
 * is last when it starts), once each, so a ready one moved to the tail is
 * not reported twice: reports the ready ones into out and arms the others.
 * When out is full the rest stay where they are, ahead of the reported
 * ones, for the next wait (fairness). *requeued, if still NULL, gets the
 * first entry this run put back at the tail (reported, level-triggered).
 * Sets *port_armed when an armed source answers through the port even if
 * the registration is ready now (a socket's AFD poll). */
static int iocp_run_checks(struct anypoll__set *s, struct anypoll_event *out,
                           int max, int *port_armed, struct anypoll__reg *from,
                           struct anypoll__reg *last,
                           struct anypoll__reg **requeued) {
  while (s->update_head != NULL) {
    struct anypoll__reg *r = s->update_head;
    anypoll__set_update_remove(s, r);
    if (!r->disabled)
      anypoll__set_check_push(s, r);
  }
  int n = 0;
  if (last == NULL)
    last = s->check_tail;
  struct anypoll__reg *r = from != NULL ? from : s->check_head;
  while (n < max && r != NULL) {
    struct anypoll__reg *next = r == last ? NULL : r->check_next;
    anypoll__set_check_remove(s, r);
    /* Once closed, POLLNVAL until the del, even when the number or the
     * handle value is taken by something else since (a file, a pipe),
     * which a check would otherwise report as this entry. */
    int revents = r->nval ? POLLNVAL : iocp_check(r);
    if (revents == POLLNVAL)
      r->nval = 1;
    r->fresh = 0;
    int requeue = 0;
    if (revents > 0) {
      out[n].fd = r->fd;
      out[n].events = (unsigned)revents;
      out[n].data = r->data;
      n++;
      if (r->events & ANYPOLL_ONESHOT)
        r->disabled = 1;
      else
        requeue = 1;
    } else {
      if (revents < 0)
        *port_armed = 1;
      if (iocp_arm(r) != 0) {
        /* The source could not be armed (out of threads or handles): say
         * so through the entry, as poll reports what it cannot watch. */
        out[n].fd = r->fd;
        out[n].events = POLLERR;
        out[n].data = r->data;
        n++;
        requeue = 1;
      }
    }
    if (requeue) {
      anypoll__set_check_push(s, r);
      if (*requeued == NULL)
        *requeued = r;
    }
    r = next;
  }
  return n;
}

/* Moves the entries from `first` to the tail so that they come just before
 * `before` (on the list, ahead of first). */
static void iocp_check_move_before(struct anypoll__set *s,
                                   struct anypoll__reg *first,
                                   struct anypoll__reg *before) {
  struct anypoll__reg *end = s->check_tail;
  /* Cut [first .. end] off the tail. */
  s->check_tail = first->check_prev;
  s->check_tail->check_next = NULL;
  /* ... and splice it in before `before`. */
  first->check_prev = before->check_prev;
  if (before->check_prev != NULL)
    before->check_prev->check_next = first;
  else
    s->check_head = first;
  end->check_next = before;
  before->check_prev = end;
}

int anypoll__set_iocp_wait(void *state, struct anypoll_event *out, int max,
                           int timeout_ms) {
  struct anypoll__set *s = state;
  /* The clock and the rounding (up: never early) the other set backends
   * use (src/set.c). */
  long long deadline =
      timeout_ms > 0 ? anypoll__now_us() + (long long)timeout_ms * 1000 : 0;
  int result;
  AcquireSRWLockExclusive(&s->lock);
  int drained = 0; /* the last removal emptied the port */
  int shared_armed = 0; /* this wait reads the shared pipes (set_shared.c) */
  anypoll__set_shared_due(s);
  for (;;) {
    int port_armed = 0;
    struct anypoll__reg *requeued = NULL;
    int n = iocp_run_checks(s, out, max, &port_armed, NULL, NULL, &requeued);
    ULONG look = iocp_port_count(s);
    if (n > 0 && (port_armed || !drained) && look > 0) {
      /* What is in the port must get its turn too, also when the check
       * list alone filled out. Before any sleep, the ready entries came
       * from the check list alone (entries that stay ready: a closed
       * descriptor, a file, a pipe with data, a write end with room), and
       * without this look at the port they would be all that any wait
       * ever reports while they stay ready, starving every entry whose
       * wake-up comes through the port. And a socket reported by the last
       * wait was re-armed to be checked again: if it is still ready its
       * packet is already in the port, and level-triggering wants it in
       * this report too. The entries the packets bring became ready before
       * this wait put its reported ones back at the tail, so they go ahead
       * of those (round-robin: every ready entry within ceil(ready/max)
       * waits), and are checked now if out has room. A removal that
       * emptied the port (it got fewer packets than it asked for) needs no
       * second look, nor does a port known to be empty (look == 0): one
       * request fewer per woken wait under Wine. The port is emptied in
       * batches of at most ANYPOLL_SET_DEQUEUE_MAX, also when out is full:
       * the packets beyond one batch would otherwise wait behind the
       * entries reported now (set_many_ready_in_one_wait_and_fair). */
      for (;;) {
        OVERLAPPED_ENTRY e[ANYPOLL_SET_DEQUEUE_MAX];
        ULONG got = 0;
        struct anypoll__reg *mark = s->check_tail;
        if (!GetQueuedCompletionStatusEx(s->port, e, look, &got, 0, FALSE))
          break;
        for (ULONG i = 0; i < got; i++)
          anypoll__set_take_packet(s, &e[i]);
        struct anypoll__reg *from =
            mark != NULL ? mark->check_next : s->check_head;
        if (from != NULL) {
          struct anypoll__reg *end = s->check_tail;
          if (requeued != NULL)
            iocp_check_move_before(s, from, requeued);
          if (n < max)
            n += iocp_run_checks(s, out + n, max - n, &port_armed, from, end,
                                 &requeued);
        }
        if (got < look || (look = iocp_port_count(s)) == 0)
          break;
      }
    }
    if (n > 0) {
      /* Ready ones left over, or reported ones that stay ready: another
       * waiter asleep in the port should look too. */
      if (s->check_head != NULL)
        anypoll__set_wake_one(s);
      result = n;
      break;
    }
    DWORD ms = timeout_ms < 0
                   ? INFINITE
                   : (DWORD)anypoll__set_remaining_ms(timeout_ms, deadline);
    /* As many packets as are known to be there, at least one: a wait that
     * must sleep takes the packet that wakes it and every other one posted
     * by then, and no empty removal follows under Wine (see
     * iocp_port_count). Fairness is kept: nothing known to be in the port
     * is left behind by a removal, and what was not taken (posted after
     * the count was read) is looked for before returning (drained stays 0
     * when the removal got all it asked for). */
    ULONG want = iocp_port_count(s);
    if (want == 0)
      want = 1;
    /* Shared pipes are read only while a wait sleeps (set_shared.c); a
     * wait that does not sleep reads none. */
    if (ms != 0)
      anypoll__set_shared_sleep(s, &shared_armed);
    s->waiters++;
    ReleaseSRWLockExclusive(&s->lock);
    OVERLAPPED_ENTRY e[ANYPOLL_SET_DEQUEUE_MAX];
    ULONG got = 0;
    BOOL ok = GetQueuedCompletionStatusEx(s->port, e, want, &got, ms, TRUE);
    DWORD error = ok ? 0 : GetLastError();
    AcquireSRWLockExclusive(&s->lock);
    s->waiters--;
    if (!ok) {
      if (error == WAIT_IO_COMPLETION) {
        errno = EINTR;
        result = -1;
        break;
      }
      if (error != WAIT_TIMEOUT) {
        result = anypoll__set_errno_win(error);
        break;
      }
      if (ms == 0 || (timeout_ms >= 0 &&
                      anypoll__set_remaining_ms(timeout_ms, deadline) == 0)) {
        result = 0;
        break;
      }
      continue;
    }
    drained = got < want;
    for (ULONG i = 0; i < got; i++)
      anypoll__set_take_packet(s, &e[i]);
    if (ms == 0 && s->check_head == NULL) {
      result = 0;
      break;
    }
  }
  /* No read of ours stays on a shared pipe once the last wait returns. */
  anypoll__set_shared_end(s, shared_armed);
  ReleaseSRWLockExclusive(&s->lock);
  return result;
}
