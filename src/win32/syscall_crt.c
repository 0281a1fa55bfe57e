/* SPDX-License-Identifier: MIT */
/* The calls of syscall.c's door (see there: each announced to the lock
 * model) that go through the C runtime or carry the program's own data:
 * a descriptor's handle from the C runtime's table, without its
 * invalid-parameter handler ending the process; and the reads, writes and
 * close that anypoll_read, anypoll_write and anypoll_close (rw.c) make on
 * a caller's descriptor. */
#include <io.h>
#include <stdint.h>

#include "win.h"

/* ---- The C runtime's descriptor table -------------------------------------
 * _get_osfhandle on a descriptor that is not open returns -1. The UCRT
 * (and msvcr80 to msvcr120) first calls the invalid-parameter handler in
 * effect, whose default ends the process; polling a closed descriptor must
 * give POLLNVAL instead, so a do-nothing handler is in effect around the
 * call. Windows' msvcrt.dll calls no handler a program can set: there
 * mingw-w64's _set_invalid_parameter_handler is an emulation (a variable in
 * libmsvcrt.a) that msvcrt.dll never reads. docs/windows-design.md, "C
 * runtimes", has the details. */

static void __cdecl quiet_handler(const wchar_t *expr, const wchar_t *func,
                                  const wchar_t *file, unsigned line,
                                  uintptr_t reserved) {
  (void)expr, (void)func, (void)file, (void)line, (void)reserved;
}

/* The debug UCRT (MSVC's /MDd and /MTd) checks the descriptor with an
 * assertion before it calls the invalid-parameter handler: _CrtDbgReportW
 * with _CRT_ASSERT, whose default in a windowed or console program is a
 * dialog box that waits for a click. The handler swap below does not reach
 * it. A report hook declines the report, for the calling thread only and
 * only while it is inside _get_osfhandle (the hook list is process-wide;
 * the flag is per thread, so other threads' assertions still show). The
 * release CRTs have no such report. No MSVC builds here: this block is
 * compile-checked with mingw by defining ANYPOLL_CHECK_DEBUG_CRT_HOOK,
 * which mingw's crtdbg.h lets through as no-op macros. */
#if defined(_DEBUG) &&                                                       \
    (defined(_MSC_VER) || defined(ANYPOLL_CHECK_DEBUG_CRT_HOOK))
#  include <crtdbg.h>
#  ifdef _MSC_VER
static __declspec(thread) int in_os_handle;
#  else
static _Thread_local int in_os_handle;
#  endif

static int __cdecl quiet_report_w(int type, wchar_t *message, int *ret) {
  (void)message;
  if (type != _CRT_ASSERT || !in_os_handle)
    return FALSE;
  *ret = 0; /* no debugger break */
  return TRUE; /* handled: no dialog */
}

static int __cdecl quiet_report(int type, char *message, int *ret) {
  (void)message;
  if (type != _CRT_ASSERT || !in_os_handle)
    return FALSE;
  *ret = 0;
  return TRUE;
}

static intptr_t crt_get_osfhandle(int fd) {
  (void)quiet_report_w, (void)quiet_report;
  _CrtSetReportHookW2(_CRT_RPTHOOK_INSTALL, quiet_report_w);
  _CrtSetReportHook2(_CRT_RPTHOOK_INSTALL, quiet_report);
  in_os_handle = 1;
  intptr_t os = _get_osfhandle(fd);
  in_os_handle = 0;
  _CrtSetReportHook2(_CRT_RPTHOOK_REMOVE, quiet_report);
  _CrtSetReportHookW2(_CRT_RPTHOOK_REMOVE, quiet_report_w);
  return os;
}
#else
static intptr_t crt_get_osfhandle(int fd) { return _get_osfhandle(fd); }
#endif

#if defined(_UCRT) || defined(_MSC_VER)
/* The UCRT has a per-thread handler, which takes precedence over the
 * process's: other threads keep theirs. (mingw-w64's headers do not
 * declare it; ucrtbase.dll exports it.) */
#  ifndef _MSC_VER
_CRTIMP _invalid_parameter_handler __cdecl
    _set_thread_local_invalid_parameter_handler(_invalid_parameter_handler);
#  endif
intptr_t anypoll__sys_os_handle(int fd) {
  _invalid_parameter_handler old =
      _set_thread_local_invalid_parameter_handler(quiet_handler);
  intptr_t os = crt_get_osfhandle(fd);
  anypoll__model_crt_check(fd, os);
  _set_thread_local_invalid_parameter_handler(old);
  return os;
}
#else
/* msvcrt: mingw-w64's emulated process-wide handler, which msvcrt.dll
 * itself never calls; swapped so that code in this module that calls the
 * emulated handler (and the tests' lock model) sees a quiet one. It is
 * swapped while any of our threads is inside _get_osfhandle (a count, so that overlapping calls
 * restore the right one), and put back only if nobody replaced it
 * meanwhile. The cost of the window: another thread's invalid parameter
 * during it is ignored (its function fails with EINVAL/EBADF) instead of
 * reaching the program's handler. */
static SRWLOCK handler_lock = SRWLOCK_INIT;
static int handler_depth;
static _invalid_parameter_handler handler_saved;

intptr_t anypoll__sys_os_handle(int fd) {
  AcquireSRWLockExclusive(&handler_lock);
  if (handler_depth++ == 0)
    handler_saved = _set_invalid_parameter_handler(quiet_handler);
  ReleaseSRWLockExclusive(&handler_lock);
  intptr_t os = crt_get_osfhandle(fd);
  anypoll__model_crt_check(fd, os);
  AcquireSRWLockExclusive(&handler_lock);
  if (--handler_depth == 0 &&
      _get_invalid_parameter_handler() == quiet_handler)
    _set_invalid_parameter_handler(handler_saved);
  ReleaseSRWLockExclusive(&handler_lock);
  return os;
}
#endif

/* ---- The program's own reads and writes (rw.c) ----------------------------
 * anypoll_read and anypoll_write on a caller's descriptor: the overlapped
 * request on a handle opened for overlapped I/O (no file-object lock), or
 * the C runtime's _read/_write on any other. */

BOOL anypoll__sys_read_overlapped(HANDLE h, void *buf, DWORD len,
                                  OVERLAPPED *ov, DWORD *error) {
  anypoll__model_call_begin(h, "ReadFile(overlapped)");
  BOOL ok = ReadFile(h, buf, len, NULL, ov);
  *error = ok ? 0 : GetLastError();
  anypoll__model_call_end(h);
  return ok;
}

BOOL anypoll__sys_write_overlapped(HANDLE h, const void *buf, DWORD len,
                                   OVERLAPPED *ov, DWORD *error) {
  anypoll__model_call_begin(h, "WriteFile(overlapped)");
  BOOL ok = WriteFile(h, buf, len, NULL, ov);
  *error = ok ? 0 : GetLastError();
  anypoll__model_call_end(h);
  return ok;
}

/* The result of a request that has completed: answered from the
 * OVERLAPPED, no request to the file. */
BOOL anypoll__sys_overlapped_result(HANDLE h, OVERLAPPED *ov, DWORD *n,
                                    DWORD *error) {
  BOOL ok = GetOverlappedResult(h, ov, n, FALSE);
  *error = ok ? 0 : GetLastError();
  return ok;
}

int anypoll__sys_crt_read(int fd, HANDLE h, void *buf, unsigned len) {
  anypoll__model_call_begin(h, "_read");
  int n = _read(fd, buf, len);
  anypoll__model_call_end(h);
  return n;
}

int anypoll__sys_crt_write(int fd, HANDLE h, const void *buf, unsigned len) {
  anypoll__model_call_begin(h, "_write");
  int n = _write(fd, buf, len);
  anypoll__model_call_end(h);
  return n;
}

/* anypoll_close on any other descriptor: the program's own close, made for
 * it, and no more announced to the lock model than its own _close is. That
 * it may wait behind a read of ours (a pipe still registered in a set, or
 * being polled by another thread) is the header's rule for the program,
 * as for _close (windows-design.md, "The program's own calls on a
 * registered pipe"). */
int anypoll__sys_crt_close(int fd) { return _close(fd); }
