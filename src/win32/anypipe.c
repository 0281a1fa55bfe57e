/* SPDX-License-Identifier: MIT */
/* anypoll_pipe on Windows: a pipe whose read end is opened for overlapped
 * I/O, so that a watch set can wait on it through its completion port with
 * no helper thread (set_anypipe.c), and whose write end is an ordinary
 * synchronous handle, so that _write and WriteFile on it behave exactly as
 * on a _pipe() pipe.
 *
 * Why the read end is not for _read: the C runtime's _read calls ReadFile
 * with no OVERLAPPED, and Microsoft's ReadFile documentation says that on a
 * handle opened with FILE_FLAG_OVERLAPPED lpOverlapped must point to a
 * valid and unique OVERLAPPED, "otherwise the function can incorrectly
 * report that the read operation is complete": such a read does not wait
 * for its data. The program reads it with anypoll_read (rw.c), which issues
 * the overlapped read with its own event and waits for it, blocking as _read
 * does on a _pipe() read end.
 *
 * An anonymous pipe (CreatePipe, _pipe) cannot be opened for overlapped
 * I/O, so the pipe is a named pipe with a unique name, made the way Rust's
 * standard library makes its anonymous pipes: one instance
 * (FILE_FLAG_FIRST_PIPE_INSTANCE, so that a name already taken by anyone
 * else fails instead of joining their pipe), remote clients rejected, then
 * the client end opened at once by this process. Neither handle is
 * inheritable (NULL security attributes): close-on-exec, as anypoll_pipe is
 * on POSIX. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdint.h>
#include <stdlib.h>

#include "win.h"

#define ANYPIPE_BUFFER 65536 /* the Linux default pipe capacity */

static volatile LONG anypipe_serial;

/* Writes "<prefix><pid>-<serial>-<attempt>" into name (room for 96). */
static void anypipe_name(WCHAR *name, LONG serial, int attempt) {
  int n = 0;
  for (const WCHAR *p = ANYPOLL__ANYPIPE_PREFIX; *p != 0; p++)
    name[n++] = *p;
  unsigned long parts[3] = { GetCurrentProcessId(), (unsigned long)serial,
                             (unsigned long)attempt };
  for (int i = 0; i < 3; i++) {
    WCHAR digits[16];
    int d = 0;
    unsigned long v = parts[i];
    do {
      digits[d++] = (WCHAR)(L'0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (d > 0)
      name[n++] = digits[--d];
    if (i < 2)
      name[n++] = L'-';
  }
  name[n] = 0;
}

/* A Win32 error from making the pipe to errno: what _pipe documents
 * (EMFILE, ENFILE) where it applies. */
static int anypipe_fail(DWORD error) {
  if (error == ERROR_TOO_MANY_OPEN_FILES || error == ERROR_NO_SYSTEM_RESOURCES)
    errno = ENFILE;
  else if (error == ERROR_NOT_ENOUGH_MEMORY || error == ERROR_OUTOFMEMORY)
    errno = ENOMEM;
  else
    anypoll__set_errno_win(error);
  return -1;
}

int anypoll__anypipe_make(HANDLE *rd, HANDLE *wr, int write_async) {
  WCHAR name[96];
  HANDLE r = INVALID_HANDLE_VALUE;
  LONG serial = InterlockedIncrement(&anypipe_serial);
  /* The server end always reads; it is the overlapped one unless the
   * writer asked to be. */
  DWORD server_flags =
      PIPE_ACCESS_INBOUND | FILE_FLAG_FIRST_PIPE_INSTANCE |
      (write_async ? 0 : FILE_FLAG_OVERLAPPED);
  /* A name is taken when another process (or a pipe of ours whose serial
   * wrapped) already has it: FILE_FLAG_FIRST_PIPE_INSTANCE then fails with
   * ERROR_ACCESS_DENIED, and another name is tried. */
  for (int attempt = 0; attempt < 16 && r == INVALID_HANDLE_VALUE;
       attempt++) {
    anypipe_name(name, serial, attempt);
    r = CreateNamedPipeW(name, server_flags,
                         PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT |
                             PIPE_REJECT_REMOTE_CLIENTS,
                         1, ANYPIPE_BUFFER, ANYPIPE_BUFFER, 0, NULL);
    if (r == INVALID_HANDLE_VALUE && GetLastError() != ERROR_ACCESS_DENIED)
      return anypipe_fail(GetLastError());
  }
  if (r == INVALID_HANDLE_VALUE)
    return anypipe_fail(GetLastError());
  /* The write end: the client end, synchronous (no FILE_FLAG_OVERLAPPED)
   * as _pipe's is, unless write_async. FILE_READ_ATTRIBUTES as CreatePipe
   * gives its write end, so that anypoll_poll can ask it for its pipe
   * information (POLLOUT, and POLLERR once the reader has gone: a server
   * end opened for writing lacks that right, which is why the writer is
   * always the client). SECURITY_SQOS_PRESENT | SECURITY_ANONYMOUS: the
   * server end is ours, but nothing needs it to impersonate the writer. */
  HANDLE w = CreateFileW(name, GENERIC_WRITE | FILE_READ_ATTRIBUTES, 0, NULL,
                         OPEN_EXISTING,
                         FILE_ATTRIBUTE_NORMAL | SECURITY_SQOS_PRESENT |
                             SECURITY_ANONYMOUS |
                             (write_async ? FILE_FLAG_OVERLAPPED : 0),
                         NULL);
  if (w == INVALID_HANDLE_VALUE) {
    DWORD error = GetLastError();
    CloseHandle(r);
    return anypipe_fail(error);
  }
  *rd = r;
  *wr = w;
  return 0;
}

int anypoll_pipe(int fds[2]) {
  if (fds == NULL) {
    errno = EFAULT;
    return -1;
  }
  HANDLE rd, wr;
  if (anypoll__anypipe_make(&rd, &wr, 0) != 0)
    return -1;
  /* _O_NOINHERIT: the C runtime does not hand the descriptors to a child
   * it spawns either (the handles are not inheritable anyway). */
  int r = _open_osfhandle((intptr_t)rd, _O_RDONLY | _O_BINARY | _O_NOINHERIT);
  if (r < 0) {
    CloseHandle(rd);
    CloseHandle(wr);
    errno = EMFILE;
    return -1;
  }
  int w = _open_osfhandle((intptr_t)wr, _O_WRONLY | _O_BINARY | _O_NOINHERIT);
  if (w < 0) {
    _close(r); /* closes rd */
    CloseHandle(wr);
    errno = EMFILE;
    return -1;
  }
  fds[0] = r;
  fds[1] = w;
  return 0;
}

/* ---- Read ends held by watch sets ------------------------------------------ */

#define NOTED_BUCKETS 64

struct noted {
  struct noted *next;
  int fd;
  HANDLE handle;
  int count; /* sets holding it */
  /* anypoll_read's hint to the sets (anypoll__anypipe_drained): how many
   * reads ended, and whether the last one left the pipe empty. */
  volatile LONG reads, last_short;
};

static SRWLOCK noted_lock = SRWLOCK_INIT;
static struct noted *noted_buckets[NOTED_BUCKETS];

static struct noted **noted_find(int fd, HANDLE h) {
  struct noted **p = &noted_buckets[(unsigned)fd % NOTED_BUCKETS];
  while (*p != NULL && ((*p)->fd != fd || (*p)->handle != h))
    p = &(*p)->next;
  return p;
}

int anypoll__anypipe_note(int fd, HANDLE h) {
  int result = 0;
  AcquireSRWLockExclusive(&noted_lock);
  struct noted **p = noted_find(fd, h);
  if (*p != NULL) {
    (*p)->count++;
  } else {
    struct noted *n = malloc(sizeof *n);
    if (n == NULL) {
      result = -1;
    } else {
      n->next = NULL;
      n->fd = fd;
      n->handle = h;
      n->count = 1;
      n->reads = 0;
      n->last_short = 0;
      *p = n;
    }
  }
  ReleaseSRWLockExclusive(&noted_lock);
  return result;
}

void anypoll__anypipe_unnote(int fd, HANDLE h) {
  AcquireSRWLockExclusive(&noted_lock);
  struct noted **p = noted_find(fd, h);
  struct noted *n = *p;
  if (n != NULL && --n->count == 0) {
    *p = n->next;
    free(n);
  }
  ReleaseSRWLockExclusive(&noted_lock);
}

int anypoll__anypipe_noted(int fd, HANDLE h) {
  AcquireSRWLockShared(&noted_lock);
  int found = *noted_find(fd, h) != NULL;
  ReleaseSRWLockShared(&noted_lock);
  return found;
}

void anypoll__anypipe_read_done(int fd, HANDLE h, int n, unsigned len) {
  AcquireSRWLockShared(&noted_lock);
  struct noted *e = *noted_find(fd, h);
  if (e != NULL) {
    /* A byte-mode read returns what is there, up to len: fewer bytes than
     * asked for means it took all there was (0: end of file). */
    InterlockedExchange(&e->last_short, n >= 0 && (unsigned)n < len);
    InterlockedIncrement(&e->reads);
  }
  ReleaseSRWLockShared(&noted_lock);
}

int anypoll__anypipe_drained(int fd, HANDLE h, LONG *seen) {
  int drained = 0;
  AcquireSRWLockShared(&noted_lock);
  struct noted *e = *noted_find(fd, h);
  if (e != NULL) {
    LONG reads = InterlockedCompareExchange(&e->reads, 0, 0);
    drained = reads != *seen &&
              InterlockedCompareExchange(&e->last_short, 0, 0) != 0;
    *seen = reads;
  }
  ReleaseSRWLockShared(&noted_lock);
  return drained;
}
