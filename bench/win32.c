/* SPDX-License-Identifier: MIT */
/* The benchmarks' portable layer on Windows (common.h; posix.c is Linux's):
 * C runtime descriptors over pipes, Winsock sockets and console handles,
 * and children started from this same executable. */
#include "common.h"
#include "portable.h" /* tests/portable.h: tp_loopback */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include <fcntl.h>
#include <io.h>

/* This executable, for bench_spawn (set by bench_init). */
static char self_path[1024];

void bench_init(int argc, char **argv) {
  (void)argc, (void)argv;
  GetModuleFileNameA(NULL, self_path, sizeof self_path);
  WSADATA d;
  if (WSAStartup(MAKEWORD(2, 2), &d) != 0)
    bench_die("WSAStartup");
  _setmode(1, _O_BINARY);
}

void bench_pipe(int fds[2], unsigned size) {
  if (_pipe(fds, size, _O_BINARY | _O_NOINHERIT) != 0)
    bench_die("_pipe");
}

int bench_pipe_reader(long long *writer) {
  HANDLE r, w;
  if (!CreatePipe(&r, &w, NULL, 4096)) {
    errno = EMFILE;
    return -1;
  }
  int fd = _open_osfhandle((intptr_t)r, _O_BINARY);
  if (fd < 0) {
    CloseHandle(r);
    CloseHandle(w);
    return -1;
  }
  *writer = (long long)(uintptr_t)w;
  return fd;
}

long bench_writer_write(long long writer, const void *buf, size_t len) {
  DWORD done;
  if (!WriteFile((HANDLE)(uintptr_t)writer, buf, (DWORD)len, &done, NULL))
    return -1;
  return (long)done;
}

void bench_writer_close(long long writer) {
  CloseHandle((HANDLE)(uintptr_t)writer);
}

long bench_read(int fd, void *buf, size_t len) {
  return _read(fd, buf, (unsigned)len);
}

long bench_write(int fd, const void *buf, size_t len) {
  return _write(fd, buf, (unsigned)len);
}

void bench_close(int fd) {
  _close(fd);
}

int bench_devnull(void) {
  int fd = _open("NUL", _O_WRONLY | _O_BINARY);
  if (fd < 0)
    bench_die("open NUL");
  return fd;
}

int bench_console(void) {
  HANDLE h = CreateFileW(L"CONIN$", GENERIC_READ | GENERIC_WRITE,
                         FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                         OPEN_EXISTING, 0, NULL);
  DWORD mode;
  if (h == INVALID_HANDLE_VALUE)
    return -1;
  if (!GetConsoleMode(h, &mode)) {
    CloseHandle(h);
    return -1;
  }
  FlushConsoleInputBuffer(h);
  int fd = _open_osfhandle((intptr_t)h, _O_RDONLY | _O_BINARY);
  if (fd < 0)
    CloseHandle(h);
  return fd;
}

static SOCKET sock_of(int fd) {
  return (SOCKET)_get_osfhandle(fd);
}

static int fd_of_socket(SOCKET s) {
  /* Sockets are inheritable by default; a child holding a copy would keep
   * the connection open behind the benchmark's back. */
  SetHandleInformation((HANDLE)s, HANDLE_FLAG_INHERIT, 0);
  BOOL on = TRUE;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, (char *)&on, sizeof on);
  int fd = _open_osfhandle((intptr_t)s, _O_BINARY);
  if (fd < 0)
    bench_die("_open_osfhandle(socket)");
  return fd;
}

int bench_tcp_listen(int *port) {
  SOCKET l = socket(AF_INET, SOCK_STREAM, 0);
  if (l == INVALID_SOCKET)
    bench_die("socket");
  struct sockaddr_in a;
  tp_loopback(&a, 0);
  if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 64) != 0)
    bench_die("bind/listen");
  int len = sizeof a;
  if (getsockname(l, (struct sockaddr *)&a, &len) != 0)
    bench_die("getsockname");
  *port = ntohs(a.sin_port);
  return fd_of_socket(l);
}

int bench_tcp_accept(int listener) {
  SOCKET s = accept(sock_of(listener), NULL, NULL);
  if (s == INVALID_SOCKET)
    bench_die("accept");
  return fd_of_socket(s);
}

int bench_tcp_connect(int port) {
  SOCKET c = socket(AF_INET, SOCK_STREAM, 0);
  if (c == INVALID_SOCKET)
    bench_die("socket");
  struct sockaddr_in a;
  tp_loopback(&a, port);
  if (connect(c, (struct sockaddr *)&a, sizeof a) != 0)
    bench_die("connect");
  return fd_of_socket(c);
}

long bench_send(int fd, const void *buf, size_t len) {
  return send(sock_of(fd), buf, (int)len, 0);
}

long bench_recv(int fd, void *buf, size_t len) {
  return recv(sock_of(fd), buf, (int)len, 0);
}

void bench_sock_close(int fd) { anypoll_close(fd); }

struct bench_child {
  HANDLE process;
};

struct bench_child *bench_spawn(const char *name, const int *pass, int npass,
                                int nargs, const char *const *args) {
  char cmd[4096];
  int len = snprintf(cmd, sizeof cmd, "\"%s\" --child %s", self_path, name);
  HANDLE handles[16];
  if (npass > 16)
    bench_die("bench_spawn: too many descriptors");
  for (int i = 0; i < npass; i++) {
    handles[i] = (HANDLE)_get_osfhandle(pass[i]);
    len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %llu",
                    (unsigned long long)(uintptr_t)handles[i]);
  }
  for (int i = 0; i < nargs; i++)
    len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %s", args[i]);
  /* Only the passed handles become inheritable, and only for the moment of
   * the CreateProcess (the programs spawn from one thread). */
  for (int i = 0; i < npass; i++)
    SetHandleInformation(handles[i], HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
  STARTUPINFOA si;
  PROCESS_INFORMATION pi;
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  BOOL ok = CreateProcessA(self_path, cmd, NULL, NULL, TRUE, 0, NULL, NULL,
                           &si, &pi);
  for (int i = 0; i < npass; i++)
    SetHandleInformation(handles[i], HANDLE_FLAG_INHERIT, 0);
  if (!ok)
    bench_die("CreateProcess");
  CloseHandle(pi.hThread);
  struct bench_child *c = malloc(sizeof *c);
  if (c == NULL)
    bench_die("malloc");
  c->process = pi.hProcess;
  return c;
}

int bench_child_wait(struct bench_child *c) {
  WaitForSingleObject(c->process, INFINITE);
  DWORD code = 1;
  GetExitCodeProcess(c->process, &code);
  CloseHandle(c->process);
  free(c);
  return (int)code;
}

int bench_fd_from_token(const char *token) {
  HANDLE h = (HANDLE)(uintptr_t)strtoull(token, NULL, 10);
  int fd = _open_osfhandle((intptr_t)h, _O_BINARY);
  if (fd < 0)
    bench_die("_open_osfhandle(inherited)");
  return fd;
}

long bench_raise_nofile(long n) {
  (void)n;
  return -1;
}
