/* SPDX-License-Identifier: MIT */
/* anypoll_spawn and the process descriptor on POSIX (issue 36).
 *
 * The child is started with posix_spawnp: it searches PATH as execvp does
 * and reports a failed exec (ENOENT, EACCES, E2BIG) to the caller as its
 * result (glibc since 2.24, musl, the BSDs, macOS), and glibc and musl
 * start it with vfork-like speed. Every descriptor this file makes in the
 * parent is close-on-exec from its creation (anypoll_pipe, O_CLOEXEC,
 * F_DUPFD_CLOEXEC, pidfds are close-on-exec by the kernel), so a child
 * started by any thread gets only the three streams its file actions
 * name, each dup2'ed into place (dup2 clears close-on-exec on the copy).
 *
 * The process descriptor is, on Linux 5.3 and later, a pidfd: the kernel
 * reports POLLIN on it once the child has exited, to poll, select and
 * epoll alike, with no thread. Elsewhere (and where pidfd_open fails with
 * ENOSYS, or EPERM under a seccomp filter that does not know it) it is the
 * read end of a pipe that a reaper thread writes one byte into when the
 * child has exited: one thread per running child, blocked in waitid with
 * WNOWAIT (so that the child stays for anypoll_proc_wait to reap), with
 * every signal blocked and a 64 KiB stack; it ends when the child does.
 * (kqueue's EVFILT_PROC would spare that thread on the BSDs and macOS; it
 * is not written because nothing here could test it.) Tests force the
 * fallback with anypoll__spawn_use_reaper.
 *
 * The library keeps per process descriptor the pid, whether it was reaped
 * and its status, in a table indexed by descriptor number under one mutex;
 * anypoll_close forgets the entry before closing the number (src/posix/
 * rw.c), so that the number cannot be reused meanwhile. The child is
 * reaped only under that mutex, and anypoll_proc_kill signals it only
 * under it, so a kill never reaches a reused pid. A program must not reap
 * these children itself (waitpid(-1) in a SIGCHLD handler): their wait
 * then fails with ECHILD. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
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

extern char **environ;

ANYPOLL__INTERNAL int anypoll__spawn_use_reaper = 0;

/* The fallback's shared state: the pipe's write end belongs to whichever
 * of the reaper thread and the table entry lets go of it last. */
struct spawn_reaper {
  pid_t pid;
  int wfd;
  int refs;   /* the thread's and the table entry's */
  int closed; /* the process descriptor was closed: write nothing */
};

struct spawn_entry {
  pid_t pid;
  int status;
  unsigned char used, reaped;
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

void anypoll__spawn_forget(int fd) {
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

/* The process descriptor for pid: a pidfd where the system has them, else
 * the fallback's; *r gets the fallback's state or NULL. */
static int proc_open(pid_t pid, int *fd, struct spawn_reaper **r) {
  *r = NULL;
#if defined(__linux__) && defined(SYS_pidfd_open)
  if (!anypoll__spawn_use_reaper) {
    long pidfd = syscall(SYS_pidfd_open, (long)pid, 0L);
    if (pidfd >= 0) {
      *fd = (int)pidfd;
      return 0;
    }
    if (errno != ENOSYS && errno != EPERM)
      return -1;
  }
#endif
  return reaper_start(pid, fd, r);
}

/* Registers fd as pid's descriptor: 0, or -1 with ENOMEM. */
static int spawn_register(int fd, pid_t pid, struct spawn_reaper *r) {
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
    atomic_fetch_add(&spawn_live, 1);
  }
  pthread_mutex_unlock(&spawn_lock);
  if (ret != 0)
    errno = ENOMEM;
  return ret;
}

static void close_all(int *fds, int n) {
  int saved = errno;
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0) {
      close(fds[i]);
      fds[i] = -1;
    }
  errno = saved;
}

/* Starts the child: 0 and *pid, or -1 with errno. child[i] is what the
 * child gets as stream i (-1: the parent's own). */
static int spawn_start(const char *file, char *const argv[],
                       char *const envp[], const int child[3], pid_t *pid) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  int err = posix_spawn_file_actions_init(&fa);
  if (err != 0) {
    errno = err;
    return -1;
  }
  err = posix_spawnattr_init(&attr);
  if (err != 0) {
    posix_spawn_file_actions_destroy(&fa);
    errno = err;
    return -1;
  }
  for (int i = 0; i < 3 && err == 0; i++)
    if (child[i] >= 0)
      err = posix_spawn_file_actions_adddup2(&fa, child[i], i);
  /* The child starts with no signal blocked and every signal's default
   * action, whatever the parent ignores or blocks (a parent that ignores
   * SIGPIPE would otherwise hand that on to a `cat` it runs). */
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  if (err == 0)
    err = posix_spawnattr_setsigmask(&attr, &none);
  if (err == 0)
    err = posix_spawnattr_setsigdefault(&attr, &all);
  if (err == 0)
    err = posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (err == 0)
    err = posix_spawnp(pid, file, &fa, &attr, argv,
                       envp != NULL ? envp : environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) {
    errno = err;
    return -1;
  }
  return 0;
}

int anypoll_spawn(const char *file, char *const argv[], char *const envp[],
                  const int stdio[3], int pipes[3], int *proc) {
  if (file == NULL || argv == NULL || stdio == NULL || pipes == NULL ||
      proc == NULL) {
    errno = EINVAL;
    return -1;
  }
  for (int i = 0; i < 3; i++) {
    if (stdio[i] < ANYPOLL_STDIO_PIPE) {
      errno = EINVAL;
      return -1;
    }
    if (stdio[i] >= 0 && fcntl(stdio[i], F_GETFD) == -1) {
      errno = EBADF;
      return -1;
    }
  }
  /* mine: every descriptor made here (the parent's ends first); child[i]:
   * what the child gets as stream i. Whatever goes into a child's stream
   * is first moved to a number above 2, so that no dup2 into 0-2 can
   * overwrite the source of a later one. */
  int mine[10], parent[3] = { -1, -1, -1 }, child[3] = { -1, -1, -1 };
  int nmine = 0, null_fd = -1;
  for (int i = 0; i < 10; i++)
    mine[i] = -1;
  for (int i = 0; i < 3; i++) {
    int src = -1;
    if (stdio[i] == ANYPOLL_STDIO_PIPE) {
      int p[2];
      if (anypoll_pipe(p) != 0)
        goto fail;
      parent[i] = i == 0 ? p[1] : p[0];
      src = i == 0 ? p[0] : p[1];
      mine[nmine++] = parent[i];
      mine[nmine++] = src;
    } else if (stdio[i] == ANYPOLL_STDIO_NULL) {
      if (null_fd < 0) {
        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0)
          goto fail;
        mine[nmine++] = null_fd;
      }
      src = null_fd;
    } else if (stdio[i] >= 0) {
      src = stdio[i];
    }
    if (src >= 0 && src < 3) {
      src = fcntl(src, F_DUPFD_CLOEXEC, 3);
      if (src < 0)
        goto fail;
      mine[nmine++] = src;
    }
    child[i] = src;
  }
  pid_t pid;
  if (spawn_start(file, argv, envp, child, &pid) != 0)
    goto fail;
  /* The child has its copies: the parent keeps only its own ends. */
  for (int i = 0; i < nmine; i++)
    if (mine[i] != parent[0] && mine[i] != parent[1] && mine[i] != parent[2])
      close(mine[i]);
  nmine = 0;
  for (int i = 0; i < 3; i++)
    if (parent[i] >= 0)
      mine[nmine++] = parent[i];
  int fd = -1;
  struct spawn_reaper *r = NULL;
  if (proc_open(pid, &fd, &r) < 0 || spawn_register(fd, pid, r) != 0) {
    /* Nothing may stay behind, the child included: end it and reap it. */
    int saved = errno;
    if (fd >= 0) {
      if (r != NULL) {
        pthread_mutex_lock(&spawn_lock);
        r->closed = 1;
        reaper_release(r);
        pthread_mutex_unlock(&spawn_lock);
      }
      close(fd);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
    errno = saved;
    goto fail;
  }
  for (int i = 0; i < 3; i++)
    pipes[i] = parent[i];
  *proc = fd;
  return 0;
fail:
  close_all(mine, nmine);
  return -1;
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

int anypoll_proc_kill(int proc) {
  pthread_mutex_lock(&spawn_lock);
  struct spawn_entry *e = spawn_find(proc);
  if (e != NULL && !e->reaped)
    kill(e->pid, SIGKILL); /* a zombie accepts it too */
  pthread_mutex_unlock(&spawn_lock);
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
