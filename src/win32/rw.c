/* SPDX-License-Identifier: MIT */
/* anypoll_read, anypoll_write and anypoll_close on Windows.
 *
 * On a handle opened for overlapped I/O (anypoll_pipe's read end, a socket,
 * a named pipe the program made so) they issue the overlapped ReadFile or
 * WriteFile with an OVERLAPPED and an event of their own and wait for that
 * event: blocking, as _read and _write block on a _pipe() pipe. The C
 * runtime cannot do this: its ReadFile passes no OVERLAPPED, which
 * Microsoft documents as incorrect on such a handle (the call may report
 * completion before the data has come). The event's low bit is set: then
 * no completion packet goes to a port the handle is associated with
 * (GetQueuedCompletionStatus, remarks), so the program's reads never show
 * up in a watch set's port (set_anypipe.c). Each call has its own
 * OVERLAPPED on its stack and each thread its own event, so concurrent
 * readers and writers never share one: each request completes by itself,
 * with its own bytes.
 *
 * On any other handle they are _read and _write. Whether a handle is
 * asynchronous is its FileModeInformation, asked through the gate (a
 * synchronous pipe with a helper read of ours pending cannot be asked, and
 * is synchronous). Only handles without a file position may be opened for
 * overlapped I/O here: the requests carry offset 0.
 *
 * anypoll_close closes a socket's descriptor with closesocket, once, and
 * frees the descriptor without closing the handle twice (syscall.c says
 * how); any other descriptor with _close. */
#include <errno.h>
#include <io.h>
#include <limits.h>
#include <stdlib.h>

#include "win.h"

/* The calling thread's event, kept in a fiber-local slot whose destructor
 * closes it when the thread (or fiber) ends. */
static INIT_ONCE rw_once = INIT_ONCE_STATIC_INIT;
static DWORD rw_slot = FLS_OUT_OF_INDEXES;

static void WINAPI rw_event_free(void *event) {
  if (event != NULL)
    CloseHandle(event);
}

static BOOL CALLBACK rw_init(INIT_ONCE *once, void *param, void **ctx) {
  (void)once, (void)param, (void)ctx;
  rw_slot = FlsAlloc(rw_event_free);
  return TRUE;
}

/* The thread's event, or a new one the caller closes (*own set) when no
 * slot could hold it; NULL and errno when none could be made. Manual
 * reset: ReadFile and WriteFile reset it when they start. */
static HANDLE rw_event(int *own) {
  *own = 0;
  InitOnceExecuteOnce(&rw_once, rw_init, NULL, NULL);
  HANDLE event = rw_slot != FLS_OUT_OF_INDEXES ? FlsGetValue(rw_slot) : NULL;
  if (event != NULL)
    return event;
  event = CreateEventW(NULL, TRUE, FALSE, NULL);
  if (event == NULL) {
    anypoll__set_errno_win(GetLastError());
    return NULL;
  }
  if (rw_slot == FLS_OUT_OF_INDEXES || !FlsSetValue(rw_slot, event))
    *own = 1;
  return event;
}

static int rw_is_async(int fd, HANDLE h) {
  /* A read end a watch set holds was found asynchronous at its add, and
   * stays what it was while registered (anypipe.c). */
  if (anypoll__anypipe_noted(fd, h))
    return 1;
  struct anypoll__gate gate;
  if (anypoll__gate_begin(&gate, h))
    return 0; /* a helper read of ours is pending: a synchronous pipe */
  ULONG mode = 0;
  NTSTATUS st = anypoll__sys_mode_information(h, &mode);
  anypoll__gate_end(&gate);
  /* FILE_SYNCHRONOUS_IO_ALERT | FILE_SYNCHRONOUS_IO_NONALERT; a handle that
   * cannot say (a console before Windows 8) is the C runtime's. */
  return st >= 0 && (mode & 0x30) == 0;
}

/* What a failed request means, as read() and write() say it: end of file
 * (0) for a read of a pipe whose writer has gone, EPIPE for a write to a
 * pipe whose reader has gone. */
static int rw_error(DWORD error, int writing) {
  switch (error) {
  case ERROR_BROKEN_PIPE:
  case ERROR_NO_DATA: /* the pipe is being closed */
  case ERROR_PIPE_NOT_CONNECTED:
    if (!writing)
      return 0;
    errno = EPIPE;
    return -1;
  case ERROR_HANDLE_EOF:
    if (!writing)
      return 0;
    break;
  case ERROR_ACCESS_DENIED: /* the end is not open for this direction */
  case ERROR_INVALID_HANDLE:
    errno = EBADF;
    return -1;
  case ERROR_OPERATION_ABORTED: /* CancelIoEx from another thread */
    errno = EINTR;
    return -1;
  default:
    break;
  }
  return anypoll__set_errno_win(error);
}

/* One overlapped request: a read into rbuf, or a write of wbuf. */
static int rw_overlapped(HANDLE h, void *rbuf, const void *wbuf,
                         unsigned len) {
  int writing = wbuf != NULL;
  int own;
  HANDLE event = rw_event(&own);
  if (event == NULL)
    return -1;
  OVERLAPPED ov;
  ZeroMemory(&ov, sizeof ov);
  ov.hEvent = (HANDLE)((UINT_PTR)event | 1);
  DWORD error, n = 0;
  BOOL ok = writing
                ? anypoll__sys_write_overlapped(h, wbuf, len, &ov, &error)
                : anypoll__sys_read_overlapped(h, rbuf, len, &ov, &error);
  if (!ok && error == ERROR_IO_PENDING) {
    /* Not alertable: _read and _write run no APCs either. The event is
     * waited on without its low bit (a handle's low bits are ignored by
     * the system; this does not rely on it). */
    WaitForSingleObject(event, INFINITE);
    ok = TRUE;
  }
  if (ok)
    ok = anypoll__sys_overlapped_result(h, &ov, &n, &error);
  if (own)
    CloseHandle(event);
  if (!ok) {
    /* A message-mode pipe's message longer than len: what fits was read
     * (read() on a byte stream would have taken the same). */
    if (!writing && error == ERROR_MORE_DATA)
      return (int)n;
    return rw_error(error, writing);
  }
  return (int)n;
}

/* Shared by both: the checks _read and _write make first. */
static HANDLE rw_handle(int fd, const void *buf, unsigned len) {
  if (len > INT_MAX || (buf == NULL && len > 0)) {
    errno = EINVAL;
    return INVALID_HANDLE_VALUE;
  }
  /* The ntdll entry points the mode query needs (once per process). */
  if (anypoll__win_init() != 0)
    return INVALID_HANDLE_VALUE;
  intptr_t os = anypoll__sys_os_handle(fd); /* apart: -Wbad-function-cast */
  HANDLE h = (HANDLE)os;
  if (h == INVALID_HANDLE_VALUE)
    errno = EBADF;
  return h;
}

int anypoll_read(int fd, void *buf, unsigned len) {
  HANDLE h = rw_handle(fd, buf, len);
  if (h == INVALID_HANDLE_VALUE)
    return -1;
  if (!rw_is_async(fd, h))
    return anypoll__sys_crt_read(fd, h, buf, len);
  if (len == 0)
    return 0; /* as read(): no I/O, no wait */
  int n = rw_overlapped(h, buf, NULL, len);
  anypoll__anypipe_read_done(fd, h, n, len);
  return n;
}

int anypoll_write(int fd, const void *buf, unsigned len) {
  HANDLE h = rw_handle(fd, buf, len);
  if (h == INVALID_HANDLE_VALUE)
    return -1;
  /* The parent's end of a child's stdin (spawn_stdin.c). */
  int result;
  if (anypoll__stdin_write(fd, h, buf, len, &result))
    return result;
  if (!rw_is_async(fd, h)) {
    int n = anypoll__sys_crt_write(fd, h, buf, len);
    /* The C runtime maps a pipe whose reader has gone (ERROR_NO_DATA, "the
     * pipe is being closed") to EINVAL; write() says EPIPE. */
    if (n < 0 && (_doserrno == ERROR_NO_DATA || _doserrno == ERROR_BROKEN_PIPE))
      errno = EPIPE;
    return n;
  }
  if (len == 0)
    return 0;
  return rw_overlapped(h, NULL, buf, len);
}

int anypoll_close(int fd) {
  if (anypoll__win_init() != 0)
    return -1;
  /* Not open: the UCRT's _close would call the invalid-parameter handler,
   * whose default ends the process; anypoll__sys_os_handle keeps it
   * quiet. */
  if (fd < 0 || anypoll__sys_os_handle(fd) == -1) {
    errno = EBADF;
    return -1;
  }
  /* The classification of anypoll_poll, gate included: asking a
   * synchronous pipe with a read of ours parked on it whether it is a
   * socket would wait for the read. */
  /* A process descriptor (spawn.c) is an anypoll_pipe read end with a
   * process behind it: its wait and handles go first. */
  anypoll__spawn_release(fd);
  struct anypoll__item item;
  anypoll__classify((SOCKET)fd, &item);
  if (item.kind != ANYPOLL_KIND_SOCKET)
    return anypoll__sys_crt_close(fd);
  DWORD error = anypoll__sys_close_socket_fd(fd, item.handle);
  return error != 0 ? anypoll__set_errno_win(error) : 0;
}
