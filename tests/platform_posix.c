/* SPDX-License-Identifier: MIT */
/* Test helpers on POSIX. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define CHECK(x) TP_CHECK(x)

/* A write to a closed pipe or socket must fail with EPIPE, not kill the
 * test; runs before main. */
__attribute__((constructor)) static void ignore_sigpipe(void) {
  signal(SIGPIPE, SIG_IGN);
}

void tp_pipe(int fds[2]) {
  CHECK(pipe(fds) == 0);
}

int tp_tcp_listener(int *port) {
  return tp_tcp_listener_backlog(port, 16);
}

int tp_tcp_accept(int listener) {
  int s = accept(listener, NULL, NULL);
  CHECK(s >= 0);
  return s;
}

void tp_tcp_pair(int fds[2]) {
  int port;
  int l = tp_tcp_listener(&port);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(c >= 0);
  struct sockaddr_in a;
  tp_loopback(&a, port);
  CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
  fds[0] = tp_tcp_accept(l);
  fds[1] = c;
  close(l);
}

int tp_tcp_connect_nb(int port) {
  int c = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(c >= 0);
  tp_socket_set_nonblocking(c, 1);
  struct sockaddr_in a;
  tp_loopback(&a, port);
  int r = connect(c, (struct sockaddr *)&a, sizeof a);
  CHECK(r == 0 || errno == EINPROGRESS || errno == ECONNREFUSED);
  return c;
}

long tp_write(int fd, const void *buf, size_t len) {
  return (long)write(fd, buf, len);
}

long tp_read(int fd, void *buf, size_t len) {
  return (long)read(fd, buf, len);
}

long tp_send(int fd, const void *buf, size_t len) {
  return (long)send(fd, buf, len, 0);
}

long tp_recv(int fd, void *buf, size_t len) {
  return (long)recv(fd, buf, len, 0);
}

void tp_shutdown_wr(int fd) {
  CHECK(shutdown(fd, SHUT_WR) == 0);
}

void tp_close_reset(int fd) {
  struct linger lg = { 1, 0 };
  CHECK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);
  close(fd);
}

void tp_close(int fd) {
  close(fd);
}

void tp_close_early(int fd) {
  tp_close(fd);
}

void tp_close_early_done(int fd) {
  (void)fd;
}

int tp_socket_is_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  CHECK(flags >= 0);
  return (flags & O_NONBLOCK) != 0;
}

void tp_socket_set_nonblocking(int fd, int on) {
  int flags = fcntl(fd, F_GETFL);
  CHECK(flags >= 0);
  CHECK(fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) == 0);
}

void tp_socket_linger(int fd, int seconds) {
  struct linger lg = { 1, seconds };
  CHECK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);
}

int tp_unused_fd(void) {
  int fd = dup(0);
  if (fd < 0)
    return 1000;
  close(fd);
  return fd;
}

void tp_raise_fd_limit(int n) {
  struct rlimit r;
  CHECK(getrlimit(RLIMIT_NOFILE, &r) == 0);
  if (r.rlim_cur >= (rlim_t)n)
    return;
  r.rlim_cur = (rlim_t)n;
  CHECK(setrlimit(RLIMIT_NOFILE, &r) == 0);
}

struct tp_child {
  pid_t pid;
};

tp_child *tp_child_writer(int write_fd, int delay_ms, int linger_ms) {
  tp_child *c = malloc(sizeof *c);
  CHECK(c != NULL);
  c->pid = fork();
  CHECK(c->pid >= 0);
  if (c->pid == 0) {
    tp_sleep_ms(delay_ms);
    if (write(write_fd, "c", 1) != 1)
      _exit(3);
    tp_sleep_ms(linger_ms);
    _exit(0);
  }
  return c;
}

void tp_child_kill(tp_child *c) {
  CHECK(kill(c->pid, SIGKILL) == 0);
}

void tp_child_wait(tp_child *c) {
  int status;
  CHECK(waitpid(c->pid, &status, 0) == c->pid);
  free(c);
}

tp_child *tp_child_connector(int port, int linger_ms) {
  tp_child *c = malloc(sizeof *c);
  CHECK(c != NULL);
  c->pid = fork();
  CHECK(c->pid >= 0);
  if (c->pid == 0) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
  tp_loopback(&a, port);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        send(s, "c", 1, 0) != 1)
      _exit(3);
    tp_sleep_ms(linger_ms);
    _exit(0);
  }
  return c;
}

static long count_entries(const char *dir) {
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  long n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

long tp_descriptor_count(void) {
  return count_entries("/proc/self/fd") - 1; /* less opendir's own */
}

long tp_handle_probe(void) {
  int fd = dup(0);
  CHECK(fd >= 0);
  close(fd);
  return fd;
}

int tp_thread_count(void) {
  return (int)count_entries("/proc/self/task");
}

void tp_set_pool_idle_ms(int ms) {
  (void)ms; /* no helper threads on POSIX */
}

int tp_child_main(int argc, char **argv) {
  (void)argc, (void)argv;
  return 2; /* POSIX children are forked, never exec'd */
}

/* ---- Conformance matrix helpers ----------------------------------------- */
#include <poll.h>
#include <pty.h>
#include <sys/resource.h>

int tp_unix_pair(int fds[2]) {
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  return 0;
}

int tp_tcp_listener_backlog(int *port, int backlog) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(l >= 0);
  struct sockaddr_in a;
  tp_loopback(&a, 0);
  CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(listen(l, backlog) == 0);
  socklen_t len = sizeof a;
  CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
  *port = ntohs(a.sin_port);
  return l;
}

int tp_tcp_socket(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(s >= 0);
  return s;
}

int tp_udp_self(void) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  CHECK(s >= 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(getsockname(s, (struct sockaddr *)&a, &len) == 0);
  CHECK(connect(s, (struct sockaddr *)&a, sizeof a) == 0);
  return s;
}

long tp_send_oob(int fd, const void *buf, size_t len) {
  return (long)send(fd, buf, len, MSG_OOB);
}

long tp_fill_pipe(int wfd) {
  int flags = fcntl(wfd, F_GETFL);
  CHECK(flags >= 0);
  CHECK(fcntl(wfd, F_SETFL, flags | O_NONBLOCK) == 0);
  static char chunk[4096];
  long total = 0;
  /* Big writes first, then single bytes for the last partial page, so the
   * pipe ends up with no room for even one byte. */
  for (size_t size = sizeof chunk; size > 0; size = size > 1 ? size / 2 : 0) {
    ssize_t n;
    while ((n = write(wfd, chunk, size)) > 0)
      total += n;
    CHECK(errno == EAGAIN);
  }
  CHECK(fcntl(wfd, F_SETFL, flags) == 0);
  return total;
}

long tp_fill_socket(int fd) {
  int flags = fcntl(fd, F_GETFL);
  CHECK(flags >= 0);
  CHECK(fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0);
  static char chunk[65536];
  long total = 0;
  ssize_t n;
  while ((n = send(fd, chunk, sizeof chunk, 0)) > 0)
    total += n;
  CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
  CHECK(fcntl(fd, F_SETFL, flags) == 0);
  return total;
}

int tp_temp_file(int readonly) {
  char path[] = "/tmp/anypoll-test-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, "abc", 3) == 3);
  if (readonly) {
    int ro = open(path, O_RDONLY);
    CHECK(ro >= 0);
    close(fd);
    fd = ro;
  }
  unlink(path);
  return fd;
}

int tp_null_device(void) {
  int fd = open("/dev/null", O_RDWR);
  CHECK(fd >= 0);
  return fd;
}

int tp_wait_socket(int fd, int ms) {
  struct pollfd p = { fd, POLLIN | POLLPRI, 0 };
  int r;
  while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR) {
  }
  return r == 1;
}

unsigned long tp_nfds_limit(void) {
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
  return (unsigned long)rl.rlim_cur;
}

int tp_dup_to(int fd, int target) {
  return dup2(fd, target);
}

static int term_master = -1, term_slave = -1;

int tp_terminal_open(int *in_fd, int *out_fd) {
  CHECK(openpty(&term_master, &term_slave, NULL, NULL, NULL) == 0);
  *in_fd = *out_fd = term_slave;
  return 0;
}

void tp_terminal_type(void) {
  CHECK(write(term_master, "x\n", 2) == 2);
  /* The line discipline takes the input over asynchronously. */
  struct pollfd p = { term_slave, POLLIN, 0 };
  CHECK(poll(&p, 1, 2000) == 1);
}

void tp_terminal_close(void) {
  close(term_slave);
  close(term_master);
  term_slave = term_master = -1;
}

static void on_sigusr1(int sig) {
  (void)sig;
}

/* A signal sent before the target thread is inside its wait is handled
 * at once and lost to the wait, which then sleeps its whole timeout: a
 * target preempted for ms between tp_interrupt_after and its call (a
 * loaded machine, the sanitizers) would fail the test. So after ms the
 * signal is sent again every 10 ms until tp_interrupt_join: the first one
 * that lands inside the wait ends it with EINTR. One interrupter at a
 * time. */
static atomic_int interrupt_stop;

struct interrupt {
  pthread_t target;
  int ms;
};

static void interrupt_main(void *arg) {
  struct interrupt *in = arg;
  tp_sleep_ms(in->ms);
  while (!atomic_load(&interrupt_stop)) {
    pthread_kill(in->target, SIGUSR1);
    tp_sleep_ms(10);
  }
  free(in);
}

tp_thread *tp_interrupt_after(int ms) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigusr1; /* no SA_RESTART: the wait must see EINTR */
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
  struct interrupt *in = malloc(sizeof *in);
  CHECK(in != NULL);
  in->target = pthread_self();
  in->ms = ms;
  atomic_store(&interrupt_stop, 0);
  return tp_thread_start(interrupt_main, in);
}

/* Every signal sent has been handled when this returns: one still pending
 * for this thread is delivered while it waits in the join. */
void tp_interrupt_join(tp_thread *t) {
  atomic_store(&interrupt_stop, 1);
  tp_thread_join(t);
}
