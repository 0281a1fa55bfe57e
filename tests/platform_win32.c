/* SPDX-License-Identifier: MIT */
/* Test helpers on Windows: C runtime descriptors over pipes and sockets, so
 * that the test cases read the same as on POSIX. */
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <fcntl.h>
#include <io.h>
#include <string.h>
#include <tlhelp32.h>

#include "test.h"
#include "win32/win.h"

#define CHECK(x) TP_CHECK(x)

static void wsa_start(void) {
  static int started;
  if (!started) {
    WSADATA d;
    CHECK(WSAStartup(MAKEWORD(2, 2), &d) == 0);
    started = 1;
  }
}

static SOCKET sock_of(int fd) {
  return (SOCKET)_get_osfhandle(fd);
}

static int is_socket(int fd) {
  int type, len = sizeof type;
  return getsockopt(sock_of(fd), SOL_SOCKET, SO_TYPE, (char *)&type, &len) == 0;
}

static int fd_of(SOCKET s) {
  int fd = _open_osfhandle((intptr_t)s, _O_BINARY);
  CHECK(fd >= 0);
  return fd;
}

void tp_pipe(int fds[2]) {
  /* 4096 bytes, as a Linux pipe holds at least that much. */
  CHECK(_pipe(fds, 4096, _O_BINARY) == 0);
}

int tp_tcp_listener(int *port) {
  return tp_tcp_listener_backlog(port, 16);
}

int tp_tcp_accept(int listener) {
  SOCKET s = accept(sock_of(listener), NULL, NULL);
  CHECK(s != INVALID_SOCKET);
  return fd_of(s);
}

void tp_tcp_pair(int fds[2]) {
  int port;
  int l = tp_tcp_listener(&port);
  SOCKET c = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(c != INVALID_SOCKET);
  struct sockaddr_in a;
  tp_loopback(&a, port);
  CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
  fds[0] = tp_tcp_accept(l);
  fds[1] = fd_of(c);
  tp_close(l);
}

int tp_tcp_connect_nb(int port) {
  wsa_start();
  SOCKET c = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(c != INVALID_SOCKET);
  u_long on = 1;
  CHECK(ioctlsocket(c, FIONBIO, &on) == 0);
  struct sockaddr_in a;
  tp_loopback(&a, port);
  int r = connect(c, (struct sockaddr *)&a, sizeof a);
  CHECK(r == 0 || WSAGetLastError() == WSAEWOULDBLOCK);
  return fd_of(c);
}

long tp_write(int fd, const void *buf, size_t len) {
  return _write(fd, buf, (unsigned)len);
}

long tp_read(int fd, void *buf, size_t len) {
  return _read(fd, buf, (unsigned)len);
}

long tp_send(int fd, const void *buf, size_t len) {
  return send(sock_of(fd), buf, (int)len, 0);
}

long tp_recv(int fd, void *buf, size_t len) {
  return recv(sock_of(fd), buf, (int)len, 0);
}

void tp_shutdown_wr(int fd) {
  CHECK(shutdown(sock_of(fd), SD_SEND) == 0);
}

void tp_close_reset(int fd) {
  struct linger lg = { 1, 0 };
  CHECK(setsockopt(sock_of(fd), SOL_SOCKET, SO_LINGER, (char *)&lg,
                   sizeof lg) == 0);
  tp_close(fd);
}

void tp_close(int fd) {
  /* anypoll_close: a socket must be closed by Winsock, once, and closing
   * it twice (closesocket, then _close's CloseHandle) hit handles of other
   * threads under Wine: a blocking recv failed, and a wait never ended
   * (docs/reliability.md). */
  if (is_socket(fd)) {
    CHECK(anypoll_close(fd) == 0);
    return;
  }
  _close(fd);
}

/* Descriptors whose socket tp_close_early closed; one at a time. */
static int early_fd = -1;

void tp_close_early(int fd) {
  if (is_socket(fd)) {
    closesocket(sock_of(fd));
    early_fd = fd;
  } else {
    _close(fd);
  }
}

void tp_close_early_done(int fd) {
  if (fd != early_fd)
    return;
  early_fd = -1;
  /* The descriptor's handle value was freed by closesocket: if it names a
   * handle again, that handle is someone else's and is kept from _close's
   * CloseHandle. (A handle made between the two calls is still closed:
   * the window is narrowed to them, not shut.) */
  HANDLE h = (HANDLE)_get_osfhandle(fd);
  int kept = SetHandleInformation(h, HANDLE_FLAG_PROTECT_FROM_CLOSE,
                                  HANDLE_FLAG_PROTECT_FROM_CLOSE) != 0;
  _close(fd);
  if (kept)
    SetHandleInformation(h, HANDLE_FLAG_PROTECT_FROM_CLOSE, 0);
}

int tp_socket_is_nonblocking(int fd) {
  /* Windows cannot report a socket's mode, so find it out: a recv on a
   * socket with nothing to read fails at once only in non-blocking mode.
   * The caller must guarantee nothing is readable. A blocking socket gets
   * a receive timeout first so that the probe cannot hang. */
  SOCKET s = sock_of(fd);
  DWORD old = 0, tmo = 200;
  int len = sizeof old;
  CHECK(getsockopt(s, SOL_SOCKET, SO_RCVTIMEO, (char *)&old, &len) == 0);
  CHECK(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, (char *)&tmo, sizeof tmo) == 0);
  char c;
  int r = recv(s, &c, 1, 0);
  int err = WSAGetLastError();
  CHECK(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, (char *)&old, sizeof old) == 0);
  CHECK(r < 0);
  return err == WSAEWOULDBLOCK;
}

void tp_socket_set_nonblocking(int fd, int on) {
  u_long v = (u_long)on;
  CHECK(ioctlsocket(sock_of(fd), FIONBIO, &v) == 0);
}

void tp_socket_linger(int fd, int seconds) {
  struct linger lg = { 1, (u_short)seconds };
  CHECK(setsockopt(sock_of(fd), SOL_SOCKET, SO_LINGER, (char *)&lg,
                   sizeof lg) == 0);
}

int tp_unused_fd(void) {
  int fd = _dup(2);
  if (fd < 0)
    return 1000;
  _close(fd);
  return fd;
}

void tp_raise_fd_limit(int n) {
  /* msvcrt's low-level descriptors are not limited below its fixed table
   * of 2048; asking for more cannot be granted. */
  CHECK(n <= 2048);
}

struct tp_child {
  HANDLE process;
};

/* This test program again, as "--child ARGS" (see tp_child_main). */
static tp_child *spawn_child(const char *args, BOOL inherit) {
  char exe[MAX_PATH];
  CHECK(GetModuleFileNameA(NULL, exe, sizeof exe) > 0);
  char cmd[MAX_PATH + 80];
  snprintf(cmd, sizeof cmd, "\"%s\" --child %s", exe, args);
  STARTUPINFOA si;
  ZeroMemory(&si, sizeof si);
  si.cb = sizeof si;
  PROCESS_INFORMATION pi;
  /* Wine 8 now and then cannot start a process ("failed to map the shared
   * user data", before the child runs any code; docs/reliability.md): the
   * child exits at once and CreateProcess fails with ERROR_INTERNAL_ERROR.
   * No code of anypoll takes part in starting a process, so that one
   * error is tried again, twice at most, and said. */
  BOOL ok;
  for (int attempt = 1;; attempt++) {
    ok = CreateProcessA(exe, cmd, NULL, NULL, inherit, 0, NULL, NULL, &si,
                        &pi);
    if (ok || GetLastError() != ERROR_INTERNAL_ERROR || attempt == 3)
      break;
    printf("spawn_child: CreateProcess failed with ERROR_INTERNAL_ERROR; "
           "starting the child again\n");
  }
  CHECK(ok);
  CloseHandle(pi.hThread);
  tp_child *c = malloc(sizeof *c);
  CHECK(c != NULL);
  c->process = pi.hProcess;
  return c;
}

tp_child *tp_child_writer(int write_fd, int delay_ms, int linger_ms) {
  HANDLE h = (HANDLE)_get_osfhandle(write_fd);
  HANDLE inheritable;
  CHECK(DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(),
                        &inheritable, 0, TRUE, DUPLICATE_SAME_ACCESS));
  char args[64];
  snprintf(args, sizeof args, "%llu %d %d",
           (unsigned long long)(UINT_PTR)inheritable, delay_ms, linger_ms);
  tp_child *c = spawn_child(args, TRUE);
  CloseHandle(inheritable);
  return c;
}

static unsigned long child_status(const char *args, BOOL inherit) {
  tp_child *c = spawn_child(args, inherit);
  CHECK(WaitForSingleObject(c->process, 20000) == WAIT_OBJECT_0);
  DWORD code = 0;
  CHECK(GetExitCodeProcess(c->process, &code));
  CloseHandle(c->process);
  free(c);
  return code;
}

int tp_overlapped_pipe(const char *tag, void **client) {
  char name[96];
  snprintf(name, sizeof name, "\\\\.\\pipe\\anypoll-%s-%lu", tag,
           GetCurrentProcessId());
  HANDLE srv =
      CreateNamedPipeA(name, PIPE_ACCESS_INBOUND | FILE_FLAG_OVERLAPPED,
                       PIPE_TYPE_BYTE | PIPE_WAIT, 1, 4096, 4096, 0, NULL);
  ASSERT(srv != INVALID_HANDLE_VALUE);
  HANDLE cli = CreateFileA(name, GENERIC_WRITE, 0, NULL, OPEN_EXISTING, 0,
                           NULL);
  ASSERT(cli != INVALID_HANDLE_VALUE);
  int fd = _open_osfhandle((intptr_t)srv, 0);
  ASSERT(fd >= 0);
  *client = cli;
  return fd;
}

void *tp_own_overlapped_read(int fd, OVERLAPPED *ov, char *buf) {
  HANDLE h = (HANDLE)_get_osfhandle(fd);
  HANDLE e = CreateEventW(NULL, TRUE, FALSE, NULL);
  ASSERT(e != NULL);
  memset(ov, 0, sizeof *ov);
  ov->hEvent = e;
  ASSERT(!ReadFile(h, buf, 1, NULL, ov) && GetLastError() == ERROR_IO_PENDING);
  return e;
}

unsigned long tp_child_status(const char *args) {
  return child_status(args, FALSE);
}

unsigned long tp_child_status_inheriting(const char *args) {
  return child_status(args, TRUE);
}

void tp_child_kill(tp_child *c) {
  CHECK(TerminateProcess(c->process, 9));
}

void tp_child_wait(tp_child *c) {
  CHECK(WaitForSingleObject(c->process, INFINITE) == WAIT_OBJECT_0);
  CloseHandle(c->process);
  free(c);
}

tp_child *tp_child_connector(int port, int linger_ms) {
  char args[64];
  snprintf(args, sizeof args, "connect %d %d", port, linger_ms);
  /* Nothing inherited: sockets are inheritable by default, and a copy of
   * ours in the child would outlive the end the test means to vanish. */
  return spawn_child(args, FALSE);
}

static int child_connect(int port, int linger_ms) {
  WSADATA d;
  if (WSAStartup(MAKEWORD(2, 2), &d) != 0)
    return 3;
  SOCKET s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  tp_loopback(&a, port);
  if (s == INVALID_SOCKET || connect(s, (struct sockaddr *)&a, sizeof a) != 0 ||
      send(s, "c", 1, 0) != 1)
    return 3;
  Sleep((DWORD)linger_ms);
  return 0;
}

long tp_descriptor_count(void) {
  DWORD n = 0;
  CHECK(GetProcessHandleCount(GetCurrentProcess(), &n));
  return (long)n;
}

/* A new handle takes the lowest free slot. */
long tp_handle_probe(void) {
  HANDLE e = CreateEventW(NULL, TRUE, FALSE, NULL);
  CHECK(e != NULL);
  CloseHandle(e);
  return (long)(UINT_PTR)e;
}

int tp_thread_count(void) {
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  CHECK(snap != INVALID_HANDLE_VALUE);
  THREADENTRY32 te;
  te.dwSize = sizeof te;
  int n = 0;
  DWORD self = GetCurrentProcessId();
  for (BOOL ok = Thread32First(snap, &te); ok; ok = Thread32Next(snap, &te))
    n += te.th32OwnerProcessID == self;
  CloseHandle(snap);
  return n;
}

void tp_set_pool_idle_ms(int ms) {
  anypoll__pool_idle_ms = ms;
}

/* The lock model's self-test (test_win_file_lock.c): the forbidden call, made
 * on purpose, in both orders; the model must end the process (status 86).
 * Returns 0 if it did not. */
static int lock_model_child(const char *order) {
  int p[2];
  tp_pipe(p);
  HANDLE h = (HANDLE)_get_osfhandle(p[0]);
  struct tp_forever f = { p[0], -2, 0 };
  if (strcmp(order, "call-after-read") == 0) {
    tp_thread_start(tp_poll_forever, &f);
    Sleep(300); /* the helper's read is pending by now */
    anypoll__model_call_begin(h, "a deliberate call");
    return 0; /* the model did not fire */
  }
  if (strcmp(order, "read-after-call") == 0) {
    HANDLE dup;
    if (!DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &dup, 0,
                         FALSE, DUPLICATE_SAME_ACCESS))
      return 2;
    /* A call in progress on a duplicate, unknown to the gate: the helper
     * starts its read, which the model must catch. */
    anypoll__model_call_begin(dup, "a deliberate call");
    tp_thread_start(tp_poll_forever, &f);
    Sleep(1000);
    return 0;
  }
  return 2;
}

/* A child that inherited a pipe's read end (test_win_set_inherit.c) makes
 * the calls a C runtime's start-up and a program's first look at its
 * standard input make, announced to the lock model as the library's own
 * are: GetFileType and PeekNamedPipe. The model ends it (status 86) when a
 * read of its parent's is pending on that pipe; otherwise 0 when both
 * answered as on an empty pipe, 3 when not. */
static int inherit_peek_child(const char *handle) {
  HANDLE h = (HANDLE)(UINT_PTR)strtoull(handle, NULL, 10);
  anypoll__model_call_begin(h, "GetFileType (a child's start-up)");
  DWORD type = GetFileType(h);
  anypoll__model_call_end(h);
  anypoll__model_call_begin(h, "PeekNamedPipe (a child)");
  DWORD avail = 1;
  BOOL ok = PeekNamedPipe(h, NULL, 0, NULL, &avail, NULL);
  anypoll__model_call_end(h);
  return type == FILE_TYPE_PIPE && ok && avail == 0 ? 0 : 3;
}

int tp_child_main(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[2], "lock-model") == 0)
    return lock_model_child(argv[3]);
  if (argc >= 4 && strcmp(argv[2], "inherit-peek") == 0)
    return inherit_peek_child(argv[3]);
  if (argc >= 5 && strcmp(argv[2], "connect") == 0)
    return child_connect(atoi(argv[3]), atoi(argv[4]));
  if (argc < 5)
    return 2;
  HANDLE h = (HANDLE)(UINT_PTR)strtoull(argv[2], NULL, 10);
  Sleep((DWORD)atoi(argv[3]));
  DWORD n = 0;
  if (!WriteFile(h, "c", 1, &n, NULL) || n != 1)
    return 3;
  Sleep((DWORD)atoi(argv[4]));
  return 0;
}
/* ---- Conformance matrix helpers ----------------------------------------- */
#include <afunix.h>

/* Windows has AF_UNIX stream sockets (since Windows 10 1803) but no
 * socketpair(): a pair is made by a listener on a temporary path. */
int tp_unix_pair(int fds[2]) {
  wsa_start();
  static LONG counter;
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  char dir[MAX_PATH];
  DWORD n = GetTempPathA(sizeof dir, dir);
  CHECK(n > 0 && n < sizeof dir);
  snprintf(a.sun_path, sizeof a.sun_path, "%sanypoll-%lu-%ld.sock", dir,
           GetCurrentProcessId(), InterlockedIncrement(&counter));
  DeleteFileA(a.sun_path);
  SOCKET l = socket(AF_UNIX, SOCK_STREAM, 0);
  if (l == INVALID_SOCKET) {
    static int told;
    if (!told++)
      fprintf(stderr, "tp_unix_pair: no AF_UNIX sockets (wsa %d)\n",
              WSAGetLastError());
    return -1;
  }
  SOCKET c = INVALID_SOCKET, s = INVALID_SOCKET;
  int ok = bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0;
  if (ok) {
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    ok = c != INVALID_SOCKET && connect(c, (struct sockaddr *)&a, sizeof a) == 0;
  }
  if (ok) {
    s = accept(l, NULL, NULL);
    ok = s != INVALID_SOCKET;
  }
  if (!ok)
    fprintf(stderr, "tp_unix_pair: AF_UNIX pair failed (wsa %d)\n",
            WSAGetLastError());
  closesocket(l);
  DeleteFileA(a.sun_path);
  if (!ok) {
    if (c != INVALID_SOCKET)
      closesocket(c);
    return -1;
  }
  fds[0] = fd_of(s);
  fds[1] = fd_of(c);
  return 0;
}

int tp_tcp_listener_backlog(int *port, int backlog) {
  wsa_start();
  SOCKET l = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(l != INVALID_SOCKET);
  struct sockaddr_in a;
  tp_loopback(&a, 0);
  CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(listen(l, backlog) == 0);
  int len = sizeof a;
  CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
  *port = ntohs(a.sin_port);
  return fd_of(l);
}

int tp_tcp_socket(void) {
  wsa_start();
  SOCKET s = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(s != INVALID_SOCKET);
  return fd_of(s);
}

int tp_udp_self(void) {
  wsa_start();
  SOCKET s = socket(AF_INET, SOCK_DGRAM, 0);
  CHECK(s != INVALID_SOCKET);
  struct sockaddr_in a;
  tp_loopback(&a, 0);
  int len = sizeof a;
  CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(getsockname(s, (struct sockaddr *)&a, &len) == 0);
  CHECK(connect(s, (struct sockaddr *)&a, sizeof a) == 0);
  return fd_of(s);
}

long tp_send_oob(int fd, const void *buf, size_t len) {
  return send(sock_of(fd), buf, (int)len, MSG_OOB);
}

long tp_fill_pipe(int wfd) {
  /* tp_pipe asks for a 4096-byte buffer; a write that fits completes at
   * once, and afterwards the pipe has no room. (Anonymous pipes cannot be
   * made non-blocking portably: PIPE_NOWAIT is for named pipes.) */
  static char chunk[4096];
  CHECK(_write(wfd, chunk, sizeof chunk) == (int)sizeof chunk);
  return (long)sizeof chunk;
}

long tp_fill_socket(int fd) {
  SOCKET s = sock_of(fd);
  u_long on = 1, off = 0;
  CHECK(ioctlsocket(s, FIONBIO, &on) == 0);
  static char chunk[65536];
  long total = 0;
  int n;
  while ((n = send(s, chunk, sizeof chunk, 0)) > 0)
    total += n;
  CHECK(WSAGetLastError() == WSAEWOULDBLOCK);
  CHECK(ioctlsocket(s, FIONBIO, &off) == 0);
  return total;
}

int tp_temp_file(int readonly) {
  char dir[MAX_PATH], path[MAX_PATH];
  DWORD n = GetTempPathA(sizeof dir, dir);
  CHECK(n > 0 && n < sizeof dir);
  CHECK(GetTempFileNameA(dir, "apt", 0, path) != 0);
  int fd = _open(path, _O_RDWR | _O_BINARY);
  CHECK(fd >= 0);
  CHECK(_write(fd, "abc", 3) == 3);
  _close(fd);
  fd = _open(path, (readonly ? _O_RDONLY : _O_RDWR) | _O_BINARY | _O_TEMPORARY);
  CHECK(fd >= 0);
  return fd;
}

int tp_null_device(void) {
  int fd = _open("NUL", _O_RDWR | _O_BINARY);
  CHECK(fd >= 0);
  return fd;
}

int tp_wait_socket(int fd, int ms) {
  SOCKET s = sock_of(fd);
  fd_set r, x;
  FD_ZERO(&r);
  FD_ZERO(&x);
  FD_SET(s, &r);
  FD_SET(s, &x);
  struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
  /* Winsock counts a socket once per set it is in. */
  return select(0, &r, NULL, &x, &tv) > 0;
}

unsigned long tp_nfds_limit(void) {
  return ANYPOLL_MAX_NFDS;
}

int tp_dup_to(int fd, int target) {
  return _dup2(fd, target) == 0 ? target : -1;
}

static HANDLE term_in = INVALID_HANDLE_VALUE;
static int term_in_fd = -1, term_out_fd = -1;

int tp_terminal_open(int *in_fd, int *out_fd) {
  term_in = CreateFileW(L"CONIN$", GENERIC_READ | GENERIC_WRITE,
                        FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                        OPEN_EXISTING, 0, NULL);
  if (term_in == INVALID_HANDLE_VALUE)
    return -1;
  HANDLE out = CreateFileW(L"CONOUT$", GENERIC_READ | GENERIC_WRITE,
                           FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                           OPEN_EXISTING, 0, NULL);
  if (out == INVALID_HANDLE_VALUE) {
    CloseHandle(term_in);
    term_in = INVALID_HANDLE_VALUE;
    return -1;
  }
  CHECK(FlushConsoleInputBuffer(term_in));
  term_in_fd = _open_osfhandle((intptr_t)term_in, _O_RDONLY | _O_BINARY);
  term_out_fd = _open_osfhandle((intptr_t)out, _O_WRONLY | _O_BINARY);
  CHECK(term_in_fd >= 0 && term_out_fd >= 0);
  *in_fd = term_in_fd;
  *out_fd = term_out_fd;
  return 0;
}

void tp_terminal_type(void) {
  /* The key 'x' pressed and released, then Enter: the console equivalent
   * of the line "x\n" typed on a terminal. */
  INPUT_RECORD rec[4];
  memset(rec, 0, sizeof rec);
  WCHAR chars[2] = { L'x', L'\r' };
  WORD keys[2] = { 'X', VK_RETURN };
  for (int i = 0; i < 4; i++) {
    rec[i].EventType = KEY_EVENT;
    rec[i].Event.KeyEvent.bKeyDown = (i % 2) == 0;
    rec[i].Event.KeyEvent.wRepeatCount = 1;
    rec[i].Event.KeyEvent.wVirtualKeyCode = keys[i / 2];
    rec[i].Event.KeyEvent.uChar.UnicodeChar = chars[i / 2];
  }
  DWORD written = 0;
  CHECK(WriteConsoleInputW(term_in, rec, 4, &written) && written == 4);
}

void tp_terminal_close(void) {
  _close(term_in_fd);
  _close(term_out_fd);
  term_in_fd = term_out_fd = -1;
  term_in = INVALID_HANDLE_VALUE;
}

static void CALLBACK apc_noop(ULONG_PTR arg) {
  (void)arg;
}

struct interrupt {
  HANDLE target;
  int ms;
};

static void interrupt_main(void *arg) {
  struct interrupt *in = arg;
  Sleep((DWORD)in->ms);
  CHECK(QueueUserAPC(apc_noop, in->target, 0) != 0);
  CloseHandle(in->target);
  free(in);
}

tp_thread *tp_interrupt_after(int ms) {
  struct interrupt *in = malloc(sizeof *in);
  CHECK(in != NULL);
  CHECK(DuplicateHandle(GetCurrentProcess(), GetCurrentThread(),
                        GetCurrentProcess(), &in->target, 0, FALSE,
                        DUPLICATE_SAME_ACCESS));
  in->ms = ms;
  return tp_thread_start(interrupt_main, in);
}

/* One APC is enough here: one queued before the thread is inside its
 * alertable wait stays queued and ends that wait as soon as it starts. */
void tp_interrupt_join(tp_thread *t) {
  tp_thread_join(t);
}
