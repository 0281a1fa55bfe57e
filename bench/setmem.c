/* SPDX-License-Identifier: MIT */
/* Memory and threads per registration in a watch set, with the process's
 * own counters: on Windows the committed private memory
 * (PROCESS_MEMORY_COUNTERS_EX.PrivateUsage from GetProcessMemoryInfo) and
 * the threads of this process in a Toolhelp32 snapshot; on Linux the
 * anonymous resident memory and the thread count of /proc/self/status.
 *
 *   setmem [--kind sync|anypoll|socket|console] [--n 1000] [--csv FILE]
 *
 * sync: C runtime _pipe pipes; anypoll: anypoll_pipe pipes; socket: UDP
 * sockets bound to the loopback address (one descriptor each); console:
 * descriptors duplicated from the console input (on Windows CONIN$, which
 * under Wine exists only on a terminal: run it under script(1)). Only the
 * read ends are registered. It prints the counters after opening the
 * descriptors and after registering them (and one wait with a zero
 * timeout, then a pause, so that everything a registration starts has
 * started), the difference per registration, and the registering time. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#ifdef _WIN32
#  include <winsock2.h>
#  include <windows.h>
#  include <io.h>
#  include <psapi.h>
#  include <tlhelp32.h>
#else
#  include <arpa/inet.h>
#  include <netinet/in.h>
#  include <sys/socket.h>
#  include <unistd.h>
#endif

struct counters {
  double mem_kib; /* committed private memory (Windows), anonymous RSS */
  double walk_kib; /* Windows: the same summed over VirtualQuery's regions */
  long threads;
};

static struct counters sample(void) {
  struct counters c = { -1, -1, -1 };
#ifdef _WIN32
  /* Wine 8 leaves PrivateUsage at 0: the walk over the address space
   * (committed private regions, which include every thread's committed
   * stack and its TEB) is the figure that works on both. */
  c.walk_kib = 0;
  MEMORY_BASIC_INFORMATION mbi;
  for (char *a = NULL;
       VirtualQuery(a, &mbi, sizeof mbi) == sizeof mbi;
       a = (char *)mbi.BaseAddress + mbi.RegionSize) {
    if (mbi.State == MEM_COMMIT && mbi.Type == MEM_PRIVATE)
      c.walk_kib += (double)mbi.RegionSize / 1024;
    if ((char *)mbi.BaseAddress + mbi.RegionSize < a)
      break;
  }
  PROCESS_MEMORY_COUNTERS_EX pmc;
  memset(&pmc, 0, sizeof pmc);
  pmc.cb = sizeof pmc;
  if (GetProcessMemoryInfo(GetCurrentProcess(),
                           (PROCESS_MEMORY_COUNTERS *)&pmc, sizeof pmc))
    c.mem_kib = (double)pmc.PrivateUsage / 1024;
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  if (snap != INVALID_HANDLE_VALUE) {
    THREADENTRY32 te;
    te.dwSize = sizeof te;
    DWORD me = GetCurrentProcessId();
    c.threads = 0;
    for (BOOL ok = Thread32First(snap, &te); ok; ok = Thread32Next(snap, &te))
      if (te.th32OwnerProcessID == me)
        c.threads++;
    CloseHandle(snap);
  }
#else
  FILE *f = fopen("/proc/self/status", "r");
  if (f != NULL) {
    char line[256];
    while (fgets(line, sizeof line, f) != NULL) {
      if (strncmp(line, "RssAnon:", 8) == 0)
        c.mem_kib = atof(line + 8);
      if (strncmp(line, "Threads:", 8) == 0)
        c.threads = atol(line + 8);
    }
    fclose(f);
  }
#endif
  return c;
}

/* A UDP socket bound to 127.0.0.1, as a descriptor (on Windows wrapped
 * with _open_osfhandle, as the set expects); -1 on failure. */
static int udp_socket(void) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
#ifdef _WIN32
  SOCKET s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s == INVALID_SOCKET)
    return -1;
  if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
    closesocket(s);
    return -1;
  }
  int fd = _open_osfhandle((intptr_t)s, 0);
  if (fd < 0)
    closesocket(s);
  return fd;
#else
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
    close(s);
    return -1;
  }
  return s;
#endif
}

static int dup_fd(int fd) {
#ifdef _WIN32
  return _dup(fd);
#else
  return dup(fd);
#endif
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  const char *kind = bench_arg(argc, argv, "--kind", "sync");
  int n = (int)bench_arg_num(argc, argv, "--n", 1000);
  if (n < 1 || n > 100000) {
    fprintf(stderr, "setmem: --n 1..100000\n");
    return 2;
  }
  bench_raise_nofile(2L * n + 64);
  bench_csv_open(bench_arg(argc, argv, "--csv", NULL));
  int *fds = calloc((size_t)n, sizeof *fds);
  int *other = calloc((size_t)n, sizeof *other); /* write ends, or -1 */
  if (fds == NULL || other == NULL)
    bench_die("calloc");

  struct counters c0 = sample();
  int console = -1;
  for (int i = 0; i < n; i++) {
    int p[2] = { -1, -1 };
    other[i] = -1;
    if (strcmp(kind, "sync") == 0) {
      bench_pipe(p, 4096);
    } else if (strcmp(kind, "anypoll") == 0) {
      if (anypoll_pipe(p) != 0)
        bench_die("anypoll_pipe");
    } else if (strcmp(kind, "socket") == 0) {
      p[0] = udp_socket();
      if (p[0] < 0)
        bench_die("socket");
    } else if (strcmp(kind, "console") == 0) {
      if (console < 0) {
        console = bench_console();
        if (console < 0) {
          printf("%s setmem console: no console here (under Wine run it on "
                 "a terminal, e.g. under script(1))\n", BENCH_PLATFORM);
          return 3;
        }
        p[0] = console;
      } else {
        p[0] = dup_fd(console);
        if (p[0] < 0) {
          printf("%s setmem console: could duplicate only %d descriptors\n",
                 BENCH_PLATFORM, i);
          return 3;
        }
      }
    } else {
      fprintf(stderr, "setmem: --kind sync, anypoll, socket or console\n");
      return 2;
    }
    fds[i] = p[0];
    other[i] = p[1];
  }
  /* The set is made (and waited on once) before the second sample, so
   * that what a set costs once per process or per set (under Wine the
   * thread pool's threads behind its retry timer) is not counted as a
   * cost per registration. */
  anypoll_set *set = anypoll_set_new();
  if (set == NULL)
    bench_die("anypoll_set_new");
  struct anypoll_event ev[16];
  if (anypoll_set_wait(set, ev, 16, 0) != 0)
    bench_die("anypoll_set_wait (empty set)");
  bench_sleep_ms(500);
  struct counters c1 = sample();
  double t0 = bench_now();
  for (int i = 0; i < n; i++)
    if (anypoll_set_add(set, fds[i], POLLIN, NULL) != 0)
      bench_die("anypoll_set_add");
  double reg = bench_now() - t0;
  int ready = anypoll_set_wait(set, ev, 16, 0);
  bench_sleep_ms(500);
  struct counters c2 = sample();
  double t1 = bench_now();
  for (int i = 0; i < n; i++)
    if (anypoll_set_del(set, fds[i]) != 0)
      bench_die("anypoll_set_del");
  anypoll_set_free(set);
  double unreg = bench_now() - t1;
  bench_sleep_ms(500);
  struct counters c3 = sample();

  printf("%s setmem: %d idle %s descriptors (a wait with timeout 0 found %d "
         "ready)\n", BENCH_PLATFORM, n, kind, ready);
  printf("%-24s %14s %14s %8s\n", "", "memory KiB", "walk KiB", "threads");
  printf("%-24s %14.0f %14.0f %8ld\n", "at start", c0.mem_kib, c0.walk_kib,
         c0.threads);
  printf("%-24s %14.0f %14.0f %8ld\n", "opened, empty set", c1.mem_kib, c1.walk_kib,
         c1.threads);
  printf("%-24s %14.0f %14.0f %8ld\n", "registered", c2.mem_kib, c2.walk_kib,
         c2.threads);
  printf("%-24s %14.0f %14.0f %8ld\n", "deleted, set freed", c3.mem_kib,
         c3.walk_kib, c3.threads);
  double per_kib = (c2.mem_kib - c1.mem_kib) / n;
  double per_walk = (c2.walk_kib - c1.walk_kib) / n;
  double per_thr = (double)(c2.threads - c1.threads) / n;
  char walk[32] = "-";
  if (c2.walk_kib >= 0)
    snprintf(walk, sizeof walk, "%.2f KiB", per_walk);
  printf("per registration: %.2f KiB (walk: %s), %.3f threads; "
         "registering took %.3f s, deleting %.3f s\n", per_kib, walk,
         per_thr, reg, unreg);
  printf("(memory: %s)\n",
#ifdef _WIN32
         "PrivateUsage of GetProcessMemoryInfo; walk: committed private "
         "regions summed over VirtualQuery"
#else
         "RssAnon of /proc/self/status; no walk"
#endif
  );
  char scen[32];
  snprintf(scen, sizeof scen, "setmem-%s", kind);
  bench_csv_row(scen, "set", n, "kib_per_registration", per_kib, NAN, 1);
  if (c2.walk_kib >= 0)
    bench_csv_row(scen, "set", n, "walk_kib_per_registration", per_walk, NAN,
                  1);
  bench_csv_row(scen, "set", n, "threads_per_registration", per_thr, NAN, 1);
  bench_csv_row(scen, "set", n, "register_s", reg, NAN, 1);
  bench_csv_close();
  for (int i = 0; i < n; i++) {
    if (strcmp(kind, "console") == 0 && i > 0)
      bench_close(fds[i]);
    else if (strcmp(kind, "socket") == 0)
      bench_sock_close(fds[i]);
    else if (strcmp(kind, "console") != 0)
      bench_close(fds[i]);
    if (other[i] >= 0)
      bench_close(other[i]);
  }
  free(fds);
  free(other);
  return 0;
}
