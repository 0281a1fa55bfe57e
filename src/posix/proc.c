/* SPDX-License-Identifier: MIT */
/* The process descriptor on POSIX (issue 36): what anypoll_spawn returns
 * in *proc, and anypoll_proc_wait, anypoll_proc_kill, anypoll_proc_pid.
 *
 * On Linux 5.3 and later it is a pidfd: the kernel reports POLLIN on it
 * once the child has exited, to poll, select and epoll alike, with no
 * thread (and POLLIN|POLLHUP once the child has been reaped). Elsewhere,
 * and where pidfd_open fails with ENOSYS (or EPERM, from a seccomp filter
 * that does not know it), it is the read end of a pipe into which a reaper
 * thread writes one byte when the child has exited: one thread per running
 * child, blocked in waitid with WNOWAIT (the child stays for
 * anypoll_proc_wait to reap), started with every signal blocked and a
 * 64 KiB stack, ending when the child does. (kqueue's EVFILT_PROC would
 * spare that thread on the BSDs and macOS; it is not written, as nothing
 * here could test it.) Tests force the fallback with
 * anypoll__spawn_use_reaper.
 *
 * Per descriptor the library keeps the pid, whether the child was reaped
 * and its status, in a table indexed by descriptor number under one mutex;
 * anypoll_close forgets the entry before closing the number (rw.c), so no
 * other thread can be given the number meanwhile. The child is reaped only
 * under the mutex, and anypoll_proc_kill signals it only under it, so a
 * kill never reaches a pid reused after our own reap. A program must not
 * reap these children itself (waitpid(-1) in a SIGCHLD handler): their
 * wait then fails with ECHILD. The same holds when SIGCHLD is ignored
 * (SIG_IGN, or SA_NOCLDWAIT): the kernel reaps each child as it exits,
 * maybe before pidfd_open, which then fails with ESRCH although the child
 * ran; the spawn succeeds all the same, with a descriptor that is readable
 * at once (proc_open_gone). A child the kernel reaped frees its pid
 * without our knowing, for another process to get: so anypoll_proc_kill
 * signals through the pidfd (pidfd_send_signal), which names that one
 * process and fails with ESRCH once it has gone, never by pid where a
 * pidfd exists (proc_signal). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#  include <sys/syscall.h>
#endif

#include "posix.h"

ANYPOLL__INTERNAL int anypoll__spawn_use_reaper = 0;

/* The fallback's shared state: the pipe's write end belongs to whichever
 * of the reaper thread and the table entry lets go of it last. */
struct spawn_reaper {
  pid_t pid;
  int wfd;
  int refs;   /* the thread's and the table entry's */
  int closed; /* the process descriptor was closed: write nothing */
  int exited; /* the thread saw the child exit (or be reaped elsewhere) */
};

struct spawn_entry {
  pid_t pid;
  int status;
  unsigned char used, reaped;
  unsigned char gone; /* reaped by someone else before it was opened */
  unsigned char pidfd; /* the descriptor is a pidfd */
  struct spawn_reaper *reaper;
};

static pthread_mutex_t spawn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct spawn_entry *spawn_table;
static int spawn_table_len;
/* How many entries are used: anypoll_close takes the lock only when some
 * are. */
static atomic_int spawn_live;

/* Under spawn_lock. */
static struct spawn_entry *spawn_find(int fd) {
  if (fd < 0 || fd >= spawn_table_len || !spawn_table[fd].used)
    return NULL;
  return &spawn_table[fd];
}

/* Under spawn_lock: lets go of r; the last one closes the write end. */
static void reaper_release(struct spawn_reaper *r) {
  if (--r->refs == 0) {
    close(r->wfd);
    free(r);
  }
}

/* Under spawn_lock. */
static void spawn_forget_locked(struct spawn_entry *e) {
  if (e->reaper != NULL) {
    e->reaper->closed = 1;
    reaper_release(e->reaper);
  }
  memset(e, 0, sizeof *e);
  atomic_fetch_sub(&spawn_live, 1);
}

void anypoll__proc_forget(int fd) {
  if (atomic_load(&spawn_live) == 0)
    return;
  pthread_mutex_lock(&spawn_lock);
  struct spawn_entry *e = spawn_find(fd);
  if (e != NULL)
    spawn_forget_locked(e);
  pthread_mutex_unlock(&spawn_lock);
}

static void *reaper_main(void *arg) {
  struct spawn_reaper *r = arg;
  siginfo_t si;
  /* Returns once the child has exited (or was reaped by someone else:
   * ECHILD); the child stays a zombie for anypoll_proc_wait. */
  while (waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOWAIT) != 0 &&
         errno == EINTR)
    ;
  pthread_mutex_lock(&spawn_lock);
  r->exited = 1;
  if (!r->closed) {
    /* The pipe is empty: the write cannot block. */
    while (write(r->wfd, "x", 1) < 0 && errno == EINTR)
      ;
  }
  reaper_release(r);
  pthread_mutex_unlock(&spawn_lock);
  return NULL;
}

/* The fallback's descriptor for pid: 0, *fd and *out, or -1 with errno. */
static int reaper_start(pid_t pid, int *fd, struct spawn_reaper **out) {
  int p[2];
  if (anypoll_pipe(p) != 0)
    return -1;
  struct spawn_reaper *r = calloc(1, sizeof *r);
  if (r == NULL) {
    close(p[0]);
    close(p[1]);
    errno = ENOMEM;
    return -1;
  }
  r->pid = pid;
  r->wfd = p[1];
  r->refs = 2;
  pthread_attr_t attr;
  sigset_t all, old;
  int err = pthread_attr_init(&attr);
  if (err == 0) {
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024); /* ignored if too small */
    /* The thread starts with every signal blocked: the program's signals
     * go to its own threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    err = pthread_create(&t, &attr, reaper_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
  }
  if (err != 0) {
    close(p[0]);
    close(p[1]);
    free(r);
    errno = err == ENOMEM ? ENOMEM : EAGAIN;
    return -1;
  }
  *fd = p[0];
  *out = r;
  return 0;
}

/* The descriptor of a child that is gone already, reaped by someone else
 * (the kernel, when SIGCHLD is ignored): readable at once, as a pidfd of
 * an exited child is. A pipe holding one byte, its write end closed. */
static int proc_open_gone(int *fd) {
  int p[2];
  if (anypoll_pipe(p) != 0)
    return -1;
  /* The pipe is empty: the write cannot block. */
  while (write(p[1], "x", 1) < 0 && errno == EINTR)
    ;
  close(p[1]);
  *fd = p[0];
  return 0;
}

/* A descriptor for pid: a pidfd where the system has them, else the
 * fallback's; *r gets the fallback's state or NULL; *gone is 1 when the
 * child has been reaped already (by someone else), *is_pidfd 1 for a
 * pidfd. */
static int proc_open(pid_t pid, int *fd, struct spawn_reaper **r,
                     int *gone, int *is_pidfd) {
  *r = NULL;
  *gone = 0;
  *is_pidfd = 0;
#if defined(__linux__) && defined(SYS_pidfd_open)
  if (!anypoll__spawn_use_reaper) {
    long pidfd = syscall(SYS_pidfd_open, (long)pid, 0L);
    if (pidfd >= 0) {
      *fd = (int)pidfd;
      *is_pidfd = 1;
      return 0;
    }
    if (errno == ESRCH) {
      /* The child ran and was reaped before we could open it (SIGCHLD
       * ignored): the spawn succeeded all the same. */
      *gone = 1;
      return proc_open_gone(fd);
    }
    if (errno != ENOSYS && errno != EPERM)
      return -1;
  }
#endif
  return reaper_start(pid, fd, r);
}

/* Registers fd as pid's descriptor: 0, or -1 with ENOMEM. */
static int proc_register(int fd, pid_t pid, struct spawn_reaper *r,
                         int gone, int is_pidfd) {
  int ret = 0;
  pthread_mutex_lock(&spawn_lock);
  if (fd >= spawn_table_len) {
    int len = spawn_table_len == 0 ? 64 : spawn_table_len;
    while (len <= fd)
      len *= 2;
    struct spawn_entry *t = realloc(spawn_table, (size_t)len * sizeof *t);
    if (t == NULL) {
      ret = -1;
    } else {
      memset(t + spawn_table_len, 0,
             (size_t)(len - spawn_table_len) * sizeof *t);
      spawn_table = t;
      spawn_table_len = len;
    }
  }
  if (ret == 0) {
    struct spawn_entry *e = &spawn_table[fd];
    /* A number still in the table was closed with close() instead of
     * anypoll_close: the old entry is stale. */
    if (e->used)
      spawn_forget_locked(e);
    e->used = 1;
    e->pid = pid;
    e->reaper = r;
    e->gone = (unsigned char)gone;
    e->pidfd = (unsigned char)is_pidfd;
    atomic_fetch_add(&spawn_live, 1);
  }
  pthread_mutex_unlock(&spawn_lock);
  if (ret != 0)
    errno = ENOMEM;
  return ret;
}

int anypoll__proc_new(pid_t pid, int *proc) {
  int fd = -1;
  struct spawn_reaper *r = NULL;
  int gone, is_pidfd;
  if (proc_open(pid, &fd, &r, &gone, &is_pidfd) != 0)
    return -1;
  if (proc_register(fd, pid, r, gone, is_pidfd) != 0) {
    if (r != NULL) {
      pthread_mutex_lock(&spawn_lock);
      r->closed = 1;
      reaper_release(r);
      pthread_mutex_unlock(&spawn_lock);
    }
    close(fd);
    errno = ENOMEM;
    return -1;
  }
  *proc = fd;
  return 0;
}

int anypoll_proc_wait(int proc, int *status) {
  if (status == NULL) {
    errno = EINVAL;
    return -1;
  }
  pthread_mutex_lock(&spawn_lock);
  struct spawn_entry *e = spawn_find(proc);
  if (e == NULL || e->reaped) {
    int found = e != NULL;
    if (found)
      *status = e->status;
    pthread_mutex_unlock(&spawn_lock);
    if (!found)
      errno = EBADF;
    return found ? 0 : -1;
  }
  if (e->gone) {
    /* Its pid may belong to another process by now: never wait on it. */
    pthread_mutex_unlock(&spawn_lock);
    errno = ECHILD;
    return -1;
  }
  pid_t pid = e->pid;
  pthread_mutex_unlock(&spawn_lock);
  /* Wait without reaping and without the lock; reap under it below. */
  siginfo_t si;
  if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) != 0 &&
      errno != ECHILD)
    return -1; /* EINTR */
  pthread_mutex_lock(&spawn_lock);
  e = spawn_find(proc);
  int ret = 0, err = 0;
  if (e == NULL || e->pid != pid) {
    err = EBADF; /* closed by another thread meanwhile */
  } else if (!e->reaped) {
    int st;
    pid_t got = waitpid(pid, &st, WNOHANG);
    if (got == pid) {
      e->reaped = 1;
      e->status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
    } else {
      err = got < 0 ? errno : ECHILD;
    }
  }
  if (err == 0)
    *status = e->status;
  pthread_mutex_unlock(&spawn_lock);
  if (err != 0) {
    errno = err;
    ret = -1;
  }
  return ret;
}

/* Under spawn_lock: SIGKILL to the child of entry e (descriptor fd), which
 * we have not reaped. Its result is not reported: a child that has exited
 * already is not an error (anypoll_proc_kill returns 0). */
static void proc_signal(int fd, const struct spawn_entry *e) {
#if defined(__linux__) && defined(SYS_pidfd_send_signal)
  if (e->pidfd) {
    /* The pidfd names this process and no other: ESRCH once the kernel
     * has reaped it (SIGCHLD ignored), even if its pid is another
     * process's by now; a zombie accepts the signal, as by pid. */
    if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0U) == 0 ||
        (errno != ENOSYS && errno != EPERM))
      return;
    /* ENOSYS or EPERM: a seccomp filter that lets pidfd_open through but
     * not this call. By pid then, unless the pidfd says the child has
     * exited (its pid may be reused once the kernel has reaped it; only
     * a child exiting between the poll and the kill escapes the check). */
    struct pollfd p = { fd, POLLIN, 0 };
    if (poll(&p, 1, 0) != 0)
      return;
  }
#else
  (void)fd;
#endif
  /* By pid, where there is no pidfd (other systems, kernels before 5.3,
   * the fallback's pipe), which nothing better can name. Safe unless
   * SIGCHLD is ignored: the pid stays ours until we reap it (a zombie
   * accepts the signal too). With SIGCHLD ignored the kernel reaps the
   * child at its exit and may give the pid to another process; the
   * fallback's thread sees that exit and marks it (exited) before the
   * descriptor reports POLLIN, which leaves only the moment between the
   * exit and the thread's wake-up. */
  if (e->reaper != NULL && e->reaper->exited)
    return;
  kill(e->pid, SIGKILL);
}

int anypoll_proc_kill(int proc) {
  int saved = errno; /* a signal's ESRCH is no failure of ours */
  pthread_mutex_lock(&spawn_lock);
  struct spawn_entry *e = spawn_find(proc);
  if (e != NULL && !e->reaped && !e->gone)
    proc_signal(proc, e);
  pthread_mutex_unlock(&spawn_lock);
  errno = saved;
  if (e == NULL) {
    errno = EBADF;
    return -1;
  }
  return 0;
}

long anypoll_proc_pid(int proc) {
  pthread_mutex_lock(&spawn_lock);
  struct spawn_entry *e = spawn_find(proc);
  long pid = e != NULL ? (long)e->pid : -1;
  pthread_mutex_unlock(&spawn_lock);
  if (pid < 0)
    errno = EBADF;
  return pid;
}
