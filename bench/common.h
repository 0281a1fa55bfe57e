/* SPDX-License-Identifier: MIT */
/* Shared pieces of the benchmark programs: the strategies being compared,
 * a thin portable layer (clocks, CPU time, pipes, loopback TCP, child
 * processes, threads) so that every program is one source for Linux and for
 * Windows, and the statistics and CSV output.
 *
 * Every figure a program reports is a median over repetitions in which the
 * strategies run interleaved (the order rotates each repetition), because
 * the machines are shared and noisy: only ratios taken side by side in one
 * run mean anything. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stddef.h>
#include <stdio.h>

#include "anypoll.h"

#ifdef _WIN32
#  define BENCH_PLATFORM "wine"
#else
#  define BENCH_PLATFORM "linux"
#endif

/* ---- Strategies (common.c) ----------------------------------------------- */

#define BENCH_BLOCKING (-1) /* no poll at all: a plain blocking read */
/* The watch set: an anypoll_set registered once, outside the timed part,
 * then anypoll_set_wait. Only programs that say so take it (by name: it is
 * not in "all", because a wait on a set needs the set made beforehand with
 * bench_set_open). */
#define BENCH_SET (-2)
/* The watch set on pipes made with anypoll_pipe (read with anypoll_read):
 * what a program that creates its own pipes for the set gets. */
#define BENCH_ASET (-3)
/* The watch set on the pipes of a producer started with anypoll_spawn
 * (its stdout and stderr), read with anypoll_read: the seed's scenario
 * with the library's own spawn (relay only). */
#define BENCH_SPAWN (-4)

struct bench_strategy {
  const char *name;
  int backend; /* enum anypoll_backend, or BENCH_BLOCKING */
};

#define BENCH_MAX_STRATEGIES 8

/* The strategies "all" stands for on this platform. */
#ifdef _WIN32
#  define BENCH_ALL "blocking,event,sleep1,yield"
#else
#  define BENCH_ALL "blocking,event,native,select,sleep1,yield"
#endif

/* Fills out[] from a comma-separated list of names ("all" for every
 * strategy of this platform) and returns the count. A backend this build
 * does not have (select before it lands) is left out with a note on stderr
 * and in the CSV "skipped" list, never replaced by another. */
int bench_strategies(const char *list, struct bench_strategy *out);

/* Names of the strategies bench_strategies() had to skip, for the report. */
const char *bench_skipped(void);

/* Waits until fds[0..n) has an event, using strategy s: anypoll_poll_with
 * and an infinite timeout. Returns the poll result (a blocking strategy
 * returns 1 at once, as its read will do the waiting). Exits on error. */
int bench_wait(const struct bench_strategy *s, struct pollfd *fds, int n);

/* The watch set as a strategy: registers every fds[i] with fd >= 0 for
 * fds[i].events (data: &fds[i]); exits on error. */
anypoll_set *bench_set_open(struct pollfd *fds, int n);
/* Waits on the set with an infinite timeout and writes what it reports
 * into the revents of the pollfd each event's data points to (the others
 * get 0), as bench_wait does; returns the count. Exits on error. */
int bench_set_wait(anypoll_set *set, struct pollfd *fds, int n);
/* Deletes every fds[i] with fd >= 0 (a descriptor must leave the set
 * before it is closed) and frees the set. */
void bench_set_close(anypoll_set *set, struct pollfd *fds, int n);

/* ---- Portable layer (win32.c or posix.c; clocks and threads: clock.c) ---- */

double bench_now(void);       /* monotonic seconds */
double bench_cpu(void);       /* this process's CPU seconds, user + system,
                                 all threads */
/* The same with sub-millisecond resolution where bench_cpu has only 10 ms
 * ticks (Wine): the sum over the live threads' /proc schedstat of the Linux
 * process whose pid is in BENCH_SELF_PID (set by bench/run; without it,
 * bench_cpu). For short measurements in which no thread exits. */
double bench_cpu_fine(void);
/* CPU seconds of the wineserver whose Linux pid is in the environment
 * variable BENCH_SERVER_PID (set by bench/run), read from /proc; -1 when
 * not known (natively there is no server). */
double bench_server_cpu(void);
/* From Linux's schedstat, summed over the live threads of this process
 * (BENCH_SELF_PID under Wine) and of the wineserver (BENCH_SERVER_PID):
 * *queued, the seconds they were runnable but waited for a CPU (the part
 * of the time a loaded machine adds), and *slices, the times they were put
 * on a CPU (every wake-up of a blocked thread is one). 0, or -1 when /proc
 * cannot be read. */
int bench_sched(double *queued, double *slices);
void bench_sleep_ms(int ms);

/* A pipe whose ends are not inherited by children; the Windows one has a
 * buffer of `size` bytes, and on Linux the pipe is resized to `size`. */
void bench_pipe(int fds[2], unsigned size);
/* A pipe of which only the read end is a descriptor; the write end stays a
 * raw handle (an fd on Linux) so that a Windows C runtime's descriptor
 * table holds one entry per pipe, not two. Returns the read end, or -1 with
 * errno when out of descriptors or handles. */
int bench_pipe_reader(long long *writer);
long bench_writer_write(long long writer, const void *buf, size_t len);
void bench_writer_close(long long writer);
long bench_read(int fd, void *buf, size_t len);
/* A read through anypoll_read: the read end of an anypoll_pipe pipe. */
long bench_anypoll_read(int fd, void *buf, size_t len);
long bench_write(int fd, const void *buf, size_t len);
void bench_close(int fd);
int bench_devnull(void); /* /dev/null or NUL, for writing */
/* The read side of a terminal, for idle waits: on Linux the slave of a new
 * pseudo-terminal (its master stays open and silent), on Windows the
 * console input (CONIN$), which exists under Wine only when the program
 * runs on a terminal (bench/run uses script(1)). Returns -1 when there is
 * none. */
int bench_console(void);

/* Loopback TCP with Nagle off. The descriptors are C runtime descriptors on
 * Windows too (anypoll polls them); use bench_send/recv on them. */
int bench_tcp_listen(int *port);
int bench_tcp_accept(int listener);
int bench_tcp_connect(int port);
long bench_send(int fd, const void *buf, size_t len);
long bench_recv(int fd, void *buf, size_t len);
void bench_sock_close(int fd);

/* Child processes: the same executable, started with
 * "--child NAME TOKEN... ARG..." where each TOKEN stands for one descriptor
 * of pass[] (inherited by the child; nothing else is). The child turns a
 * token back into a descriptor with bench_fd_from_token. */
struct bench_child;
struct bench_child *bench_spawn(const char *name, const int *pass, int npass,
                                int nargs, const char *const *args);
int bench_child_wait(struct bench_child *c); /* exit status; frees c */
int bench_fd_from_token(const char *token);
/* Call first thing in main(): remembers argv[0] for bench_spawn. */
void bench_init(int argc, char **argv);

struct bench_thread;
struct bench_thread *bench_thread_start(void (*fn)(void *), void *arg);
void bench_thread_join(struct bench_thread *t);

/* Raises the descriptor limit to at least n where the system allows;
 * returns the limit now in force (-1 if unknown, as on Windows). */
long bench_raise_nofile(long n);

/* ---- Statistics and output (stats.c; the command line: common.c) -------- */

double bench_median(double *v, int n);        /* sorts v */
double bench_percentile(double *v, int n, double p); /* sorts v, p in 0..1 */

/* Appends one row to the CSV file named by --csv (if any):
 * platform,scenario,strategy,param,metric,value,ratio,reps
 * ratio is value / the blocking strategy's value for the same metric (or
 * empty when there is none). */
void bench_csv_open(const char *path);
void bench_csv_row(const char *scenario, const char *strategy, long param,
                   const char *metric, double value, double ratio, int reps);
void bench_csv_close(void);

/* Command-line helpers: "--name value" pairs. */
const char *bench_arg(int argc, char **argv, const char *name,
                      const char *fallback);
double bench_arg_num(int argc, char **argv, const char *name, double fallback);

void bench_die(const char *what); /* prints what + errno and exits 2 */

#endif /* BENCH_COMMON_H */
