/* SPDX-License-Identifier: MIT */
/* The portable layer the tests and the benchmarks share (library
 * anypoll_testsupport): threads, sleeping, clocks, a loopback address, and
 * what happens when a helper fails. It uses nothing of anypoll, so the
 * benchmarks can link it with the release library and the tests with the
 * lock-model one. tests/test.h and bench/common.h build on it; their tp_*
 * and bench_* helpers for descriptors stay in tests/platform_*.c and
 * bench/win32.c, bench/posix.c. */
#ifndef ANYPOLL_TESTS_PORTABLE_H
#define ANYPOLL_TESTS_PORTABLE_H

/* Reports a failed check (file:line, what, and the two operands when show
 * is set) on stderr and ends the process with status 1. Every helper of
 * this layer ends this way when the system refuses it something. */
void tp_fail(const char *file, int line, const char *what, long long a,
             long long b, int show);

/* A check of a system call in a helper: on failure, the system's error
 * (errno; on Windows GetLastError and WSAGetLastError, so the includer has
 * <winsock2.h>), then tp_fail. */
#ifdef _WIN32
#  define TP_CHECK(x)                                                        \
    do {                                                                     \
      if (!(x)) {                                                            \
        fprintf(stderr, "%s failed: error %lu, wsa %d\n", #x,                \
                GetLastError(), WSAGetLastError());                          \
        tp_fail(__FILE__, __LINE__, #x, 0, 0, 0);                            \
      }                                                                      \
    } while (0)
#else
#  define TP_CHECK(x)                                                        \
    do {                                                                     \
      if (!(x)) {                                                            \
        perror(#x);                                                          \
        tp_fail(__FILE__, __LINE__, #x, 0, 0, 0);                            \
      }                                                                      \
    } while (0)
#endif

typedef struct tp_thread tp_thread;
tp_thread *tp_thread_start(void (*fn)(void *), void *arg);
void tp_thread_join(tp_thread *t);

void tp_sleep_ms(int ms);
/* A monotonic clock, in milliseconds with sub-millisecond resolution. */
double tp_now_ms(void);
/* CPU time of the whole process (every thread, exited ones included), in
 * milliseconds; Windows (and Wine) count it in 10-16 ms ticks. */
double tp_cpu_ms(void);

/* Fills *a (a struct sockaddr_in) with 127.0.0.1 and the port. */
struct sockaddr_in;
void tp_loopback(struct sockaddr_in *a, int port);

#endif
