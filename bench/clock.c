/* SPDX-License-Identifier: MIT */
/* The benchmarks' clocks, CPU time and threads (common.h): tests/portable.c's,
 * and the finer figures of Linux's /proc schedstat, which the Windows
 * build reads too, under Wine, through the Z: drive. */
#include "common.h"
#include "portable.h" /* tests/portable.h: threads, sleep, clocks */

#include <stdlib.h>

#ifdef _WIN32
#  include <windows.h>
#else
#  include <dirent.h>
#endif

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
