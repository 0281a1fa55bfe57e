/* SPDX-License-Identifier: MIT */
/* The consumer's descriptors, made with the platform's own calls and no
 * poll header: on Windows, C runtime descriptors (_pipe, and sockets
 * wrapped with _open_osfhandle, as git's mingw_socket does). */
#include <stdio.h>
#include <stdlib.h>

#include "consumer.h"

#define CHECK(x)                                                             \
  do {                                                                       \
    if (!(x)) {                                                              \
      fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x);        \
      exit(2);                                                               \
    }                                                                        \
  } while (0)

#ifdef _WIN32
#  include <winsock2.h>
#  include <windows.h>
#  include <fcntl.h>
#  include <io.h>

static void make_pipe(int p[2]) {
  CHECK(_pipe(p, 4096, _O_BINARY) == 0);
}

static void put(int fd, const char *s, unsigned n) {
  CHECK(_write(fd, s, n) == (int)n);
}

static void drop(int fd) {
  CHECK(_close(fd) == 0);
}

static int wrap(SOCKET s) {
  int fd = _open_osfhandle((intptr_t)s, _O_RDWR | _O_BINARY);
  CHECK(fd >= 0);
  return fd;
}

static void tcp_pair(int fds[2]) {
  WSADATA wsa;
  CHECK(WSAStartup(MAKEWORD(2, 2), &wsa) == 0);
  SOCKET l = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(l != INVALID_SOCKET);
  struct sockaddr_in a = { 0 };
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
  int len = sizeof a;
  CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
  CHECK(listen(l, 1) == 0);
  SOCKET c = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(c != INVALID_SOCKET);
  CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
  SOCKET s = accept(l, NULL, NULL);
  CHECK(s != INVALID_SOCKET);
  closesocket(l);
  CHECK(send(c, "s", 1, 0) == 1);
  /* Until the byte has arrived, so that one poll sees it. */
  fd_set r;
  FD_ZERO(&r);
  FD_SET(s, &r);
  struct timeval tv = { 5, 0 };
  CHECK(select(0, &r, NULL, NULL, &tv) == 1);
  fds[0] = wrap(s);
  fds[1] = wrap(c);
}

#else
#  include <arpa/inet.h>
#  include <netinet/in.h>
#  include <sys/select.h>
#  include <sys/socket.h>
#  include <unistd.h>

static void make_pipe(int p[2]) {
  CHECK(pipe(p) == 0);
}

static void put(int fd, const char *s, unsigned n) {
  CHECK(write(fd, s, n) == (ssize_t)n);
}

static void drop(int fd) {
  CHECK(close(fd) == 0);
}

static void tcp_pair(int fds[2]) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(l >= 0);
  struct sockaddr_in a = { 0 };
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
  socklen_t len = sizeof a;
  CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
  CHECK(listen(l, 1) == 0);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(c >= 0);
  CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
  int s = accept(l, NULL, NULL);
  CHECK(s >= 0);
  close(l);
  CHECK(send(c, "s", 1, 0) == 1);
  fd_set r;
  FD_ZERO(&r);
  FD_SET(s, &r);
  struct timeval tv = { 5, 0 };
  CHECK(select(s + 1, &r, NULL, NULL, &tv) == 1);
  fds[0] = s;
  fds[1] = c;
}
#endif

void cc_make_fds(struct cc_fds *f) {
  int p[2];
  make_pipe(p);
  put(p[1], "abc", 3);
  f->pipe_r = p[0], f->pipe_w = p[1];
  make_pipe(p);
  f->empty_r = p[0], f->empty_w = p[1];
  make_pipe(p);
  drop(p[1]);
  f->hup_r = p[0];
  int s[2];
  tcp_pair(s);
  f->sock_a = s[0], f->sock_b = s[1];
}
