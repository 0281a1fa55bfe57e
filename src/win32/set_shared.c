/* SPDX-License-Identifier: MIT */
/* Synchronous pipe read ends that another process may share, in a watch
 * set: read only while a wait sleeps, as anypoll_poll reads them.
 *
 * A pending synchronous read holds the file object's lock for every
 * process that shares it (set_pipe.c's head), so the set cannot keep one
 * parked between waits: a child started then would wait behind it. Peeking
 * at such pipes on a 16 ms timer instead made each of their wake-ups up to
 * 16 ms late (62 round trips a second between two processes under Wine,
 * where anypoll_poll made 2605) and cost a query per pipe per tick while
 * idle. So they follow anypoll_poll's rule (docs/windows-design.md, "The
 * file-object lock"): a wait that is about to sleep subscribes each listed
 * pipe to watch.c's helper read, and the last wait to return leaves them
 * all, which cancels every read that has not ended, before returning. A
 * wake-up is then the read's, as for any other pipe, and between waits no
 * read of ours is pending; what a child started *during* a wait meets is
 * what anypoll_poll's callers meet. A wait that finds something ready at
 * once never sleeps and starts no read; so that a program whose waits all
 * return at once (other entries always ready) still sees a shared pipe's
 * data, a wait that starts more than ANYPOLL_RECHECK_UNARMED_MS after they
 * were last read checks them all, as the peek timer did, but only in such
 * a program and on its own thread. The cost: each wait that sleeps
 * starts a read per idle shared pipe (a hand-over to a pooled helper and
 * its ReadFile) and cancels it (docs/performance.md has the figures).
 *
 * The subscription to a helper read itself, which set_pipe.c keeps parked
 * on an unshared pipe across waits, is here too, below everything that
 * uses it. */
#include "set_win.h"

/* Called by watch.c when the read ends, under its table lock: it only
 * posts. A read that ended at once with neither data nor end-of-file
 * cannot be waited on: the registration is re-checked on a timer. */
static void iocp_notify(struct anypoll__watch_sub *sub) {
  struct anypoll__reg *r = sub->ctx;
  /* Written here under watch.c's lock, read under the set's: interlocked. */
  if (sub->outcome == ANYPOLL_WATCH_NO_WAIT)
    InterlockedExchange(&r->no_wait, 1);
  anypoll__set_post(r);
}

int anypoll__set_pipe_read(struct anypoll__reg *r) {
  struct anypoll__set *s = r->set;
  r->sub.notify = iocp_notify;
  r->sub.ctx = r;
  /* Sole while no registered pipe had a second handle: the set's own reads
   * are then not compared with this handle (see anypoll__pipe_check_owner). */
  return anypoll__watch_rearm(&r->sub, r->item.handle, !s->has_dups, s->id);
}


int anypoll__set_shared_arm(struct anypoll__reg *r) {
  struct anypoll__set *s = r->set;
  /* Beyond ANYPOLL_SET_SHARED_READS, the reads' cost per wait (about five
   * wineserver requests per idle pipe under Wine, started and cancelled:
   * 339 per woken wait with 64, 5997 with 1000) outgrows the timer's,
   * and the cancels hold up the wait's return: the others are peeked at,
   * up to 16 ms late, until their next mod. */
  if (r->peeking ||
      (!r->listed && s->shared_count >= ANYPOLL_SET_SHARED_READS))
    return anypoll__set_peek_start(r);
  if (!r->listed) {
    s->shared_count++;
    r->shared_prev = NULL;
    r->shared_next = s->shared_head;
    if (s->shared_head != NULL)
      s->shared_head->shared_prev = r;
    s->shared_head = r;
    r->listed = 1;
  }
  /* A wait sleeps now (another thread's, or this one's between two of its
   * sleeps): the pipe must be read during it. Otherwise the next sleep
   * reads it. */
  if (s->shared_sleepers > 0)
    return anypoll__set_pipe_read(r);
  return 0;
}

void anypoll__set_shared_unlist(struct anypoll__reg *r) {
  struct anypoll__set *s = r->set;
  if (!r->listed)
    return;
  if (r->shared_prev != NULL)
    r->shared_prev->shared_next = r->shared_next;
  else
    s->shared_head = r->shared_next;
  if (r->shared_next != NULL)
    r->shared_next->shared_prev = r->shared_prev;
  r->shared_next = r->shared_prev = NULL;
  r->listed = 0;
  s->shared_count--;
}

void anypoll__set_shared_sleep(struct anypoll__set *s, int *armed) {
  if (s->shared_head == NULL && !*armed)
    return;
  if (!*armed) {
    *armed = 1;
    s->shared_sleepers++;
  }
  /* Only those with no subscription: one whose read ended by itself is
   * on its way through the port, and its check re-arms it. */
  for (struct anypoll__reg *r = s->shared_head; r != NULL; r = r->shared_next)
    if (r->sub.watch == NULL && !r->disabled && !r->stopping &&
        anypoll__set_pipe_read(r) != 0)
      /* Out of helper threads: re-checked as a pipe that cannot be armed,
       * which its check then reports if it is still so. */
      (void)anypoll__set_timer(r, ANYPOLL_RECHECK_UNARMED_MS);
}

void anypoll__set_shared_due(struct anypoll__set *s) {
  if (s->shared_head == NULL || s->shared_sleepers > 0)
    return;
  ULONGLONG now = GetTickCount64();
  if (now - s->shared_seen < ANYPOLL_RECHECK_UNARMED_MS)
    return;
  s->shared_seen = now;
  for (struct anypoll__reg *r = s->shared_head; r != NULL; r = r->shared_next)
    if (!r->disabled)
      anypoll__set_check_push(s, r);
}

void anypoll__set_shared_end(struct anypoll__set *s, int armed) {
  if (!armed || --s->shared_sleepers > 0)
    return;
  /* The reads saw every pipe until now. */
  s->shared_seen = GetTickCount64();
  /* Left in batches, each one cancel-and-wait round for all its reads. */
  struct anypoll__watch_sub *batch[64];
  anypoll_nfds_t n = 0;
  for (struct anypoll__reg *r = s->shared_head; r != NULL;
       r = r->shared_next) {
    if (r->sub.watch == NULL)
      continue;
    batch[n++] = &r->sub;
    if (n == sizeof batch / sizeof batch[0]) {
      anypoll__watch_leave_each(batch, n);
      n = 0;
    }
  }
  anypoll__watch_leave_each(batch, n);
}
