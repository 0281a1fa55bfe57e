/* SPDX-License-Identifier: MIT */
/* A pool of helper threads. Each parks in one blocking call for a poll in
 * progress (a zero-byte pipe read), so a call waiting on N idle pipes needs
 * N of them; pooling makes the next call's start cost a wake-up instead of
 * a CreateThread, and idle threads exit after a while. An idle helper
 * sleeps on a condition variable rather than an event: on Windows both
 * cost the same (NtAlertThreadByThreadId and NtWaitForAlertByThreadId
 * instead of NtSetEvent and NtWaitForSingleObject), but under Wine a
 * condition variable is a futex inside the process and an event is two
 * round trips to the wineserver per hand-off (docs/performance.md). */
#include <errno.h>
#include <stdlib.h>

#include "win.h"

/* The smallest stack Windows gives a thread. A helper runs worker_main and
 * its job: watch.c's parked zero-byte ReadFile, the callbacks that post to
 * a set's completion port or wake a waiter, SRW locks and condition
 * variables; none of it recurses or keeps large buffers, and the kernel
 * runs the read on a stack of its own, so the user stack stays within a
 * few KiB. The value is a reservation (STACK_SIZE_PARAM_IS_A_RESERVATION):
 * Windows rounds a reservation up to the allocation granularity, 64 KiB
 * (Microsoft's "Thread Stack Size"), so a smaller figure here would reserve
 * the same; what is committed at the start is the executable header's
 * stack commit (4 KiB with the GNU linker's default) plus the guard page,
 * and grows a page at a time only if used. What 1000 parked helpers cost:
 * docs/performance.md, "Memory and threads per registration". */
#define HELPER_STACK (64 * 1024)

/* A minute: programs that wait on a timer commonly do so every 1 to 30 s,
 * and with a shorter lifetime each such wait created its helpers anew
 * (32 idle pipes every 30 s: 4.5x the process CPU per call under Wine with
 * 10 s; docs/performance.md, "The pool's idle lifetime"). An idle helper
 * costs no CPU, one thread and two handles. */
ANYPOLL__INTERNAL volatile LONG anypoll__pool_idle_ms = 60000;

struct worker {
  struct worker *next;
  HANDLE thread;
  CONDITION_VARIABLE go; /* under pool_lock: a job was handed over */
  void (*fn)(void *);    /* the job; NULL while idle (under pool_lock) */
  void *arg;
};

static SRWLOCK pool_lock = SRWLOCK_INIT;
static struct worker *idle;

/* Takes w off the idle list if it is still there (nobody gave it a job). */
static int unlist(struct worker *w) {
  for (struct worker **p = &idle; *p != NULL; p = &(*p)->next) {
    if (*p == w) {
      *p = w->next;
      return 1;
    }
  }
  return 0;
}

static DWORD WINAPI worker_main(void *arg) {
  struct worker *w = arg;
  for (;;) {
    AcquireSRWLockExclusive(&pool_lock);
    while (w->fn == NULL) {
      /* A wake-up without a job (spurious) restarts the idle period. */
      if (!SleepConditionVariableSRW(&w->go, &pool_lock,
                                     (DWORD)anypoll__pool_idle_ms, 0) &&
          w->fn == NULL && unlist(w)) {
        ReleaseSRWLockExclusive(&pool_lock);
        CloseHandle(w->thread);
        free(w);
        return 0;
      }
    }
    void (*fn)(void *) = w->fn;
    void *fn_arg = w->arg;
    ReleaseSRWLockExclusive(&pool_lock);
    fn(fn_arg);
    AcquireSRWLockExclusive(&pool_lock);
    w->fn = NULL;
    w->arg = NULL;
    w->next = idle;
    idle = w;
    ReleaseSRWLockExclusive(&pool_lock);
  }
}

HANDLE anypoll__pool_run(void (*fn)(void *), void *arg) {
  if (anypoll__test_should_fail()) {
    errno = EAGAIN;
    return NULL;
  }
  AcquireSRWLockExclusive(&pool_lock);
  struct worker *w = idle;
  if (w != NULL) {
    idle = w->next;
    w->fn = fn;
    w->arg = arg;
    WakeConditionVariable(&w->go);
    ReleaseSRWLockExclusive(&pool_lock);
    return w->thread;
  }
  ReleaseSRWLockExclusive(&pool_lock);
  w = calloc(1, sizeof *w);
  if (w == NULL)
    goto fail;
  InitializeConditionVariable(&w->go);
  /* The job is in place before the thread starts: it needs no wake-up. */
  w->fn = fn;
  w->arg = arg;
  /* The thread handle is kept: CancelSynchronousIo needs it. */
  w->thread = CreateThread(NULL, HELPER_STACK, worker_main, w,
                           STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
  if (w->thread == NULL)
    goto fail;
  return w->thread;

fail:
  free(w);
  errno = EAGAIN;
  return NULL;
}
