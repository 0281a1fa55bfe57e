/* SPDX-License-Identifier: MIT */
/* The test harness: assertions that print what failed and where, and the
 * portable helpers (tp_*) that let one test source run natively and under
 * Wine. Each test case runs in its own process, started by CTest with a
 * timeout; a failed assertion ends the process with status 1. */
#ifndef ANYPOLL_TEST_H
#define ANYPOLL_TEST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "anypoll.h"
#include "portable.h" /* tp_fail, threads, sleep, clocks (tests/portable.c) */

#define TEST(name) void test_##name(void)

#define ASSERT(expr)                                                         \
  do {                                                                       \
    if (!(expr))                                                             \
      tp_fail(__FILE__, __LINE__, #expr, 0, 0, 0);                           \
  } while (0)

#define ASSERT_OP(a, op, b)                                                  \
  do {                                                                       \
    long long a_ = (long long)(a), b_ = (long long)(b);                      \
    if (!(a_ op b_))                                                         \
      tp_fail(__FILE__, __LINE__, #a " " #op " " #b, a_, b_, 1);             \
  } while (0)

#define ASSERT_EQ(a, b) ASSERT_OP(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_OP(a, !=, b)
#define ASSERT_GE(a, b) ASSERT_OP(a, >=, b)
#define ASSERT_LE(a, b) ASSERT_OP(a, <=, b)
#define ASSERT_LT(a, b) ASSERT_OP(a, <, b)
#define ASSERT_GT(a, b) ASSERT_OP(a, >, b)

/* The backend under test, from the command line (default: ANYPOLL_BACKEND_DEFAULT). */
extern int tp_backend;

/* The watch set backend under test, from the command line: "setdefault"
 * (NULL here: anypoll_set_new) or "setpoll" ("poll": the portable one). */
extern const char *tp_set_backend;
/* The spawn cases' mode, from the command line: "spawn", or (POSIX)
 * "spawnreaper", the fallback for systems without pidfd_open; NULL for
 * every other case. */
extern const char *tp_spawn_mode;
/* A new set of that backend; exits on failure. */
anypoll_set *tp_set_new(void);
/* The name of that backend ("epoll", "poll", ...), for the few cases whose
 * documented behaviour differs between backends. */
const char *tp_set_backend_name(void);

/* anypoll_poll_with(tp_backend, ...). */
int tp_poll(struct pollfd *fds, anypoll_nfds_t nfds, int timeout_ms);

/* A thread's call that waits for ever on one descriptor for POLLIN:
 * tp_thread_start(tp_poll_forever, &f) with f = { fd, -2, 0 }; result stays
 * -2 while the call waits (atomic: read while it may still be waiting). */
struct tp_forever {
  int fd;
  atomic_int result;
  short revents;
};
void tp_poll_forever(void *arg);

/* Sets up one pollfd entry. */
void tp_pfd(struct pollfd *p, int fd, short events);

/* An anonymous pipe: fds[0] reads, fds[1] writes. */
void tp_pipe(int fds[2]);
/* A connected TCP pair on loopback, as descriptors. */
void tp_tcp_pair(int fds[2]);
/* A listening TCP socket on loopback; *port gets its port. */
int tp_tcp_listener(int *port);
/* A socket whose non-blocking connect to a closed loopback port is under
 * way (it will be refused). */
int tp_tcp_connect_nb(int port);
/* Accepts one connection on a listener. */
int tp_tcp_accept(int listener);

long tp_write(int fd, const void *buf, size_t len);
long tp_read(int fd, void *buf, size_t len);
long tp_send(int fd, const void *buf, size_t len);
long tp_recv(int fd, void *buf, size_t len);
void tp_shutdown_wr(int fd);
/* Closes with a reset (SO_LINGER 0) instead of an orderly shutdown. */
void tp_close_reset(int fd);
void tp_close(int fd);
/* Closes what fd refers to while other threads may be polling it or making
 * handles; on Windows a socket's descriptor number then stays taken (the C
 * runtime would close the socket's handle value a second time, which by
 * then may name another thread's new handle) until tp_close_early_done
 * frees it, once the other threads are done. Elsewhere tp_close, and
 * tp_close_early_done does nothing. */
void tp_close_early(int fd);
void tp_close_early_done(int fd);

/* Whether a socket descriptor is in non-blocking mode, found by trying a
 * recv on an empty socket. */
int tp_socket_is_nonblocking(int fd);
void tp_socket_set_nonblocking(int fd, int on);
/* SO_LINGER on, with a timeout of seconds. */
void tp_socket_linger(int fd, int seconds);

/* A descriptor number that is not open. */
int tp_unused_fd(void);

/* Makes sure at least n descriptors can be open at once. */
void tp_raise_fd_limit(int n);

/* A child process that holds the write end of a pipe: after delay_ms it
 * writes the byte 'c' to it, then lives on for linger_ms before exiting.
 * The caller closes its own copy of the write end afterwards. */
typedef struct tp_child tp_child;
tp_child *tp_child_writer(int write_fd, int delay_ms, int linger_ms);
void tp_child_kill(tp_child *c);
/* Waits for the child to end and frees it. */
void tp_child_wait(tp_child *c);
/* The child's side, called by the runner for "--child ARGS...". */
int tp_child_main(int argc, char **argv);
#ifdef _WIN32
/* test_win_set.c's child (runner.c): a registered pipe closed before its
 * del. */
int tp_set_close_child(const char *order);
/* This test program again, as "--child ARGS" with nothing inherited: its
 * exit status, once it has ended (within 20 s). */
unsigned long tp_child_status(const char *args);
/* The same, the child inheriting every inheritable handle. */
unsigned long tp_child_status_inheriting(const char *args);
/* An overlapped named pipe of this process, named after tag: its server
 * end (inbound, overlapped, byte mode) as a descriptor, and its client
 * end, connected, a synchronous handle for writing, in *client (a HANDLE;
 * void * here, as this header includes no Windows header). */
int tp_overlapped_pipe(const char *tag, void **client);
/* Starts the program's own overlapped read of one byte through fd's
 * handle, and asserts that it is pending: the event (a HANDLE) that it
 * signals when it completes. ov (an OVERLAPPED) and buf must outlive the
 * read; the caller closes the event. */
struct _OVERLAPPED;
void *tp_own_overlapped_read(int fd, struct _OVERLAPPED *ov, char *buf);
#endif

/* A child process that connects to 127.0.0.1:port, sends the byte 'c', and
 * lives on for linger_ms; kill it to make its end of the connection vanish. */
tp_child *tp_child_connector(int port, int linger_ms);

/* For leak checks. tp_descriptor_count: open descriptors (POSIX, from
 * /proc/self/fd) or handles (Windows' GetProcessHandleCount, which Wine
 * stubs to 0). tp_handle_probe: the lowest free descriptor or handle value,
 * which moves when one below it leaks (and works under Wine).
 * tp_thread_count: this process's threads. tp_set_pool_idle_ms: how long
 * anypoll's idle helper threads live (Windows; nothing on POSIX), so that a
 * check need not wait the default seconds for them to exit. */
long tp_descriptor_count(void);
long tp_handle_probe(void);
int tp_thread_count(void);
void tp_set_pool_idle_ms(int ms);

/* Something a helper thread does after a delay while the test waits: the
 * tp_later lives until the thread is joined. */
enum tp_action {
  TP_WRITE_BYTE,  /* tp_write one byte 'w' to fd */
  TP_SEND_BYTE,   /* tp_send one byte 's' */
  TP_CLOSE_FD,    /* tp_close */
  TP_CLOSE_EARLY, /* tp_close_early */
  TP_SHUTDOWN_WR, /* tp_shutdown_wr */
  TP_CONNECT_TO,  /* a connection to port fd, closed at once */
  TP_KILL_CHILD   /* tp_child_kill */
};
struct tp_later {
  int fd;
  int delay_ms;
  enum tp_action action;
  tp_child *child;
};
tp_thread *tp_after(struct tp_later *l, int fd, int delay_ms,
                    enum tp_action a);
tp_thread *tp_kill_after(struct tp_later *l, tp_child *c, int delay_ms);
/* tp_cpu_ms (tests/portable.h) is for bounds like "a 1 s wait used less
 * than 10% of a CPU", never for timings. */

/* ---- Descriptor kinds and states for the conformance matrix -------------
 * (tests/conformance/). Each returns a C runtime descriptor as above. */

/* A connected AF_UNIX stream pair; 0, or -1 where the platform has none. */
int tp_unix_pair(int fds[2]);
/* A listening TCP socket on loopback with the given backlog. */
int tp_tcp_listener_backlog(int *port, int backlog);
/* A TCP socket that was never bound or connected. */
int tp_tcp_socket(void);
/* A UDP socket bound to loopback (an ephemeral port), connected to itself:
 * tp_send on it queues a datagram for it to read. */
int tp_udp_self(void);
/* send() with MSG_OOB. */
long tp_send_oob(int fd, const void *buf, size_t len);
/* Writes to a pipe's write end until it is full, without blocking; returns
 * the bytes written. */
long tp_fill_pipe(int wfd);
/* Sends on a socket until its send buffer is full (the peer not reading),
 * without blocking; returns the bytes sent. The socket stays blocking. */
long tp_fill_socket(int fd);
/* A regular file holding a few bytes, opened read-write or read-only; it
 * is removed when closed (POSIX: at once). */
int tp_temp_file(int readonly);
/* /dev/null, or NUL on Windows. */
int tp_null_device(void);
/* Waits, with the platform's own select()/poll() (not anypoll), up to ms
 * for a socket to become readable or to have an exceptional condition
 * (an error, a failed connect, out-of-band data). Returns 1 if it did. */
int tp_wait_socket(int fd, int ms);
/* The largest nfds the platform accepts (RLIMIT_NOFILE soft limit, or
 * ANYPOLL_MAX_NFDS). */
unsigned long tp_nfds_limit(void);
/* dup2(fd, target); returns target, or -1 if the descriptor table is too
 * small for it. */
int tp_dup_to(int fd, int target);
/* A terminal: a pseudo-terminal's slave on POSIX (both descriptors the
 * same), the console's input and screen buffer on Windows. Returns 0, or
 * -1 when there is none (Windows without a console). Its input starts
 * empty; tp_terminal_type queues one line of input; tp_terminal_close
 * closes everything. One terminal at a time. */
int tp_terminal_open(int *in_fd, int *out_fd);
void tp_terminal_type(void);
void tp_terminal_close(void);
/* After ms, interrupts the calling thread's wait the platform's way: a
 * signal whose handler does nothing (POSIX, SIGUSR1, sent again every
 * 10 ms until the join, as one sent before the wait starts is lost) or a
 * user APC (Windows, which waits queued for the wait). The wait is
 * interrupted however late the thread reaches it. Join the returned thread
 * with tp_interrupt_join once the wait has returned. One at a time. */
tp_thread *tp_interrupt_after(int ms);
void tp_interrupt_join(tp_thread *t);

#endif
