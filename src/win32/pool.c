/* A pool of helper threads. Each parks in one blocking call for a poll in
 * progress (a zero-byte pipe read), so a call waiting on N idle pipes needs
 * N of them; pooling makes the next call's start cost a SetEvent instead of
 * a CreateThread, and idle threads exit after a while. */
#include <errno.h>
#include <stdlib.h>

#include "win.h"

/* Small stacks: a helper only calls ReadFile. */
#define HELPER_STACK (64 * 1024)

ANYPOLL__INTERNAL volatile LONG anypoll__pool_idle_ms = 10000;

struct worker {
  struct worker *next;
  HANDLE thread;
  HANDLE go; /* auto-reset: set once per job */
  void (*fn)(void *);
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
    if (WaitForSingleObject(w->go, (DWORD)anypoll__pool_idle_ms) ==
        WAIT_TIMEOUT) {
      AcquireSRWLockExclusive(&pool_lock);
      int leave = unlist(w);
      ReleaseSRWLockExclusive(&pool_lock);
      if (!leave)
        continue; /* a job was handed over as the wait timed out */
      CloseHandle(w->go);
      CloseHandle(w->thread);
      free(w);
      return 0;
    }
    w->fn(w->arg);
    AcquireSRWLockExclusive(&pool_lock);
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
  if (w != NULL)
    idle = w->next;
  ReleaseSRWLockExclusive(&pool_lock);
  if (w == NULL) {
    w = calloc(1, sizeof *w);
    if (w == NULL)
      goto fail;
    w->go = CreateEventW(NULL, FALSE, FALSE, NULL);
    if (w->go == NULL)
      goto fail;
    /* The thread handle is kept: CancelSynchronousIo needs it. */
    w->thread = CreateThread(NULL, HELPER_STACK, worker_main, w,
                             STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (w->thread == NULL)
      goto fail;
  }
  w->fn = fn;
  w->arg = arg;
  SetEvent(w->go);
  return w->thread;

fail:
  if (w != NULL && w->go != NULL)
    CloseHandle(w->go);
  free(w);
  errno = EAGAIN;
  return NULL;
}
