/* SPDX-License-Identifier: MIT */
/* The counting wrapper of make bench-git, linked into both git.exe builds
 * with -Wl,--wrap=poll: every poll() call git makes across object files
 * (upload-pack's among them) comes here first. It counts the calls and the
 * time spent inside them (QueryPerformanceCounter), and when the process
 * exits appends one line to the file named by BENCH_GIT_POLL_LOG:
 *
 *   <calls> <seconds inside poll> <user CPU s> <kernel CPU s> <command line>
 *
 * with the process's own CPU from GetProcessTimes. A process that never
 * polled writes nothing. The struct is opaque here: the wrapper passes the
 * arguments through unchanged, whichever poll.h the build has. */
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

int __real_poll(void *fds, unsigned long nfds, int timeout);

/* Plain counters: git polls from one thread per process (upload-pack's
 * main thread), and exit() reads them on that thread. */
static LONGLONG inside;
static unsigned long calls;

static double filetime_s(FILETIME t) {
  ULARGE_INTEGER u;
  u.LowPart = t.dwLowDateTime;
  u.HighPart = t.dwHighDateTime;
  return (double)u.QuadPart / 1e7;
}

static void report(void) {
  const char *path = getenv("BENCH_GIT_POLL_LOG");
  if (path == NULL)
    return;
  LARGE_INTEGER freq;
  QueryPerformanceFrequency(&freq);
  FILETIME created, exited, kernel, user;
  if (!GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel,
                       &user))
    return;
  FILE *f = fopen(path, "a");
  if (f == NULL)
    return;
  fprintf(f, "%lu %.6f %.6f %.6f %s\n", calls,
          (double)inside / (double)freq.QuadPart, filetime_s(user),
          filetime_s(kernel), GetCommandLineA());
  fclose(f);
}

int __wrap_poll(void *fds, unsigned long nfds, int timeout) {
  if (calls == 0)
    atexit(report);
  LARGE_INTEGER a, b;
  QueryPerformanceCounter(&a);
  int r = __real_poll(fds, nfds, timeout);
  QueryPerformanceCounter(&b);
  inside += b.QuadPart - a.QuadPart;
  calls++;
  return r;
}
