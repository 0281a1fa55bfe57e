/* SPDX-License-Identifier: MIT */
/* The portable layer and helpers shared by the benchmark programs. */
#ifndef _WIN32
#  define _GNU_SOURCE /* pipe2, F_SETPIPE_SZ */
#endif
#include "common.h"
#include "portable.h" /* tests/portable.h: threads, sleep, clocks */

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#  include <winsock2.h>
#  include <ws2tcpip.h>
#  include <windows.h>
#  include <fcntl.h>
#  include <io.h>
#else
#  include <dirent.h>
#  include <fcntl.h>
#  include <netinet/in.h>
#  include <netinet/tcp.h>
#  include <sys/resource.h>
#  include <sys/socket.h>
#  include <sys/wait.h>
#  include <time.h>
#  include <unistd.h>
#endif

void bench_die(const char *what) {
#ifdef _WIN32
  fprintf(stderr, "bench: %s failed: errno %d, error %lu, wsa %d\n", what,
          errno, GetLastError(), WSAGetLastError());
#else
  fprintf(stderr, "bench: %s failed: %s\n", what, strerror(errno));
#endif
  exit(2);
}

/* ---- Strategies ----------------------------------------------------------- */

static char skipped[128];

const char *bench_skipped(void) {
  return skipped;
}

static int strategy_of(const char *name, struct bench_strategy *s) {
  s->name = name;
  if (strcmp(name, "blocking") == 0) {
    s->backend = BENCH_BLOCKING;
    return 1;
  }
  if (strcmp(name, "set") == 0) {
    s->backend = BENCH_SET;
    return 1;
  }
  if (strcmp(name, "aset") == 0) {
    s->backend = BENCH_ASET;
    return 1;
  }
  if (strcmp(name, "spawn") == 0) {
    s->backend = BENCH_SPAWN;
    return 1;
  }
  if (strcmp(name, "event") == 0) {
    /* What a program gets from anypoll_poll: the point of the library. */
    s->backend = ANYPOLL_BACKEND_DEFAULT;
    return 1;
  }
  /* "native" is the kernel's poll(); the others go by the library's own
   * names, so a backend missing from this build is reported missing. */
  const char *lib = strcmp(name, "native") == 0 ? "poll" : name;
  int b = anypoll_backend_from_name(lib);
  if (b < 0)
    return 0;
  s->backend = b;
  return 1;
}

int bench_strategies(const char *list, struct bench_strategy *out) {
  static const char all[] = BENCH_ALL;
  static char buf[256];
  snprintf(buf, sizeof buf, "%s", strcmp(list, "all") == 0 ? all : list);
  int n = 0;
  skipped[0] = 0;
  for (char *tok = strtok(buf, ","); tok != NULL && n < BENCH_MAX_STRATEGIES;
       tok = strtok(NULL, ",")) {
    if (strategy_of(tok, &out[n])) {
      n++;
    } else {
      fprintf(stderr, "bench: strategy '%s' is not available in this build: "
                      "skipped\n", tok);
      size_t len = strlen(skipped);
      snprintf(skipped + len, sizeof skipped - len, "%s%s", len ? " " : "",
               tok);
    }
  }
  return n;
}

int bench_wait(const struct bench_strategy *s, struct pollfd *fds, int n) {
  if (s->backend == BENCH_BLOCKING)
    return 1;
  if (s->backend == BENCH_SET || s->backend == BENCH_ASET) {
    fprintf(stderr, "bench: the set strategy needs bench_set_open\n");
    exit(2);
  }
  int r = anypoll_poll_with(s->backend, fds, (anypoll_nfds_t)n, -1);
  if (r < 0)
    bench_die("anypoll_poll_with");
  return r;
}

/* The same on every platform: anypoll_read is the portable call. */
long bench_anypoll_read(int fd, void *buf, size_t len) {
  return anypoll_read(fd, buf, (unsigned)len);
}

anypoll_set *bench_set_open(struct pollfd *fds, int n) {
  anypoll_set *set = anypoll_set_new();
  if (set == NULL)
    bench_die("anypoll_set_new");
  for (int i = 0; i < n; i++)
    if ((int)fds[i].fd >= 0 &&
        anypoll_set_add(set, (int)fds[i].fd, (unsigned)fds[i].events, &fds[i]) != 0)
      bench_die("anypoll_set_add");
  return set;
}

int bench_set_wait(anypoll_set *set, struct pollfd *fds, int n) {
  struct anypoll_event ev[16];
  for (int i = 0; i < n; i++)
    fds[i].revents = 0;
  int r = anypoll_set_wait(set, ev, 16, -1);
  if (r < 0)
    bench_die("anypoll_set_wait");
  for (int i = 0; i < r; i++)
    ((struct pollfd *)ev[i].data)->revents = (short)ev[i].events;
  return r;
}

void bench_set_close(anypoll_set *set, struct pollfd *fds, int n) {
  for (int i = 0; i < n; i++)
    if ((int)fds[i].fd >= 0 && anypoll_set_del(set, (int)fds[i].fd) != 0)
      bench_die("anypoll_set_del");
  if (anypoll_set_free(set) != 0)
    bench_die("anypoll_set_free");
}

/* ---- Statistics ------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_percentile(double *v, int n, double p) {
  if (n <= 0)
    return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  /* Nearest rank: an observed value, never an interpolation between two. */
  int k = (int)ceil(p * n) - 1;
  if (k < 0)
    k = 0;
  if (k >= n)
    k = n - 1;
  return v[k];
}

double bench_median(double *v, int n) {
  if (n <= 0)
    return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- CSV ---------------------------------------------------------------------- */

static FILE *csv;

void bench_csv_open(const char *path) {
  if (path == NULL)
    return;
  csv = fopen(path, "a");
  if (csv == NULL)
    bench_die("fopen csv");
}

void bench_csv_row(const char *scenario, const char *strategy, long param,
                   const char *metric, double value, double ratio, int reps) {
  if (csv == NULL)
    return;
  fprintf(csv, "%s,%s,%s,%ld,%s,", BENCH_PLATFORM, scenario, strategy, param,
          metric);
  if (isnan(value))
    fprintf(csv, ",");
  else
    fprintf(csv, "%.6g,", value);
  if (isnan(ratio))
    fprintf(csv, ",");
  else
    fprintf(csv, "%.4f,", ratio);
  fprintf(csv, "%d\n", reps);
  fflush(csv);
}

void bench_csv_close(void) {
  if (csv != NULL)
    fclose(csv);
  csv = NULL;
}

const char *bench_arg(int argc, char **argv, const char *name,
                      const char *fallback) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0)
      return argv[i + 1];
  return fallback;
}

double bench_arg_num(int argc, char **argv, const char *name,
                     double fallback) {
  const char *v = bench_arg(argc, argv, name, NULL);
  return v == NULL ? fallback : atof(v);
}

static char self_path[1024];

/* The sums over every live thread of a Linux process of the three fields
 * of /proc/ID/task/TID/schedstat: nanoseconds run, nanoseconds waited on a
 * run queue (runnable, no CPU free: what a loaded machine adds), and times
 * put on a CPU (each wake-up of a blocked thread is one, so in a
 * ping-pong it counts the hand-offs). The run time is far finer than the
 * 10 ms ticks of /proc/ID/stat, which is what Wine's GetProcessTimes rests
 * on. Threads that have exited are not counted. Under Wine the Unix path
 * resolves through the Z: drive. Returns 0, or -1 when /proc cannot be
 * read. */
static int schedstat_sums(const char *id, double sums[3]) {
  char path[400];
  unsigned long long total[3] = { 0, 0, 0 };
  int found = 0;
#ifdef _WIN32
  WIN32_FIND_DATAA d;
  snprintf(path, sizeof path, "/proc/%s/task/*", id);
  HANDLE h = FindFirstFileA(path, &d);
  if (h == INVALID_HANDLE_VALUE)
    return -1;
  do {
    const char *tid = d.cFileName;
#else
  snprintf(path, sizeof path, "/proc/%s/task", id);
  DIR *dir = opendir(path);
  if (dir == NULL)
    return -1;
  for (struct dirent *e; (e = readdir(dir)) != NULL;) {
    const char *tid = e->d_name;
#endif
    if (tid[0] < '0' || tid[0] > '9')
      continue;
    snprintf(path, sizeof path, "/proc/%s/task/%s/schedstat", id, tid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
      continue; /* the thread has just exited */
    unsigned long long v[3] = { 0, 0, 0 };
    if (fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]) == 3) {
      for (int i = 0; i < 3; i++)
        total[i] += v[i];
      found = 1;
    }
    fclose(f);
#ifdef _WIN32
  } while (FindNextFileA(h, &d));
  FindClose(h);
#else
  }
  closedir(dir);
#endif
  if (!found)
    return -1;
  sums[0] = (double)total[0] / 1e9;
  sums[1] = (double)total[1] / 1e9;
  sums[2] = (double)total[2];
  return 0;
}

static double schedstat_cpu(const char *id) {
  double v[3];
  return schedstat_sums(id, v) == 0 ? v[0] : -1;
}

int bench_sched(double *queued, double *slices) {
  double v[3], total[2] = { 0, 0 };
#ifdef _WIN32
  const char *self = getenv("BENCH_SELF_PID");
#else
  const char *self = "self";
#endif
  if (self == NULL || *self == 0 || schedstat_sums(self, v) != 0)
    return -1;
  total[0] = v[1];
  total[1] = v[2];
  const char *server = getenv("BENCH_SERVER_PID");
  if (server != NULL && *server && schedstat_sums(server, v) == 0) {
    total[0] += v[1];
    total[1] += v[2];
  }
  *queued = total[0];
  *slices = total[1];
  return 0;
}

double bench_server_cpu(void) {
  const char *pid = getenv("BENCH_SERVER_PID");
  if (pid == NULL || *pid == 0)
    return -1;
  return schedstat_cpu(pid);
}

double bench_cpu_fine(void) {
#ifdef _WIN32
  /* Wine opens files in the wineserver, so /proc/self there is the server,
   * and Windows has no way to learn the process's Linux pid: bench/run
   * passes it (a shell's $$ just before it execs wine keeps its pid). */
  const char *pid = getenv("BENCH_SELF_PID");
  double v = pid != NULL && *pid ? schedstat_cpu(pid) : -1;
  return v >= 0 ? v : bench_cpu();
#else
  return bench_cpu(); /* the process CPU clock: exited threads too */
#endif
}

/* ---- Threads and clocks: tests/portable.c's ------------------------------ */

double bench_now(void) {
  return tp_now_ms() / 1e3;
}

double bench_cpu(void) {
  return tp_cpu_ms() / 1e3;
}

void bench_sleep_ms(int ms) {
  tp_sleep_ms(ms);
}

/* A struct bench_thread is never defined: the pointer is the tp_thread's,
 * converted back before use. */
struct bench_thread *bench_thread_start(void (*fn)(void *), void *arg) {
  return (struct bench_thread *)tp_thread_start(fn, arg);
}

void bench_thread_join(struct bench_thread *t) {
  tp_thread_join((tp_thread *)t);
}

#ifdef _WIN32
/* ======================================================================== */
/* Windows                                                                  */
/* ======================================================================== */

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

#else
/* ======================================================================== */
/* Linux                                                                    */
/* ======================================================================== */

void bench_init(int argc, char **argv) {
  (void)argc, (void)argv;
  /* exec through /proc/self/exe: the child is exactly this binary. */
  snprintf(self_path, sizeof self_path, "/proc/self/exe");
}

void bench_pipe(int fds[2], unsigned size) {
  if (pipe2(fds, O_CLOEXEC) != 0)
    bench_die("pipe2");
  /* The same buffer as the Windows pipe, so neither side of the comparison
   * gets a bigger cushion. Linux rounds up to a page. */
  fcntl(fds[1], F_SETPIPE_SZ, (int)size);
}

int bench_pipe_reader(long long *writer) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0)
    return -1;
  *writer = p[1];
  return p[0];
}

long bench_writer_write(long long writer, const void *buf, size_t len) {
  return (long)write((int)writer, buf, len);
}

void bench_writer_close(long long writer) {
  close((int)writer);
}

long bench_read(int fd, void *buf, size_t len) {
  return (long)read(fd, buf, len);
}

long bench_write(int fd, const void *buf, size_t len) {
  return (long)write(fd, buf, len);
}

void bench_close(int fd) {
  close(fd);
}

int bench_devnull(void) {
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    bench_die("open /dev/null");
  return fd;
}

int bench_console(void) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0)
    return -1;
  const char *name = grantpt(master) == 0 && unlockpt(master) == 0
                         ? ptsname(master)
                         : NULL;
  int slave = name ? open(name, O_RDONLY | O_NOCTTY | O_CLOEXEC) : -1;
  if (slave < 0)
    close(master);
  /* Otherwise the master stays open, unwritten, for the whole run. */
  return slave;
}

static int tcp_socket(void) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    bench_die("socket");
  return s;
}

static void nodelay(int s) {
  int on = 1;
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

int bench_tcp_listen(int *port) {
  int l = tcp_socket();
  struct sockaddr_in a;
  tp_loopback(&a, 0);
  if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 64) != 0)
    bench_die("bind/listen");
  socklen_t len = sizeof a;
  if (getsockname(l, (struct sockaddr *)&a, &len) != 0)
    bench_die("getsockname");
  *port = ntohs(a.sin_port);
  return l;
}

int bench_tcp_accept(int listener) {
  int s = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
  if (s < 0)
    bench_die("accept");
  nodelay(s);
  return s;
}

int bench_tcp_connect(int port) {
  int c = tcp_socket();
  struct sockaddr_in a;
  tp_loopback(&a, port);
  if (connect(c, (struct sockaddr *)&a, sizeof a) != 0)
    bench_die("connect");
  nodelay(c);
  return c;
}

long bench_send(int fd, const void *buf, size_t len) {
  return (long)send(fd, buf, len, MSG_NOSIGNAL);
}

long bench_recv(int fd, void *buf, size_t len) {
  return (long)recv(fd, buf, len, 0);
}

void bench_sock_close(int fd) {
  close(fd);
}

struct bench_child {
  pid_t pid;
};

struct bench_child *bench_spawn(const char *name, const int *pass, int npass,
                                int nargs, const char *const *args) {
  char tokens[16][16];
  const char *argv[64];
  int k = 0;
  if (npass > 16 || nargs > 40)
    bench_die("bench_spawn: too many arguments");
  argv[k++] = self_path;
  argv[k++] = "--child";
  argv[k++] = name;
  for (int i = 0; i < npass; i++) {
    snprintf(tokens[i], sizeof tokens[i], "%d", pass[i]);
    argv[k++] = tokens[i];
  }
  for (int i = 0; i < nargs; i++)
    argv[k++] = args[i];
  argv[k] = NULL;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    bench_die("fork");
  if (pid == 0) {
    /* Everything is close-on-exec; the passed descriptors survive. */
    for (int i = 0; i < npass; i++)
      fcntl(pass[i], F_SETFD, 0);
    execv(self_path, (char *const *)argv);
    _exit(127);
  }
  struct bench_child *c = malloc(sizeof *c);
  if (c == NULL)
    bench_die("malloc");
  c->pid = pid;
  return c;
}

int bench_child_wait(struct bench_child *c) {
  int status = 0;
  while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
  }
  free(c);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int bench_fd_from_token(const char *token) {
  return atoi(token);
}

long bench_raise_nofile(long n) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return -1;
  if ((long)rl.rlim_cur < n) {
    rl.rlim_cur = (rlim_t)n;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur > rl.rlim_max)
      rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return (long)rl.rlim_cur;
}
#endif
