/* SPDX-License-Identifier: MIT */
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
static void sleep_1ms(void) { Sleep(1); }
/* Wine's ntdll exports wine_get_version; Windows' does not. */
static int under_wine(void) {
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  return ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL;
}
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
static void sleep_1ms(void) {
  struct timespec ts = { 0, 1000000 };
  nanosleep(&ts, NULL);
}
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
  double wake[3] = { 0, 0, 0 }, used[3] = { 0, 0, 0 };
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
    wake[i] = woke - written_at;
    used[i] = cpu;
  }

  /* What a 1 ms sleep lasts here: what sleep1 pays per round. */
  double t0 = now_ms();
  for (int i = 0; i < 20; i++)
    sleep_1ms();
  double one_ms = (now_ms() - t0) / 20;
#ifdef _WIN32
  int wine = under_wine();
#endif

  /* One line of reading per figure. */
  printf("How to read it:\n");
  printf("- event: woke %.3f ms after the write, %.1f ms of CPU in 200 ms: it "
         "slept in the\n  kernel until the data came%s.\n", wake[0], used[0],
#ifdef _WIN32
         wine ? " (under Wine through a helper thread and\n  about 12 "
                "wineserver requests; Wine counts CPU in 10 ms steps)"
              : " (through a helper thread)"
#else
         ""
#endif
  );
  printf("- sleep1: checks, sleeps 1 ms, checks again; a 1 ms sleep lasts "
         "%.2f ms here,\n  so a wake-up waits for the end of the current sleep "
         "(%.3f ms this time,\n  with the system's scheduling), and every "
         "check costs CPU (%.1f ms).\n  %s\n", one_ms,
         wake[1], used[1],
#ifdef _WIN32
         wine ? "Under Wine Sleep(1) is that short; on Windows it waits "
                "for the next timer\n  tick, 15.6 ms by default."
              : "Windows' Sleep(1) waits for the next timer tick."
#else
         "On Windows a Sleep(1) waits for the next timer tick, 15.6 ms "
         "by default."
#endif
  );
  printf("- yield: never sleeps, so it wakes at once (%.3f ms) and takes all "
         "the CPU it\n  is given while it waits (%.1f ms of CPU in 200 ms "
         "here: a busy wait)%s.\n", wake[2], used[2],
#ifdef _WIN32
         wine ? ";\n  under Wine each check also waits for the wineserver, "
                "whose CPU is not counted\n  here, and Wine counts CPU in "
                "10 ms steps" : ""
#else
         ""
#endif
  );
#ifdef _WIN32
  if (wine && wake[1] < wake[0])
    printf("- sleep1 woke sooner than event here: under Wine a Sleep(1) "
           "lasts only %.2f ms,\n  while event's wake-up passes a helper "
           "thread and about 12 wineserver\n  requests; on Windows sleep1 "
           "would wait up to a 15.6 ms tick.\n", one_ms);
#endif
  return 0;
}
