/* SPDX-License-Identifier: MIT */
/* The portable layer of tests/portable.h, for POSIX and for Windows. */
#ifdef _WIN32
#  include <winsock2.h>
#  include <windows.h>
#else
#  include <arpa/inet.h>
#  include <errno.h>
#  include <netinet/in.h>
#  include <pthread.h>
#  include <time.h>
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portable.h"

#define CHECK(x) TP_CHECK(x)

void tp_fail(const char *file, int line, const char *what, long long a,
             long long b, int show) {
  /* The error codes as the failed check left them. Microsoft documents
   * GetLastError and WSAGetLastError apart (both per thread; in practice,
   * and in Wine, the same value), so both are printed. */
  int err = errno;
  char more[64] = "";
#ifdef _WIN32
  snprintf(more, sizeof more, "; Win32 error %lu, Winsock error %d",
           (unsigned long)GetLastError(), WSAGetLastError());
#endif
  if (show)
    fprintf(stderr,
            "%s:%d: assertion failed: %s (%lld vs %lld; errno %d: %s%s)\n",
            file, line, what, a, b, err, strerror(err), more);
  else
    fprintf(stderr, "%s:%d: assertion failed: %s (errno %d: %s%s)\n", file,
            line, what, err, strerror(err), more);
  fflush(stderr);
  exit(1);
}

void tp_loopback(struct sockaddr_in *a, int port) {
  memset(a, 0, sizeof *a);
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a->sin_port = htons((unsigned short)port);
}

#ifdef _WIN32

struct tp_thread {
  HANDLE h;
  void (*fn)(void *);
  void *arg;
};

static DWORD WINAPI thread_main(void *p) {
  tp_thread *t = p;
  t->fn(t->arg);
  return 0;
}

tp_thread *tp_thread_start(void (*fn)(void *), void *arg) {
  tp_thread *t = malloc(sizeof *t);
  CHECK(t != NULL);
  t->fn = fn;
  t->arg = arg;
  t->h = CreateThread(NULL, 0, thread_main, t, 0, NULL);
  CHECK(t->h != NULL);
  return t;
}

void tp_thread_join(tp_thread *t) {
  CHECK(WaitForSingleObject(t->h, INFINITE) == WAIT_OBJECT_0);
  CloseHandle(t->h);
  free(t);
}

void tp_sleep_ms(int ms) {
  Sleep((DWORD)ms);
}

double tp_now_ms(void) {
  LARGE_INTEGER t, f;
  QueryPerformanceCounter(&t);
  QueryPerformanceFrequency(&f);
  return (double)t.QuadPart * 1e3 / (double)f.QuadPart;
}

double tp_cpu_ms(void) {
  FILETIME created, exited, kernel, user;
  CHECK(GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel,
                        &user));
  ULARGE_INTEGER k, u;
  k.LowPart = kernel.dwLowDateTime;
  k.HighPart = kernel.dwHighDateTime;
  u.LowPart = user.dwLowDateTime;
  u.HighPart = user.dwHighDateTime;
  return (double)(k.QuadPart + u.QuadPart) / 1e4;
}

#else

struct tp_thread {
  pthread_t id;
  void (*fn)(void *);
  void *arg;
};

static void *thread_main(void *p) {
  tp_thread *t = p;
  t->fn(t->arg);
  return NULL;
}

tp_thread *tp_thread_start(void (*fn)(void *), void *arg) {
  tp_thread *t = malloc(sizeof *t);
  CHECK(t != NULL);
  t->fn = fn;
  t->arg = arg;
  CHECK(pthread_create(&t->id, NULL, thread_main, t) == 0);
  return t;
}

void tp_thread_join(tp_thread *t) {
  CHECK(pthread_join(t->id, NULL) == 0);
  free(t);
}

void tp_sleep_ms(int ms) {
  struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

double tp_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double tp_cpu_ms(void) {
  struct timespec t;
  CHECK(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) == 0);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

#endif
