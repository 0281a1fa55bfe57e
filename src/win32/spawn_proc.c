/* SPDX-License-Identifier: MIT */
/* The process descriptor of anypoll_spawn on Windows (spawn.c starts the
 * child): the table from descriptor to process, the thread-pool wait that
 * writes the descriptor's byte when the child exits, anypoll_proc_wait,
 * anypoll_proc_kill, anypoll_proc_pid, and the release at anypoll_close.
 * Why a pipe and a thread-pool wait: see spawn.c. */
#include <errno.h>
#include <stdlib.h>

#include "spawn.h"


static SRWLOCK procs_lock = SRWLOCK_INIT;
static struct proc *procs;

static void CALLBACK proc_exited(PTP_CALLBACK_INSTANCE instance, void *ctx,
                                 PTP_WAIT wait, TP_WAIT_RESULT result) {
  (void)instance, (void)wait, (void)result;
  struct proc *p = ctx;
  DWORD n;
  /* One byte into an empty pipe: never blocks. */
  WriteFile(p->write_end, "x", 1, &n, NULL);
}

/* The pool the waits' callbacks run in: one worker at most, as each
 * callback only writes a byte. With the process's default pool, 64
 * children ending together made Wine 8 start a worker for nearly each of
 * their callbacks (14 threads at once, where 3 do). The waits themselves
 * are the system's: up to 63 handles per wait thread under Wine 8 and
 * before Windows 8, none since (wait completion packets). */
static INIT_ONCE pool_once = INIT_ONCE_STATIC_INIT;
static TP_CALLBACK_ENVIRON pool_env;

static BOOL CALLBACK pool_init(INIT_ONCE *once, void *param, void **ctx) {
  (void)once, (void)param, (void)ctx;
  PTP_POOL pool = CreateThreadpool(NULL);
  if (pool == NULL)
    return FALSE;
  SetThreadpoolThreadMaximum(pool, 1);
  InitializeThreadpoolEnvironment(&pool_env);
  SetThreadpoolCallbackPool(&pool_env, pool);
  return TRUE;
}

PTP_WAIT anypoll__spawn_proc_wait_new(struct proc *p) {
  if (!InitOnceExecuteOnce(&pool_once, pool_init, NULL, NULL))
    return NULL;
  return CreateThreadpoolWait(proc_exited, p, &pool_env);
}

/* Frees p once out of the table: the wait first (waiting for a callback
 * that runs), then the handles. The child is not touched. */
void anypoll__spawn_proc_free(struct proc *p) {
  if (p->wait != NULL) {
    SetThreadpoolWait(p->wait, NULL, NULL);
    WaitForThreadpoolWaitCallbacks(p->wait, TRUE);
    CloseThreadpoolWait(p->wait);
  }
  if (p->process != NULL)
    CloseHandle(p->process);
  if (p->write_end != NULL)
    CloseHandle(p->write_end);
  free(p);
}

/* The entry of descriptor fd, under the lock; NULL if fd is not one. */
static struct proc **proc_find(int fd) {
  struct proc **pp = &procs;
  while (*pp != NULL && (*pp)->fd != fd)
    pp = &(*pp)->next;
  /* A number closed with _close and reused is not the descriptor any more:
   * its handle tells. */
  if (*pp == NULL || anypoll__sys_os_handle(fd) != (intptr_t)(*pp)->read_end)
    return NULL;
  return pp;
}

void anypoll__spawn_release(int fd) {
  anypoll__stdin_release(fd);
  AcquireSRWLockExclusive(&procs_lock);
  struct proc **pp = procs != NULL ? proc_find(fd) : NULL;
  struct proc *p = pp != NULL ? *pp : NULL;
  if (p != NULL)
    *pp = p->next;
  ReleaseSRWLockExclusive(&procs_lock);
  if (p != NULL)
    anypoll__spawn_proc_free(p);
}

void anypoll__spawn_proc_add(struct proc *p) {
  AcquireSRWLockExclusive(&procs_lock);
  p->next = procs;
  procs = p;
  ReleaseSRWLockExclusive(&procs_lock);
}

/* ---- The process descriptor ---------------------------------------------- */

int anypoll_proc_wait(int proc, int *status) {
  if (status == NULL) {
    errno = EINVAL;
    return -1;
  }
  /* Our own handle to the process, so that a close of proc by another
   * thread cannot pull it from under the wait. */
  HANDLE h = NULL;
  AcquireSRWLockShared(&procs_lock);
  struct proc **pp = proc_find(proc);
  if (pp != NULL && !DuplicateHandle(GetCurrentProcess(), (*pp)->process,
                                     GetCurrentProcess(), &h, 0, FALSE,
                                     DUPLICATE_SAME_ACCESS))
    h = NULL;
  ReleaseSRWLockShared(&procs_lock);
  if (pp == NULL) {
    errno = EBADF;
    return -1;
  }
  if (h == NULL)
    return anypoll__set_errno_win(GetLastError());
  DWORD code = 0;
  BOOL ok = WaitForSingleObject(h, INFINITE) == WAIT_OBJECT_0 &&
            GetExitCodeProcess(h, &code);
  DWORD error = GetLastError();
  CloseHandle(h);
  if (!ok)
    return anypoll__set_errno_win(error);
  *status = (int)code;
  return 0;
}

int anypoll_proc_kill(int proc) {
  int r = 0;
  AcquireSRWLockShared(&procs_lock);
  struct proc **pp = proc_find(proc);
  if (pp == NULL) {
    errno = EBADF;
    r = -1;
  } else if (WaitForSingleObject((*pp)->process, 0) != WAIT_OBJECT_0 &&
             !TerminateProcess((*pp)->process, 137) &&
             WaitForSingleObject((*pp)->process, 0) != WAIT_OBJECT_0) {
    /* Failed and still running; a child that exited meanwhile (the
     * terminate then fails with access denied) is not an error. */
    r = anypoll__set_errno_win(GetLastError());
  }
  ReleaseSRWLockShared(&procs_lock);
  return r;
}

long anypoll_proc_pid(int proc) {
  long pid = -1;
  AcquireSRWLockShared(&procs_lock);
  struct proc **pp = proc_find(proc);
  if (pp != NULL)
    pid = (long)(*pp)->pid;
  ReleaseSRWLockShared(&procs_lock);
  if (pid < 0)
    errno = EBADF;
  return pid;
}
