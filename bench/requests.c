/* SPDX-License-Identifier: MIT */
/* The request counter's program (Windows only; bench/requests-count runs it
 * under Wine with the server's request trace on and does the counting).
 *
 *   requests [--k K] [--warmup W] [--settle-scale F] [SCENARIO...]
 *
 * Each scenario makes W waits to warm up (the pool's threads exist, the
 * sockets have their AFD state), then K measured waits between two marker
 * requests, then tears down. A marker is an OpenEventW on a name no object
 * has ("anypoll-requests:begin:SCENARIO:K:PID:CALLER:WRITER", and
 * ":end:SCENARIO"): a request the wineserver traces with its name in
 * clear, so the script can cut the trace at exactly those two points and
 * knows which thread ids are the caller (measured), the writer (excluded:
 * its requests are not the wait's cost) and the process (every other
 * thread of it is a helper).
 *
 * A woken wait is one anypoll_poll with an infinite timeout that the writer
 * ends by writing one byte, plus the caller's read of that byte, which is
 * what a program pays per wake-up. The writer writes only once the caller
 * has taken the previous byte and a few milliseconds have passed, so that
 * the caller is blocked in the wait when the byte arrives (the
 * hand-over is a shared counter, which makes no request). */
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

#define MAX_ENTRIES 1001
/* How long the writer lets the caller settle into its wait, per entry
 * polled (a check costs a few requests per entry, each a round trip to a
 * tracing wineserver), and at least. bench/requests-count verifies in the
 * trace that every write found the caller blocked, and says so when one
 * did not; --settle-scale stretches these on a loaded machine. */
#define SETTLE_MIN_MS 3
#define SETTLE_PER_ENTRY_MS 1.5
static double settle_scale = 1;

static void die(const char *what) {
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
    die("CreatePipe");
  int fd = _open_osfhandle((intptr_t)r, 0);
  if (fd < 0)
    die("_open_osfhandle");
  *writer = w;
  return fd;
}

/* A connected loopback TCP pair: the polled end as a descriptor, the
 * writing end as a raw socket. */
static int make_tcp(SOCKET *writer) {
  SOCKET l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  if (l == INVALID_SOCKET)
    die("socket");
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int len = sizeof a;
  if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr *)&a, &len) != 0)
    die("listen");
  SOCKET c = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  if (c == INVALID_SOCKET || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
    die("connect");
  SOCKET s = accept(l, NULL, NULL);
  if (s == INVALID_SOCKET)
    die("accept");
  closesocket(l);
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, (char *)&one, sizeof one);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, (char *)&one, sizeof one);
  int fd = _open_osfhandle((intptr_t)s, 0);
  if (fd < 0)
    die("_open_osfhandle");
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
        die("WriteFile");
    } else if (send(w->sock, &b, 1, 0) != 1) {
      die("send");
    }
  }
  return 0;
}

/* ---- Scenarios ------------------------------------------------------------- */

enum wait_kind {
  BLOCKING_READ, /* ReadFile on the pipe, no poll */
  BLOCKING_RECV, /* recv on the socket, no poll */
  POLL_WOKEN,    /* poll with timeout -1, woken by the writer; then read */
  POLL_NOW,      /* poll with timeout 0; nothing is read */
  SET_WOKEN,     /* a watch set of every entry, waited on with timeout -1,
                    woken by the writer; then read */
  SET_ANYPIPE,   /* the same with anypoll_pipe pipes (no helper thread),
                    the byte read with anypoll_read */
  SET_ANYBUF,    /* SET_ANYPIPE, the byte read into a 64-byte buffer, as a
                    program reads: the short read tells the set that the
                    pipe was left empty (anypoll__anypipe_drained) */
  SET_ANYMIX,    /* SET_ANYPIPE with only the woken pipe an anypoll_pipe
                    one, the idle ones _pipe() pipes (a read parked on
                    each): the anypoll_pipe end is checked and read without
                    comparing it with those reads */
  SET_TWO,       /* SET_WOKEN on pipes, the woken one also in a second set
                    that holds the idle ones (a read parked on each, owned
                    by that set): the first set's check of it must not
                    compare it with those reads */
  SET_AREAD,     /* SET_WOKEN on pipes, the byte read with anypoll_read:
                    its gate must not compare the pipe with every helper
                    read the set keeps parked on the idle ones */
  /* poll with a BACKOFF_WAIT_MS timeout that nothing ends, with a
   * listening named pipe (never armed: re-checked on the back-off) as the
   * first entry: about ten back-off rounds, whose cost must not grow with
   * the idle pipes beside it, which stay armed */
  POLL_BACKOFF
};
#define BACKOFF_WAIT_MS 100

struct scenario {
  const char *name;
  enum wait_kind kind;
  int pipes;       /* pipe entries (the first is the one woken) */
  int sockets;     /* socket entries */
  int wake_socket; /* the woken entry is the first socket */
  int ready;       /* POLL_NOW: the first pipe holds a byte */
  /* SET_WOKEN: every pipe inheritable (1: the set peeks at each on a
   * timer), and added with ANYPOLL_UNSHARED (2: a read parked on each);
   * 3: every socket added with ANYPOLL_ASSOCIATE (a zero-byte receive
   * each instead of an AFD poll). */
  int inherit;
};

static const struct scenario scenarios[] = {
  { "blocking-pipe", BLOCKING_READ, 1, 0, 0, 0, 0 },
  { "pipe-1", POLL_WOKEN, 1, 0, 0, 0, 0 },
  { "pipe-2-1idle", POLL_WOKEN, 2, 0, 0, 0, 0 },
  { "blocking-recv", BLOCKING_RECV, 0, 1, 1, 0, 0 },
  { "socket-1", POLL_WOKEN, 0, 1, 1, 0, 0 },
  { "mixed-64", POLL_WOKEN, 32, 32, 0, 0, 0 },
  { "now-ready-pipe", POLL_NOW, 1, 0, 0, 1, 0 },
  { "now-idle-64", POLL_NOW, 32, 32, 0, 0, 0 },
  /* N idle registrations plus the one woken: the count must not grow
   * with N. */
  { "set-pipe-1", SET_WOKEN, 2, 0, 0, 0, 0 },
  { "set-pipe-64", SET_WOKEN, 65, 0, 0, 0, 0 },
  { "set-pipe-1000", SET_WOKEN, 1001, 0, 0, 0, 0 },
  { "set-pipe-aread-1", SET_AREAD, 2, 0, 0, 0, 0 },
  { "set-pipe-aread-1000", SET_AREAD, 1001, 0, 0, 0, 0 },
  { "set-anypipe-1", SET_ANYPIPE, 2, 0, 0, 0, 0 },
  { "set-anypipe-64", SET_ANYPIPE, 65, 0, 0, 0, 0 },
  { "set-anypipe-1000", SET_ANYPIPE, 1001, 0, 0, 0, 0 },
  { "set-anybuf-1", SET_ANYBUF, 2, 0, 0, 0, 0 },
  { "set-anybuf-1000", SET_ANYBUF, 1001, 0, 0, 0, 0 },
  { "set-twosets-1", SET_TWO, 2, 0, 0, 0, 0 },
  { "set-twosets-1000", SET_TWO, 1001, 0, 0, 0, 0 },
  { "set-anymix-1", SET_ANYMIX, 2, 0, 0, 0, 0 },
  { "set-anymix-1000", SET_ANYMIX, 1001, 0, 0, 0, 0 },
  /* The rule for pipes another process may share, for its cost: each
   * wait that sleeps reads every idle one and cancels the reads before it
   * returns (set_shared.c), up to 64 of them; at 64 idle (65 pipes) one is
   * peeked on the timer, so that count depends on how many 16 ms peeks
   * fall in a wait: not in the ceilings. (At 1000, 936 on the timer, each
   * wait's 1.5 s settling time costs some 10^5 requests of peeks.) */
  { "set-pipe-shared-1", SET_WOKEN, 2, 0, 0, 0, 1 },
  { "set-pipe-shared-64", SET_WOKEN, 65, 0, 0, 0, 1 },
  { "set-pipe-unshared-1", SET_WOKEN, 2, 0, 0, 0, 2 },
  { "set-pipe-unshared-64", SET_WOKEN, 65, 0, 0, 0, 2 },
  { "set-socket-1", SET_WOKEN, 0, 2, 1, 0, 0 },
  { "set-socket-64", SET_WOKEN, 0, 65, 1, 0, 0 },
  { "set-socket-1000", SET_WOKEN, 0, 1001, 1, 0, 0 },
  { "set-socket-assoc-1", SET_WOKEN, 0, 2, 1, 0, 3 },
  { "set-socket-assoc-64", SET_WOKEN, 0, 65, 1, 0, 3 },
  { "set-socket-assoc-1000", SET_WOKEN, 0, 1001, 1, 0, 3 },
  { "backoff-1", POLL_BACKOFF, 1, 0, 0, 0, 0 },
  { "backoff-64", POLL_BACKOFF, 64, 0, 0, 0, 0 },
};
#define SCENARIO_COUNT (int)(sizeof scenarios / sizeof scenarios[0])

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
      die("set wait (anypipe)");
    if (anypoll_read((int)fds[0].fd, buf,
                     s->kind == SET_ANYBUF ? sizeof buf : 1) != 1)
      die("anypoll_read");
    break;
  }
  case SET_TWO:
  case SET_WOKEN: {
    struct anypoll_event ev[4];
    int r = anypoll__set_default_backend.wait(set_state, ev, 4, -1);
    if (r != 1 || ev[0].fd != (int)fds[s->wake_socket ? s->pipes : 0].fd ||
        ev[0].events != POLLIN)
      die("set wait (woken)");
    if (s->wake_socket) {
      if (recv(sock0, &b, 1, 0) != 1)
        die("recv");
    } else {
      DWORD got;
      if (!ReadFile(pipe0, &b, 1, &got, NULL) || got != 1)
        die("ReadFile");
    }
    break;
  }
  case BLOCKING_READ: {
    DWORD got;
    if (!ReadFile(pipe0, &b, 1, &got, NULL) || got != 1)
      die("ReadFile");
    break;
  }
  case BLOCKING_RECV:
    if (recv(sock0, &b, 1, 0) != 1)
      die("recv");
    break;
  case POLL_WOKEN: {
    int r = anypoll_poll(fds, (anypoll_nfds_t)n, -1);
    if (r != 1 || fds[s->wake_socket ? s->pipes : 0].revents != POLLIN)
      die("anypoll_poll (woken)");
    if (s->wake_socket) {
      if (recv(sock0, &b, 1, 0) != 1)
        die("recv");
    } else {
      DWORD got;
      if (!ReadFile(pipe0, &b, 1, &got, NULL) || got != 1)
        die("ReadFile");
    }
    break;
  }
  case POLL_NOW: {
    int r = anypoll_poll(fds, (anypoll_nfds_t)n, 0);
    if (r != s->ready)
      die("anypoll_poll (timeout 0)");
    break;
  }
  case POLL_BACKOFF:
    if (anypoll_poll(fds, (anypoll_nfds_t)n, BACKOFF_WAIT_MS) != 0)
      die("anypoll_poll (back-off)");
    break;
  }
}

static struct pollfd fds[MAX_ENTRIES];
static HANDLE pipe_w[MAX_ENTRIES];
static int anypipe_w[MAX_ENTRIES]; /* SET_ANYPIPE: the write ends */
static SOCKET sock_w[MAX_ENTRIES];

static void run(const struct scenario *s, int k, int warmup) {
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
      die("CreateNamedPipeW");
    listener = _open_osfhandle((intptr_t)server, 0);
    if (listener < 0)
      die("_open_osfhandle");
  }
  for (int i = 0; i < s->pipes; i++) {
    if (ANYPIPE_KIND(s->kind) || (s->kind == SET_ANYMIX && i == 0)) {
      int p[2];
      if (anypoll_pipe(p) != 0)
        die("anypoll_pipe");
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
        die("WriteFile");
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
    w.settle_ms = (DWORD)(settle * settle_scale + 0.5);
    thread = CreateThread(NULL, 0, writer_main, &w, 0, &w.tid);
    if (thread == NULL)
      die("CreateThread");
  }

  if (s->kind == SET_WOKEN || ANYPIPE_KIND(s->kind) || s->kind == SET_AREAD ||
      s->kind == SET_ANYMIX || s->kind == SET_TWO) {
    set_state = anypoll__set_default_backend.create();
    if (set_state == NULL)
      die("set create");
    if (s->kind == SET_TWO) {
      other_set = anypoll__set_default_backend.create();
      if (other_set == NULL)
        die("set create");
    }
    for (int i = 0; i < n; i++) {
      void *in = s->kind == SET_TWO && i > 0 ? other_set : set_state;
      unsigned ev = POLLIN | (s->inherit == 2   ? ANYPOLL_UNSHARED
                              : s->inherit == 3 ? ANYPOLL_ASSOCIATE
                                                : 0);
      if (anypoll__set_default_backend.ctl(in, ANYPOLL__SET_ADD,
                                           (int)fds[i].fd, ev, NULL) != 0)
        die("set add");
    }
    if (other_set != NULL) {
      /* Its reads parked (the wait arms them), the woken pipe in it too. */
      struct anypoll_event ev[4];
      if (anypoll__set_default_backend.ctl(other_set, ANYPOLL__SET_ADD,
                                           (int)fds[0].fd, POLLIN, NULL) != 0)
        die("set add");
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

int main(int argc, char **argv) {
  int k = 200, warmup = 20;
  int chosen[SCENARIO_COUNT] = { 0 };
  int any = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--k") == 0 && i + 1 < argc) {
      k = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
      warmup = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--settle-scale") == 0 && i + 1 < argc) {
      settle_scale = atof(argv[++i]);
    } else if (strcmp(argv[i], "--list") == 0) {
      for (int j = 0; j < SCENARIO_COUNT; j++)
        printf("%s\n", scenarios[j].name);
      return 0;
    } else {
      int j = 0;
      while (j < SCENARIO_COUNT && strcmp(argv[i], scenarios[j].name) != 0)
        j++;
      if (j == SCENARIO_COUNT) {
        fprintf(stderr,
                "usage: requests [--k K] [--warmup W] [--settle-scale F] [--list] "
                "[SCENARIO...]\n");
        return 2;
      }
      chosen[j] = any = 1;
    }
  }
  if (k < 1 || warmup < 1) {
    fprintf(stderr, "requests: K and W must be at least 1\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  WSADATA wsa;
  if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0)
    die("WSAStartup");
  for (int j = 0; j < SCENARIO_COUNT; j++)
    if (!any || chosen[j])
      run(&scenarios[j], k, warmup);
  return 0;
}
