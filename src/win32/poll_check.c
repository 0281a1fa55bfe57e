/* SPDX-License-Identifier: MIT */
/* The checks of one anypoll_poll call (poll.c): every entry, through its
 * kind's check, before the first wait and after each wake-up; and, on a
 * back-off round, only the entries that could not be armed. Apart from the
 * wait loop, which decides when to check and what a result means for the
 * wait; this file only asks each kind what is ready now. */
#include "win.h"

/* Checks every entry. After a wake-up (w not NULL), entries whose wake-up
 * source was cancelled while still pending are left out (pipe.c decides
 * for pipes): sockets whose AFD poll was cancelled (w->sockets_quiet) had
 * none of the events asked, and read 0 as of then, which is what a check
 * would have said at that moment. Only what fired, and what has no wake-up
 * source (write ends, reads that cannot block, consoles), is asked again.
 * After the deadline (late), these last ones are not: the back-off found
 * them not ready one pause ago, and asking N message pipes again (two
 * system calls each) put up to 400 ms after a 1 s deadline under Wine. */
int anypoll__check_entries(struct pollfd *fds, struct anypoll__item *items,
                           anypoll_nfds_t nfds,
                           const struct anypoll__waiter *w, int late) {
  if (w != NULL && w->sockets_quiet) {
    for (anypoll_nfds_t i = 0; i < nfds; i++)
      if (items[i].kind == ANYPOLL_KIND_SOCKET)
        fds[i].revents = 0;
  } else if (anypoll__socket_check(fds, items, nfds) != 0) {
    return -1;
  }
  int ready = 0;
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    struct anypoll__item *it = &items[i];
    short ev = fds[i].events;
    if (late && it->recheck) {
      fds[i].revents = 0;
      continue;
    }
    anypoll__test_note_checks(&anypoll__test_late_checks, late && it->recheck);
    switch (it->kind) {
    case ANYPOLL_KIND_IGNORED:
      fds[i].revents = 0;
      break;
    case ANYPOLL_KIND_INVALID:
      fds[i].revents = POLLNVAL;
      break;
    case ANYPOLL_KIND_PIPE:
      fds[i].revents = anypoll__pipe_recheck(it, ev, w != NULL);
      break;
    case ANYPOLL_KIND_SOCKET:
      break; /* done above, all at once */
    case ANYPOLL_KIND_CONSOLE_IN:
    case ANYPOLL_KIND_CONSOLE_OUT:
      fds[i].revents = anypoll__console_check(it, ev);
      break;
    default:
      fds[i].revents = anypoll__file_check(it, ev);
      break;
    }
    ready += fds[i].revents != 0;
  }
  return ready;
}

/* After a back-off round that timed out: checks only the entries that
 * could not be armed (their kind asked for a re-check: item->recheck), and
 * returns how many are ready. Nothing is written to fds: when one is
 * ready, the caller disarms and checks every entry. Stops at the deadline:
 * the entries left were found not ready one round ago. */
int anypoll__check_unarmed(const struct pollfd *fds,
                           const struct anypoll__item *items,
                           anypoll_nfds_t nfds, LONG64 call_id, int timeout_ms,
                           LONGLONG deadline) {
  int ready = 0;
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    const struct anypoll__item *it = &items[i];
    if (!it->recheck)
      continue;
    if (anypoll__expired(timeout_ms, deadline))
      break;
    anypoll__test_note_checks(&anypoll__test_unarmed_checks, 1);
    short revents = 0;
    if (it->kind == ANYPOLL_KIND_PIPE)
      revents = anypoll__pipe_check_unarmed(it, fds[i].events, call_id);
    else if (it->kind == ANYPOLL_KIND_CONSOLE_IN ||
             it->kind == ANYPOLL_KIND_CONSOLE_OUT)
      revents = anypoll__console_check(it, fds[i].events);
    ready += revents != 0;
  }
  return ready;
}
