/* SPDX-License-Identifier: MIT */
/* One scenario of the request counter (requests.c) on Windows objects:
 * the pipes and sockets polled, the markers, the writer thread, the wait
 * measured, and the set-up and teardown around them. */
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <winsock2.h>
#include <windows.h>

#include "anypoll.h"
/* The set scenarios call the Windows set backend through its table, as
 * anypoll_set_* do once the front end has checked the arguments (which
 * costs no request): the count is the backend's. */
#include "../src/set.h"
#include "requests.h"

#define MAX_ENTRIES 1001
/* How long the writer lets the caller settle into its wait, per entry
 * polled (a check costs a few requests per entry, each a round trip to a
 * tracing wineserver), and at least. bench/requests-count verifies in the
 * trace that every write found the caller blocked, and says so when one
 * did not; --settle-scale stretches these on a loaded machine. */
#define SETTLE_MIN_MS 3
#define SETTLE_PER_ENTRY_MS 1.5
double requests_settle_scale = 1;

void requests_die(const char *what) {
  fprintf(stderr, "requests: %s failed (error %lu, wsa %d)\n", what,
          (unsigned long)GetLastError(), WSAGetLastError());
  exit(2);
}

/* ---- Objects --------------------------------------------------------------- */

/* An anonymous pipe (synchronous, as _pipe and CreatePipe make them): the
 * read end as a descriptor, the write end as a raw handle. Inheritable
 * when asked (as _pipe makes them without _O_NOINHERIT): a set keeps no
 * read parked on such a read end unless it was added ANYPOLL_UNSHARED. */
static int make_pipe_inheritable(HANDLE *writer, int inherit) {
  HANDLE r, w;
  SECURITY_ATTRIBUTES sa = { sizeof sa, NULL, TRUE };
  if (!CreatePipe(&r, &w, inherit ? &sa : NULL, 4096))
    requests_die("CreatePipe");
  int fd = _open_osfhandle((intptr_t)r, 0);
  if (fd < 0)
    requests_die("_open_osfhandle");
  *writer = w;
  return fd;
}

/* A connected loopback TCP pair: the polled end as a descriptor, the
 * writing end as a raw socket. */
static int make_tcp(SOCKET *writer) {
  SOCKET l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  if (l == INVALID_SOCKET)
    requests_die("socket");
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int len = sizeof a;
  if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr *)&a, &len) != 0)
    requests_die("listen");
  SOCKET c = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  if (c == INVALID_SOCKET || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
    requests_die("connect");
  SOCKET s = accept(l, NULL, NULL);
  if (s == INVALID_SOCKET)
    requests_die("accept");
  closesocket(l);
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, (char *)&one, sizeof one);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, (char *)&one, sizeof one);
  int fd = _open_osfhandle((intptr_t)s, 0);
  if (fd < 0)
    requests_die("_open_osfhandle");
  *writer = c;
  return fd;
}

/* ---- Markers --------------------------------------------------------------- */

static void marker(const char *text) {
  WCHAR name[200];
  MultiByteToWideChar(CP_ACP, 0, text, -1, name, 200);
  HANDLE h = OpenEventW(SYNCHRONIZE, FALSE, name);
  if (h != NULL)
    CloseHandle(h);
}

/* ---- The writer ------------------------------------------------------------ */

struct writer {
  HANDLE pipe;       /* write to this pipe ... */
  SOCKET sock;       /* ... or send on this socket */
  int count;         /* bytes to write in all */
  DWORD settle_ms;
  volatile LONG taken; /* bytes the caller has read */
  DWORD tid;
};

static DWORD WINAPI writer_main(void *p) {
  struct writer *w = p;
  for (int i = 0; i < w->count; i++) {
    while (w->taken < i)
      Sleep(1);
    Sleep(w->settle_ms);
    char b = 'x';
    if (w->pipe != NULL) {
      DWORD done;
      if (!WriteFile(w->pipe, &b, 1, &done, NULL) || done != 1)
        requests_die("WriteFile");
    } else if (send(w->sock, &b, 1, 0) != 1) {
      requests_die("send");
    }
  }
  return 0;
}

/* Kinds whose pipes are anypoll_pipe pipes, read with anypoll_read. */
#define ANYPIPE_KIND(k) ((k) == SET_ANYPIPE || (k) == SET_ANYBUF)

static void *set_state;
static void *other_set; /* SET_TWO: the set of the idle pipes */

static void one_wait(const struct scenario *s, struct pollfd *fds, int n,
                     HANDLE pipe0, SOCKET sock0) {
  char b;
  switch (s->kind) {
  case SET_AREAD:
  case SET_ANYMIX:
  case SET_ANYBUF:
  case SET_ANYPIPE: {
    struct anypoll_event ev[4];
    char buf[64];
    int r = anypoll__set_default_backend.wait(set_state, ev, 4, -1);
    if (r != 1 || ev[0].fd != (int)fds[0].fd || ev[0].events != POLLIN)
      requests_die("set wait (anypipe)");
    if (anypoll_read((int)fds[0].fd, buf,
                     s->kind == SET_ANYBUF ? sizeof buf : 1) != 1)
      requests_die("anypoll_read");
    break;
  }
  case SET_TWO:
  case SET_WOKEN: {
    struct anypoll_event ev[4];
    int r = anypoll__set_default_backend.wait(set_state, ev, 4, -1);
    if (r != 1 || ev[0].fd != (int)fds[s->wake_socket ? s->pipes : 0].fd ||
        ev[0].events != POLLIN)
      requests_die("set wait (woken)");
    if (s->wake_socket) {
      if (recv(sock0, &b, 1, 0) != 1)
        requests_die("recv");
    } else {
      DWORD got;
      if (!ReadFile(pipe0, &b, 1, &got, NULL) || got != 1)
        requests_die("ReadFile");
    }
    break;
  }
  case BLOCKING_READ: {
    DWORD got;
    if (!ReadFile(pipe0, &b, 1, &got, NULL) || got != 1)
      requests_die("ReadFile");
    break;
  }
  case BLOCKING_RECV:
    if (recv(sock0, &b, 1, 0) != 1)
      requests_die("recv");
    break;
  case POLL_WOKEN: {
    int r = anypoll_poll(fds, (anypoll_nfds_t)n, -1);
    if (r != 1 || fds[s->wake_socket ? s->pipes : 0].revents != POLLIN)
      requests_die("anypoll_poll (woken)");
    if (s->wake_socket) {
      if (recv(sock0, &b, 1, 0) != 1)
        requests_die("recv");
    } else {
      DWORD got;
      if (!ReadFile(pipe0, &b, 1, &got, NULL) || got != 1)
        requests_die("ReadFile");
    }
    break;
  }
  case POLL_NOW: {
    int r = anypoll_poll(fds, (anypoll_nfds_t)n, 0);
    if (r != s->ready)
      requests_die("anypoll_poll (timeout 0)");
    break;
  }
  case POLL_BACKOFF:
    if (anypoll_poll(fds, (anypoll_nfds_t)n, BACKOFF_WAIT_MS) != 0)
      requests_die("anypoll_poll (back-off)");
    break;
  }
}

static struct pollfd fds[MAX_ENTRIES];
static HANDLE pipe_w[MAX_ENTRIES];
static int anypipe_w[MAX_ENTRIES]; /* SET_ANYPIPE: the write ends */
static SOCKET sock_w[MAX_ENTRIES];

void requests_run(const struct scenario *s, int k, int warmup) {
  int n = 0;
  int listener = -1;
  if (s->kind == POLL_BACKOFF) {
    /* A duplex server end with no client: a read of ours may not be armed
     * on it (it would hold the program's writes), so it is re-checked. */
    WCHAR name[80];
    wsprintfW(name, L"\\\\.\\pipe\\anypoll-requests-%lu",
              GetCurrentProcessId());
    HANDLE server = CreateNamedPipeW(
        name, PIPE_ACCESS_DUPLEX,
        PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT, 1, 4096, 4096, 0,
        NULL);
    if (server == INVALID_HANDLE_VALUE)
      requests_die("CreateNamedPipeW");
    listener = _open_osfhandle((intptr_t)server, 0);
    if (listener < 0)
      requests_die("_open_osfhandle");
  }
  for (int i = 0; i < s->pipes; i++) {
    if (ANYPIPE_KIND(s->kind) || (s->kind == SET_ANYMIX && i == 0)) {
      int p[2];
      if (anypoll_pipe(p) != 0)
        requests_die("anypoll_pipe");
      anypipe_w[i] = p[1];
      pipe_w[i] = (HANDLE)_get_osfhandle(p[1]);
      fds[n].fd = (SOCKET)p[0];
    } else {
      fds[n].fd = make_pipe_inheritable(&pipe_w[i], s->inherit != 0);
    }
    fds[n].events = POLLIN;
    fds[n].revents = 0;
    n++;
  }
  for (int i = 0; i < s->sockets; i++) {
    fds[n].fd = make_tcp(&sock_w[i]);
    fds[n].events = POLLIN;
    fds[n].revents = 0;
    n++;
  }
  if (listener >= 0) {
    fds[n].fd = (SOCKET)listener;
    fds[n].events = POLLIN;
    fds[n].revents = 0;
    n++;
  }
  /* The polled ends as the caller reads them. */
  HANDLE pipe0 = s->pipes ? (HANDLE)_get_osfhandle((int)fds[0].fd) : NULL;
  SOCKET sock0 =
      s->sockets ? (SOCKET)_get_osfhandle((int)fds[s->pipes].fd) : INVALID_SOCKET;

  struct writer w;
  memset(&w, 0, sizeof w);
  HANDLE thread = NULL;
  if (s->kind == POLL_NOW || s->kind == POLL_BACKOFF) {
    if (s->ready) {
      DWORD done;
      if (!WriteFile(pipe_w[0], "x", 1, &done, NULL))
        requests_die("WriteFile");
    }
  } else {
    if (s->wake_socket)
      w.sock = sock_w[0];
    else
      w.pipe = pipe_w[0];
    w.count = warmup + k;
    /* A set's wait looks at the woken entry only. */
    double settle = s->kind == SET_WOKEN || ANYPIPE_KIND(s->kind) ||
                            s->kind == SET_AREAD || s->kind == SET_ANYMIX ||
                            s->kind == SET_TWO
                        ? 0
                        : SETTLE_PER_ENTRY_MS * n;
    if (settle < SETTLE_MIN_MS)
      settle = SETTLE_MIN_MS;
    w.settle_ms = (DWORD)(settle * requests_settle_scale + 0.5);
    thread = CreateThread(NULL, 0, writer_main, &w, 0, &w.tid);
    if (thread == NULL)
      requests_die("CreateThread");
  }

  if (s->kind == SET_WOKEN || ANYPIPE_KIND(s->kind) || s->kind == SET_AREAD ||
      s->kind == SET_ANYMIX || s->kind == SET_TWO) {
    set_state = anypoll__set_default_backend.create();
    if (set_state == NULL)
      requests_die("set create");
    if (s->kind == SET_TWO) {
      other_set = anypoll__set_default_backend.create();
      if (other_set == NULL)
        requests_die("set create");
    }
    for (int i = 0; i < n; i++) {
      void *in = s->kind == SET_TWO && i > 0 ? other_set : set_state;
      unsigned ev = POLLIN | (s->inherit == 2   ? ANYPOLL_UNSHARED
                              : s->inherit == 3 ? ANYPOLL_ASSOCIATE
                                                : 0);
      if (anypoll__set_default_backend.ctl(in, ANYPOLL__SET_ADD,
                                           (int)fds[i].fd, ev, NULL) != 0)
        requests_die("set add");
    }
    if (other_set != NULL) {
      /* Its reads parked (the wait arms them), the woken pipe in it too. */
      struct anypoll_event ev[4];
      if (anypoll__set_default_backend.ctl(other_set, ANYPOLL__SET_ADD,
                                           (int)fds[0].fd, POLLIN, NULL) != 0)
        requests_die("set add");
      anypoll__set_default_backend.wait(other_set, ev, 4, 0);
    }
  }

  char text[160];
  for (int i = 0; i < warmup; i++) {
    one_wait(s, fds, n, pipe0, sock0);
    InterlockedIncrement(&w.taken);
  }
  snprintf(text, sizeof text, "anypoll-requests:begin:%s:%d:%lx:%lx:%lx",
           s->name, k, (unsigned long)GetCurrentProcessId(),
           (unsigned long)GetCurrentThreadId(), (unsigned long)w.tid);
  marker(text);
  for (int i = 0; i < k; i++) {
    one_wait(s, fds, n, pipe0, sock0);
    InterlockedIncrement(&w.taken);
  }
  snprintf(text, sizeof text, "anypoll-requests:end:%s", s->name);
  marker(text);

  if (thread != NULL) {
    WaitForSingleObject(thread, INFINITE);
    CloseHandle(thread);
  }
  if (set_state != NULL) {
    anypoll__set_default_backend.destroy(set_state);
    set_state = NULL;
  }
  if (other_set != NULL) {
    anypoll__set_default_backend.destroy(other_set);
    other_set = NULL;
  }
  for (int i = 0; i < s->pipes; i++) {
    _close((int)fds[i].fd);
    if (ANYPIPE_KIND(s->kind) || (s->kind == SET_ANYMIX && i == 0))
      _close(anypipe_w[i]);
    else
      CloseHandle(pipe_w[i]);
  }
  if (listener >= 0)
    _close(listener);
  for (int i = 0; i < s->sockets; i++) {
    /* _close on a socket's descriptor closes the handle; closesocket
     * would leave the descriptor dangling. */
    _close((int)fds[s->pipes + i].fd);
    closesocket(sock_w[i]);
  }
  printf("%s: %d waits measured\n", s->name, k);
}

