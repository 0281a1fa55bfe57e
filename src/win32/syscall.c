/* SPDX-License-Identifier: MIT */
/* The one door to a caller's handle: every Windows call the library makes
 * on a handle it does not own is a small function here.
 *
 * Each one announces itself to the lock model (model.c, test builds only:
 * anypoll__model_call_begin/_end around a call, anypoll__model_read_begin/
 * _end around a helper's synchronous zero-byte read), so that the tests
 * catch a call that would wait behind a read of ours on real Windows. This
 * is also the place where fault injection hooks in. Calls that never take a
 * file object's lock (NtQueryObject, NtCompareObjects, DuplicateHandle,
 * CancelIoEx, _get_osfhandle's table look-up) are not announced.
 *
 * A few calls here go to handles of ours that stand for a caller's handle
 * (the private duplicate an overlapped read is issued through, and its
 * cancel): they are kept here so that every ReadFile and CancelIoEx of the
 * library is in one file. Calls on handles that are ours alone (the AFD
 * device handle in socket.c, our events and threads) stay in their files.
 * Whether a call is gated (win.h, the gate) is the caller's business: this
 * layer only makes the call. syscall_crt.c has the calls on the C
 * runtime's descriptors and the program's own reads and writes. */
#include <io.h>
#include <stdint.h>
#include <stdlib.h>

#include "win.h"

/* ---- Pipes --------------------------------------------------------------- */

int anypoll__sys_pipe_local_info(HANDLE h, anypoll__pipe_local_info *info) {
  IO_STATUS_BLOCK iosb;
  anypoll__model_call_begin(h,
                            "NtQueryInformationFile(FilePipeLocalInformation)");
  NTSTATUS st = anypoll__nt.query_information_file(
      h, &iosb, info, sizeof *info, ANYPOLL_FILE_PIPE_LOCAL_INFORMATION);
  anypoll__model_call_end(h);
  return st >= 0;
}

BOOL anypoll__sys_peek_named_pipe(HANDLE h, DWORD *avail, DWORD *error) {
  anypoll__model_call_begin(h, "PeekNamedPipe");
  BOOL ok = PeekNamedPipe(h, NULL, 0, NULL, avail, NULL);
  *error = ok ? 0 : GetLastError();
  anypoll__model_call_end(h);
  return ok;
}

NTSTATUS anypoll__sys_pipe_peek(HANDLE h, anypoll__pipe_peek_head *head) {
  IO_STATUS_BLOCK iosb;
  anypoll__model_call_begin(h, "NtFsControlFile(FSCTL_PIPE_PEEK)");
  NTSTATUS st = anypoll__nt.fs_control_file(h, NULL, NULL, NULL, &iosb,
                                            ANYPOLL_FSCTL_PIPE_PEEK, NULL, 0,
                                            head, sizeof *head);
  anypoll__model_call_end(h);
  return st;
}

BOOL anypoll__sys_read_zero(HANDLE h, DWORD *error) {
  char byte;
  DWORD got;
  anypoll__model_read_begin(h);
  BOOL ok = ReadFile(h, &byte, 0, &got, NULL);
  *error = ok ? 0 : GetLastError();
  anypoll__model_read_end(h);
  return ok;
}

BOOL anypoll__sys_read_zero_overlapped(HANDLE h, OVERLAPPED *ov,
                                       DWORD *error) {
  static char byte;
  /* An asynchronous file object has no file-object lock; announced all the
   * same, so that the model sees every call on a caller's file object. */
  anypoll__model_call_begin(h, "ReadFile(overlapped)");
  BOOL ok = ReadFile(h, &byte, 0, NULL, ov);
  *error = ok ? 0 : GetLastError();
  anypoll__model_call_end(h);
  return ok;
}

/* A socket's zero-byte overlapped receive: it ends when the socket has
 * data, its peer's end of stream, or an error, and takes nothing. Winsock
 * sockets have no file-object lock; announced like every call on a
 * caller's object. */
BOOL anypoll__sys_recv_zero_overlapped(HANDLE s, OVERLAPPED *ov,
                                       DWORD *error) {
  static char byte;
  WSABUF buf = { 0, &byte };
  DWORD flags = 0;
  anypoll__model_call_begin(s, "WSARecv(overlapped)");
  int r = WSARecv((SOCKET)s, &buf, 1, NULL, &flags, ov, NULL);
  *error = r == 0 ? 0 : (DWORD)WSAGetLastError();
  anypoll__model_call_end(s);
  return r == 0;
}

/* TRUE when the cancel found the request (and so h names the file object
 * it was issued on). */
BOOL anypoll__sys_cancel_io(HANDLE h, OVERLAPPED *ov) {
  return CancelIoEx(h, ov);
}

BOOL anypoll__sys_duplicate(HANDLE h, HANDLE *out) {
  return DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), out, 0,
                         FALSE, DUPLICATE_SAME_ACCESS);
}

/* ---- Classification ----------------------------------------------------- */

NTSTATUS anypoll__sys_mode_information(HANDLE h, ULONG *mode) {
  IO_STATUS_BLOCK iosb;
  anypoll__model_call_begin(h, "NtQueryInformationFile(FileModeInformation)");
  NTSTATUS st = anypoll__nt.query_information_file(
      h, &iosb, mode, sizeof *mode, ANYPOLL_FILE_MODE_INFORMATION);
  anypoll__model_call_end(h);
  return st;
}

/* Winsock asks the handle for its socket context with a device I/O
 * control: a request on the file object. */
int anypoll__sys_socket_type(HANDLE h, int *type, int *error) {
  int len = sizeof *type;
  anypoll__model_call_begin(h, "getsockopt(SO_TYPE)");
  int r = getsockopt((SOCKET)h, SOL_SOCKET, SO_TYPE, (char *)type, &len);
  *error = r == 0 ? 0 : WSAGetLastError();
  anypoll__model_call_end(h);
  return r;
}

DWORD anypoll__sys_file_type(HANDLE h, DWORD *error) {
  anypoll__model_call_begin(h, "GetFileType");
  /* GetFileType leaves the error alone when it answers; a call before it
   * may have just set one. */
  SetLastError(NO_ERROR);
  DWORD type = GetFileType(h);
  *error = GetLastError();
  anypoll__model_call_end(h);
  return type;
}

int anypoll__sys_console_kind(HANDLE h) {
  DWORD mode;
  int kind = -1;
  anypoll__model_call_begin(h, "GetConsoleMode");
  if (GetConsoleMode(h, &mode)) {
    DWORD pending;
    kind = GetNumberOfConsoleInputEvents(h, &pending) ? 1 : 0;
  }
  anypoll__model_call_end(h);
  return kind;
}

/* Answered from the handle table by the object manager, never behind a
 * file object's lock (libuv moved its access query to NtQueryObject for
 * this reason: node issue 10836, libuv PR 1273). */
ACCESS_MASK anypoll__sys_handle_access(HANDLE h, int *sole) {
  PUBLIC_OBJECT_BASIC_INFORMATION info;
  *sole = 0;
  if (anypoll__nt.query_object == NULL ||
      anypoll__nt.query_object(h, 0 /* ObjectBasicInformation */, &info,
                               sizeof info, NULL) < 0)
    return 0;
  *sole = info.HandleCount == 1;
  return info.GrantedAccess;
}

/* The handle's own flag, answered by the object manager (no file-object
 * lock): whether a child created with handle inheritance gets it. */
int anypoll__sys_handle_inheritable(HANDLE h) {
  DWORD flags = 0;
  return GetHandleInformation(h, &flags) && (flags & HANDLE_FLAG_INHERIT);
}

int anypoll__sys_compare_objects(HANDLE a, HANDLE b) {
  return anypoll__nt.compare_objects != NULL &&
         anypoll__nt.compare_objects(a, b) == 0;
}

/* ---- Consoles -------------------------------------------------------------
 * No read of ours is ever pending on a console; announced all the same. */

BOOL anypoll__sys_console_mode(HANDLE h, DWORD *mode) {
  anypoll__model_call_begin(h, "GetConsoleMode");
  BOOL ok = GetConsoleMode(h, mode);
  anypoll__model_call_end(h);
  return ok;
}

BOOL anypoll__sys_console_count(HANDLE h, DWORD *count) {
  anypoll__model_call_begin(h, "GetNumberOfConsoleInputEvents");
  BOOL ok = GetNumberOfConsoleInputEvents(h, count);
  anypoll__model_call_end(h);
  return ok;
}

BOOL anypoll__sys_console_peek(HANDLE h, INPUT_RECORD *r, DWORD n,
                               DWORD *got) {
  anypoll__model_call_begin(h, "PeekConsoleInputW");
  BOOL ok = PeekConsoleInputW(h, r, n, got);
  anypoll__model_call_end(h);
  return ok;
}

BOOL anypoll__sys_console_read(HANDLE h, INPUT_RECORD *r, DWORD n,
                               DWORD *got) {
  anypoll__model_call_begin(h, "ReadConsoleInputW");
  BOOL ok = ReadConsoleInputW(h, r, n, got);
  anypoll__model_call_end(h);
  return ok;
}

/* A thread-pool wait on a console input handle (the watch set's): the
 * pool waits on the handle's object, signalled while input is queued. The
 * callback runs on a worker thread, not in the wait thread: Wine 8 crashes
 * when a WT_EXECUTEINWAITTHREAD callback races the blocking unregister
 * (set_pipe.c, iocp_wait_async, says how). */
BOOL anypoll__sys_console_wait(HANDLE *wait, HANDLE h,
                               WAITORTIMERCALLBACK fn, void *ctx) {
  anypoll__model_call_begin(h, "RegisterWaitForSingleObject");
  BOOL ok = RegisterWaitForSingleObject(wait, h, fn, ctx, INFINITE,
                                        WT_EXECUTEONLYONCE);
  anypoll__model_call_end(h);
  return ok;
}

/* ---- Sockets --------------------------------------------------------------
 * No read of ours is ever pending on a socket, so the model must never fire
 * here, and would if a socket were ever mistaken for a pipe we wait on. */

int anypoll__sys_socket_ioctl_handle(HANDLE s, DWORD code, const char *call,
                                     SOCKET *out, int *error) {
  DWORD bytes;
  anypoll__model_call_begin(s, call);
  int r =
      WSAIoctl((SOCKET)s, code, NULL, 0, out, sizeof *out, &bytes, NULL, NULL);
  *error = r == 0 ? 0 : WSAGetLastError();
  anypoll__model_call_end(s);
  return r;
}

int anypoll__sys_socket_name(HANDLE s, int *error) {
  struct sockaddr_storage addr;
  int len = sizeof addr;
  anypoll__model_call_begin(s, "getsockname");
  int r = getsockname((SOCKET)s, (struct sockaddr *)&addr, &len);
  *error = r == 0 ? 0 : WSAGetLastError();
  anypoll__model_call_end(s);
  return r;
}

/* The bytes s holds to read (FIONREAD), or -1. */
long anypoll__sys_socket_unread(HANDLE s) {
  u_long n = 0;
  anypoll__model_call_begin(s, "ioctlsocket(FIONREAD)");
  int r = ioctlsocket((SOCKET)s, FIONREAD, &n);
  anypoll__model_call_end(s);
  return r == 0 ? (long)n : -1;
}

/* 1 when s has a peer: connected, not listening nor connecting. */
int anypoll__sys_socket_connected(HANDLE s) {
  struct sockaddr_storage addr;
  int len = sizeof addr;
  anypoll__model_call_begin(s, "getpeername");
  int r = getpeername((SOCKET)s, (struct sockaddr *)&addr, &len);
  anypoll__model_call_end(s);
  return r == 0;
}

/* ---- Closing a socket's descriptor ---------------------------------------
 * anypoll_close on a socket's descriptor (rw.c). A socket must be closed
 * by Winsock, but _close, the only way to free the descriptor, calls
 * CloseHandle on the socket's handle; and closesocket followed by _close
 * closes the handle value twice, the second time perhaps a handle that
 * another thread was given meanwhile (Windows reuses values at once; under
 * Wine even a pending request's handle). So the handle is protected from
 * CloseHandle while _close frees the descriptor (its CloseHandle fails;
 * msvcrt and the UCRT free the slot all the same), its flag is put back as
 * it was, and it is closed once, by closesocket. A value that cannot be
 * protected is no open handle (a layered provider's socket is a kernel
 * handle too, made by WPUCreateSocketHandle): then nothing is closed, the
 * descriptor included, since its CloseHandle could hit a handle that
 * another thread has been given that value for. closesocket of a
 * non-blocking socket whose SO_LINGER asks for a wait fails with
 * WSAEWOULDBLOCK and leaves the socket open; it is made blocking (which
 * needs its event association cleared first) and closed again, lingering
 * as close() does on Linux. Not announced to the lock model: no read of
 * ours is ever pending on a socket. Returns 0, or a Win32/Winsock error. */
DWORD anypoll__sys_close_socket_fd(int fd, HANDLE h) {
  DWORD flags;
  if (!GetHandleInformation(h, &flags) ||
      !SetHandleInformation(h, HANDLE_FLAG_PROTECT_FROM_CLOSE,
                            HANDLE_FLAG_PROTECT_FROM_CLOSE))
    return GetLastError();
  _close(fd);
  SetHandleInformation(h, HANDLE_FLAG_PROTECT_FROM_CLOSE,
                       flags & HANDLE_FLAG_PROTECT_FROM_CLOSE);
  SOCKET s = (SOCKET)h;
  if (closesocket(s) == 0)
    return 0;
  DWORD error = (DWORD)WSAGetLastError();
  if (error != WSAEWOULDBLOCK)
    return error;
  u_long blocking = 0;
  WSAEventSelect(s, NULL, 0);
  ioctlsocket(s, FIONBIO, &blocking);
  return closesocket(s) == 0 ? 0 : (DWORD)WSAGetLastError();
}

/* The name of a pipe handle (NtQueryObject's ObjectNameInformation, which
 * the object manager answers; asked only of handles opened for overlapped
 * I/O, which have no file-object lock to wait behind), copied into name
 * (room for cap characters, terminated): 1 if it answered. */
int anypoll__sys_object_name(HANDLE h, WCHAR *name, ULONG cap) {
  union {
    UNICODE_STRING s;
    char bytes[sizeof(UNICODE_STRING) + 256 * sizeof(WCHAR)];
  } info;
  ULONG got = 0;
  if (anypoll__nt.query_object == NULL ||
      anypoll__nt.query_object(h, 1 /* ObjectNameInformation */, &info,
                               sizeof info, &got) < 0 ||
      info.s.Buffer == NULL)
    return 0;
  ULONG n = info.s.Length / sizeof(WCHAR);
  if (n >= cap)
    n = cap - 1;
  for (ULONG i = 0; i < n; i++)
    name[i] = info.s.Buffer[i];
  name[n] = 0;
  return 1;
}

/* Associates a caller's handle with a port of ours (set_anypipe.c), or
 * undoes that (port NULL: FileReplaceCompletionInformation, Windows 8.1 and
 * later). */
BOOL anypoll__sys_associate(HANDLE h, HANDLE port, ULONG_PTR key) {
  return CreateIoCompletionPort(h, port, key, 0) != NULL;
}

/* A request on h that ends at once sends no packet to its port (a
 * socket the program associated with ours: set_anypipe.c). */
BOOL anypoll__sys_skip_port_on_success(HANDLE h) {
  return SetFileCompletionNotificationModes(
      h, FILE_SKIP_COMPLETION_PORT_ON_SUCCESS);
}

/* Ends h's association with its completion port; 1 if the system did. */
int anypoll__sys_dissociate(HANDLE h) {
  anypoll__file_completion_info info = { NULL, NULL };
  IO_STATUS_BLOCK iosb;
  return anypoll__nt.set_information_file != NULL &&
         anypoll__nt.set_information_file(
             h, &iosb, &info, sizeof info,
             ANYPOLL_FILE_REPLACE_COMPLETION_INFORMATION) >= 0;
}
