/* SPDX-License-Identifier: MIT */
/* The benchmarks' portable layer on Linux (common.h; win32.c is Windows'):
 * descriptors, loopback TCP, and children started from this same
 * executable. */
#define _GNU_SOURCE /* pipe2, F_SETPIPE_SZ, accept4 */
#include "common.h"
#include "portable.h" /* tests/portable.h: tp_loopback */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* This executable, for bench_spawn (set by bench_init). */
static char self_path[1024];

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
