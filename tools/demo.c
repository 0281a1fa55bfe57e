/* A first look at anypoll: a thread writes to a pipe after 200 ms while the
 * main thread waits in anypoll_poll with an infinite timeout; the demo shows
 * how soon the wait ended after the write, and that it took no CPU. */
#include <stdio.h>
#include <time.h>

#include "anypoll.h"

#ifdef _WIN32
#  include <fcntl.h>
#  include <io.h>
#  include <windows.h>
static double now_ms(void) {
  LARGE_INTEGER t, f;
  QueryPerformanceCounter(&t);
  QueryPerformanceFrequency(&f);
  return (double)t.QuadPart * 1e3 / (double)f.QuadPart;
}
static double cpu_ms(void) {
  FILETIME c, e, k, u;
  GetProcessTimes(GetCurrentProcess(), &c, &e, &k, &u);
  ULARGE_INTEGER kk = { { k.dwLowDateTime, k.dwHighDateTime } };
  ULARGE_INTEGER uu = { { u.dwLowDateTime, u.dwHighDateTime } };
  return (double)(kk.QuadPart + uu.QuadPart) / 1e4;
}
static int make_pipe(int p[2]) { return _pipe(p, 4096, _O_BINARY); }
static double written_at;
static int write_fd;
static DWORD WINAPI writer(void *arg) {
  (void)arg;
  Sleep(200);
  written_at = now_ms();
  _write(write_fd, "x", 1);
  return 0;
}
static void start_writer(int fd) {
  write_fd = fd;
  CloseHandle(CreateThread(NULL, 0, writer, NULL, 0, NULL));
}
#else
#  include <pthread.h>
#  include <unistd.h>
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
static int make_pipe(int p[2]) { return pipe(p); }
static double written_at;
static int write_fd;
static void *writer(void *arg) {
  (void)arg;
  usleep(200000);
  written_at = now_ms();
  if (write(write_fd, "x", 1) != 1)
    perror("write");
  return NULL;
}
static void start_writer(int fd) {
  pthread_t t;
  write_fd = fd;
  pthread_create(&t, NULL, writer, NULL);
  pthread_detach(t);
}
#endif

int main(void) {
  int p[2];
  if (make_pipe(p) != 0) {
    perror("pipe");
    return 1;
  }
  printf("anypoll %s demo: waiting on an empty pipe, a writer thread writes "
         "one byte after 200 ms\n", anypoll_version());
  const int backends[] = { ANYPOLL_BACKEND_DEFAULT, ANYPOLL_BACKEND_SLEEP1,
                           ANYPOLL_BACKEND_YIELD };
  printf("%-8s %10s %14s %14s\n", "backend", "revents", "wake-up (ms)",
         "CPU used (ms)");
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    struct pollfd fd = { 0 };
    fd.fd = p[0];
    fd.events = POLLIN;
    double cpu0 = cpu_ms();
    start_writer(p[1]);
    int n = anypoll_poll_with(backends[i], &fd, 1, -1);
    double woke = now_ms();
    double cpu = cpu_ms() - cpu0;
    if (n != 1) {
      perror("anypoll_poll");
      return 1;
    }
    char c;
#ifdef _WIN32
    _read(p[0], &c, 1);
#else
    if (read(p[0], &c, 1) != 1)
      return 1;
#endif
    printf("%-8s %10s %14.3f %14.1f\n",
           i == 0 ? "event" : anypoll_backend_name(backends[i]),
           fd.revents == POLLIN ? "POLLIN" : "?", woke - written_at, cpu);
  }
  return 0;
}
