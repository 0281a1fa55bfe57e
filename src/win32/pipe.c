/* SPDX-License-Identifier: MIT */
/* Pipes: readiness checks.
 *
 * Windows has no readiness notification for anonymous pipes; a pipe is
 * asked (its local information, or PeekNamedPipe) through the gate
 * (watch.c), since a read of ours may be pending on it, and the wake-up
 * sources that let a wait sleep meanwhile are pipe_arm.c's (anypoll_poll)
 * and set_pipe.c's (the watch set). */
#include "win.h"

/* POSIX requires PIPE_BUF >= 512; msvcrt defines none. A pipe is reported
 * writable when a write of this size would fit. */
#define ANYPOLL_PIPE_BUF 512

/* ---- Checks ---------------------------------------------------------- */

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
  DWORD avail = 0, error;
  BOOL ok = anypoll__sys_peek_named_pipe(h, &avail, &error);
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
  if (item->u.pipe.readable)
    revents |= have_info ? info_read_side(info, events)
                         : peek_read_side(h, events);
  if (item->u.pipe.writable && !(revents & (POLLHUP | POLLNVAL))) {
    /* A child's stdin whose last write is still pending is full
     * (spawn_stdin.c); its reader's end is known only from the state. */
    int full = anypoll__stdin_busy(h);
    if (full) {
      if (have_info && info->NamedPipeState == ANYPOLL_FILE_PIPE_CLOSING_STATE)
        revents |= POLLERR;
    } else if (!have_info) {
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
  NTSTATUS st = anypoll__sys_pipe_peek(h, &head);
  /* STATUS_BUFFER_OVERFLOW: the head was filled and data follows. */
  return (st >= 0 || st == (NTSTATUS)0x80000005L) &&
         head.NumberOfMessages > 0;
}

static short check(const struct anypoll__item *item, short events,
                   LONG64 skip_call);

/* Asks the pipe now; the caller holds the gate or knows that no read of
 * ours can be pending on it. */
static short check_now(const struct anypoll__item *item, short events) {
  HANDLE h = item->handle;
  anypoll__pipe_local_info info;
  ZeroMemory(&info, sizeof info);
  int have_info = anypoll__sys_pipe_local_info(h, &info);
  short revents = check_with(item, events, have_info, &info);
  if (item->u.pipe.message && item->u.pipe.readable && have_info &&
      info.NamedPipeState == ANYPOLL_FILE_PIPE_CONNECTED_STATE &&
      info.ReadDataAvailable == 0 && zero_length_message_queued(h))
    revents |= anypoll__readable_bits(events);
  return revents;
}

short anypoll__pipe_check(const struct anypoll__item *item, short events) {
  return check(item, events, 0);
}

short anypoll__pipe_check_unarmed(const struct anypoll__item *item,
                                  short events, LONG64 call_id) {
  return check(item, events, item->u.pipe.sole ? call_id : 0);
}

short anypoll__pipe_check_owner(const struct anypoll__item *item,
                                short events, LONG64 skip_owner) {
  return check(item, events, skip_owner);
}

static short check(const struct anypoll__item *item, short events,
                   LONG64 skip_call) {
  /* The classification of this call asked the pipe a moment ago (and no
   * read of ours has run on it since: the first check precedes any arm).
   * A message-type read end needs its peek as well, so it asks again. */
  if (item->u.pipe.have_info && !(item->u.pipe.message && item->u.pipe.readable))
    return check_with(item, events, 1, &item->u.pipe.info);
  HANDLE h = item->handle;
  /* Gated even if the handle is asynchronous (not serialised by the I/O
   * manager): finding that out would cost another system call per check. */
  struct anypoll__gate gate;
  if (anypoll__gate_begin_skip(&gate, h, skip_call)) {
    /* A read of ours is pending on the file object: no data, writer alive.
     * The write side of a full-duplex pipe cannot be asked now; it counts
     * as having room, the policy of pipe_has_room and of handles that
     * cannot be asked below: a wrong "writable" makes one write wait for
     * the reader, a wrong "not writable" would hold a writer up for as long
     * as another call waits (for ever with timeout -1). */
    return item->u.pipe.writable ? (short)(events & POLLOUT) : 0;
  }
  short revents = check_now(item, events);
  anypoll__gate_end(&gate);
  return revents;
}

short anypoll__pipe_check_async(const struct anypoll__item *item,
                                short events) {
  /* No gate: an asynchronous file object has no lock for a read of ours to
   * hold, so this query never waits, and the gate's identity check (one
   * system call per parked read when the handle has company, as an
   * anypoll_pipe end held by a set does) is not needed. */
  return check_now(item, events);
}

/* Whether h was opened for overlapped I/O. Asked only of pipes about to be
 * waited on (by a call, or registered in a set), as the checks do not
 * need it. Goes through the gate: a handle
 * on whose file object a read of ours is pending is synchronous. */
int anypoll__pipe_is_async(HANDLE h) {
  struct anypoll__gate gate;
  if (anypoll__gate_begin(&gate, h))
    return 0; /* our helpers read synchronous file objects only */
  ULONG mode = 0;
  NTSTATUS st = anypoll__sys_mode_information(h, &mode);
  anypoll__gate_end(&gate);
  if (st < 0)
    return 0;
  /* FILE_SYNCHRONOUS_IO_ALERT | FILE_SYNCHRONOUS_IO_NONALERT */
  return (mode & 0x30) == 0;
}

int anypoll__pipe_peer_unwatched(const struct anypoll__item *item,
                                 short events) {
  return item->u.pipe.writable && !item->u.pipe.readable &&
         item->u.pipe.askable && !(events & POLLOUT);
}

/* The revents of a pipe entry for the wait loop's check. After a wake-up
 * (after_wake), an entry whose read was aborted while still pending (quiet)
 * had no data and a live writer at that moment: it reads 0 as of then,
 * which is what a check would have said, unless its write side was asked
 * for. */
short anypoll__pipe_recheck(struct anypoll__item *item, short events,
                            int after_wake) {
  short revents;
  if (after_wake && item->u.pipe.quiet && !(item->u.pipe.writable && (events & POLLOUT)))
    revents = 0;
  else
    revents = anypoll__pipe_check(item, events);
  /* Both hold for one check only. */
  item->u.pipe.have_info = 0;
  item->u.pipe.quiet = 0;
  return revents;
}

/* A pipe read end whose read ended by itself, and which then was not
 * ready, twice in a row, is treated as one whose read cannot block: a read
 * that returns success with no data would otherwise make the helper and
 * the wait loop spin. Once is not enough, as another thread may simply
 * have read the data first. */
void anypoll__pipe_after_round(struct anypoll__item *items,
                               anypoll_nfds_t nfds) {
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    struct anypoll__item *it = &items[i];
    if (it->kind != ANYPOLL_KIND_PIPE)
      continue;
    if (!it->u.pipe.fired)
      it->u.pipe.empty_fires = 0;
    else if (++it->u.pipe.empty_fires >= 2)
      it->u.pipe.no_wait = 1;
    it->u.pipe.fired = 0;
  }
}
