/* Works out what a C runtime descriptor refers to: the kind of handle
 * decides how its readiness is checked and waited for. Every call that goes
 * to the file object of the caller's handle runs inside the gate (pipe.c):
 * while a zero-byte read of ours is pending on that file object, Windows
 * would make it wait for the read. */
#include <io.h>
#include <stdint.h>
#include <stdlib.h>

#include "win.h"

/* ---- NT object calls answered by the object manager --------------------
 * Neither takes the file object's lock, so both are safe while a read of
 * ours is pending (libuv moved its access query to NtQueryObject for this
 * reason: node issue 10836, libuv PR 1273). */

typedef NTSTATUS(NTAPI query_object_fn)(HANDLE, ULONG, PVOID, ULONG, PULONG);
typedef NTSTATUS(NTAPI compare_objects_fn)(HANDLE, HANDLE);

static INIT_ONCE object_once = INIT_ONCE_STATIC_INIT;
static query_object_fn *query_object;
/* NtCompareObjects: Windows 10 and later (and Wine 8); NULL before. */
static compare_objects_fn *compare_objects;

static BOOL CALLBACK object_init(PINIT_ONCE once, PVOID param, PVOID *ctx) {
  (void)once, (void)param, (void)ctx;
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  if (ntdll != NULL) {
    /* Through void (*)(void), as backends.c resolves its entry points:
     * no integer or void * in between, which -pedantic rejects. */
    query_object = (query_object_fn *)(void (*)(void))GetProcAddress(
        ntdll, "NtQueryObject");
    compare_objects = (compare_objects_fn *)(void (*)(void))GetProcAddress(
        ntdll, "NtCompareObjects");
  }
  return TRUE;
}

int anypoll__same_object(HANDLE a, HANDLE b) {
  if (a == b)
    return 1;
  InitOnceExecuteOnce(&object_once, object_init, NULL, NULL);
  /* STATUS_SUCCESS: same object; STATUS_NOT_SAME_OBJECT or an error (a
   * handle closed meanwhile): not known to be the same. */
  return compare_objects != NULL && compare_objects(a, b) == 0;
}

/* The handle's granted access, from the handle table; *sole tells whether
 * it was then the only handle to its object in the whole system. */
static ACCESS_MASK handle_access(HANDLE h, int *sole) {
  InitOnceExecuteOnce(&object_once, object_init, NULL, NULL);
  PUBLIC_OBJECT_BASIC_INFORMATION info;
  *sole = 0;
  if (query_object == NULL ||
      query_object(h, 0 /* ObjectBasicInformation */, &info, sizeof info,
                   NULL) < 0)
    return 0;
  *sole = info.HandleCount == 1;
  return info.GrantedAccess;
}

int anypoll__handle_is_async(HANDLE h) {
  struct anypoll__gate gate;
  if (anypoll__gate_begin(&gate, h))
    return 0; /* our helpers read synchronous file objects only */
  IO_STATUS_BLOCK iosb;
  ULONG mode = 0;
  anypoll__onh_begin(h, "NtQueryInformationFile(FileModeInformation)");
  NTSTATUS st = anypoll__nt.query_information_file(
      h, &iosb, &mode, sizeof mode, ANYPOLL_FILE_MODE_INFORMATION);
  anypoll__onh_end(h);
  anypoll__gate_end(&gate);
  if (st < 0)
    return 0;
  /* FILE_SYNCHRONOUS_IO_ALERT | FILE_SYNCHRONOUS_IO_NONALERT */
  return (mode & 0x30) == 0;
}

/* ---- The C runtime's descriptor table -----------------------------------
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
static intptr_t os_handle(int fd) {
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

static intptr_t os_handle(int fd) {
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

/* ---- Classification ------------------------------------------------------ */

/* Wine 8 quirk: getsockopt() on a listening socket now and then fails with
 * WSAENOTSOCK while a connection is arriving (seen in about 1 of 60 runs of
 * the socket_listener_pending_connection test under the yield strategy,
 * which classifies the socket thousands of times); asked again at once, it
 * answers. A pipe fails every time, so only a second failure makes a
 * handle "not a socket". This costs a pipe one more call per
 * classification. */
static int handle_is_socket(HANDLE h, int *type) {
  for (int attempt = 0; attempt < 2; attempt++) {
    int len = sizeof *type;
    /* Winsock asks the handle for its socket context with a device I/O
     * control: a request on the file object. */
    anypoll__onh_begin(h, "getsockopt(SO_TYPE)");
    int r = getsockopt((SOCKET)h, SOL_SOCKET, SO_TYPE, (char *)type, &len);
    int error = r == 0 ? 0 : WSAGetLastError();
    anypoll__onh_end(h);
    if (r == 0)
      return 1;
    if (error != WSAENOTSOCK)
      return 0;
  }
  return 0;
}

static void set_pipe_access(struct anypoll__item *item) {
  int sole;
  ACCESS_MASK access = handle_access(item->handle, &sole);
  item->sole = sole != 0;
  item->kind = ANYPOLL_KIND_PIPE;
  item->readable = (access & FILE_READ_DATA) != 0;
  item->writable = (access & FILE_WRITE_DATA) != 0;
}

static void classify_handle(HANDLE h, struct anypoll__item *item) {
  /* Pipes first: FilePipeLocalInformation is answered by the named-pipe
   * file system only, so one query both recognises a pipe (sockets,
   * consoles, disk files and other devices refuse it) and holds what the
   * call's first check needs. GetFileType and getsockopt, which a pipe
   * used to cost (one system call, and one or two device requests that a
   * pipe refuses), are asked only of what is not a pipe, and of pipe
   * handles opened without FILE_READ_ATTRIBUTES, which refuse the query
   * too and are recognised below as before. */
  if (anypoll__pipe_query_info(h, &item->info)) {
    set_pipe_access(item);
    item->have_info = 1;
    item->message =
        item->info.NamedPipeType == ANYPOLL_FILE_PIPE_MESSAGE_TYPE;
    return;
  }
  /* Sockets next: for a socket of this process Winsock answers SO_TYPE
   * from its own context, so GetFileType (a system call) is left to what
   * is neither. One try only here: the Wine quirk below is handled when
   * GetFileType then says "pipe". */
  int socktype;
  int len = sizeof socktype;
  anypoll__onh_begin(h, "getsockopt(SO_TYPE)");
  int r = getsockopt((SOCKET)h, SOL_SOCKET, SO_TYPE, (char *)&socktype, &len);
  anypoll__onh_end(h);
  if (r == 0) {
    item->kind = ANYPOLL_KIND_SOCKET;
    item->stream = socktype == SOCK_STREAM;
    return;
  }
  anypoll__onh_begin(h, "GetFileType");
  /* GetFileType leaves the error alone when it answers; the getsockopt
   * above has just set one. */
  SetLastError(NO_ERROR);
  DWORD type = GetFileType(h);
  DWORD type_error = GetLastError();
  anypoll__onh_end(h);
  DWORD mode;
  switch (type) {
  case FILE_TYPE_PIPE:
    if (handle_is_socket(h, &socktype)) {
      item->kind = ANYPOLL_KIND_SOCKET;
      item->stream = socktype == SOCK_STREAM;
    } else {
      set_pipe_access(item);
    }
    return;
  case FILE_TYPE_CHAR:
    /* Consoles are recognised by asking them, not by the handle's bit
     * pattern, which stopped identifying them in Windows 8. */
    anypoll__onh_begin(h, "GetConsoleMode");
    if (GetConsoleMode(h, &mode)) {
      DWORD pending;
      item->kind = GetNumberOfConsoleInputEvents(h, &pending)
                       ? ANYPOLL_KIND_CONSOLE_IN
                       : ANYPOLL_KIND_CONSOLE_OUT;
    } else {
      item->kind = ANYPOLL_KIND_FILE;
    }
    anypoll__onh_end(h);
    return;
  case FILE_TYPE_DISK:
    item->kind = ANYPOLL_KIND_FILE;
    return;
  default:
    /* FILE_TYPE_UNKNOWN is also what a closed handle gives; only a handle
     * that answered without error is a device we can treat as a file. */
    item->kind = type_error == NO_ERROR ? ANYPOLL_KIND_FILE
                                        : ANYPOLL_KIND_INVALID;
    return;
  }
}

void anypoll__classify(SOCKET fd, struct anypoll__item *item) {
  item->handle = INVALID_HANDLE_VALUE;
  item->readable = item->writable = item->async = item->stream = 0;
  item->mode_known = item->no_wait = item->fired = item->empty_fires = 0;
  item->sole = item->have_info = item->quiet = item->message = 0;
  /* The pollfd member is a SOCKET, so a caller's -1 arrives as
   * INVALID_SOCKET: any value that is negative as a signed number means
   * "ignore this entry", as in POSIX. */
  if ((intptr_t)fd < 0) {
    item->kind = ANYPOLL_KIND_IGNORED;
    return;
  }
  item->kind = ANYPOLL_KIND_INVALID;
  if (fd > INT32_MAX)
    return;
  /* -1 (EBADF) for descriptors that are not open, and -2 for 0..2 when the
   * process has no standard handle. */
  intptr_t os = os_handle((int)fd);
  if (os == -1 || os == -2 || os == 0)
    return;
  HANDLE h = (HANDLE)os;
  item->handle = h;

  struct anypoll__gate gate;
  if (anypoll__gate_begin(&gate, h)) {
    /* A read of ours is pending on the file object: it is a synchronous
     * pipe, and asking it anything but its access would wait for the read. */
    set_pipe_access(item);
    item->mode_known = 1;
    return;
  }
  classify_handle(h, item);
  anypoll__gate_end(&gate);
}
