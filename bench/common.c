/* SPDX-License-Identifier: MIT */
/* What every benchmark program calls first and most: bench_die, the
 * strategies and the watch set as one, the command line. The rest of
 * common.h is split by what it depends on: the system calls per platform
 * (win32.c, posix.c), clocks and /proc's schedstat (clock.c), statistics
 * and CSV (stats.c). */
#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#  include <winsock2.h>
#  include <windows.h>
#endif

void bench_die(const char *what) {
#ifdef _WIN32
  fprintf(stderr, "bench: %s failed: errno %d, error %lu, wsa %d\n", what,
          errno, GetLastError(), WSAGetLastError());
#else
  fprintf(stderr, "bench: %s failed: %s\n", what, strerror(errno));
#endif
  exit(2);
}

/* ---- Strategies ----------------------------------------------------------- */

static char skipped[128];

const char *bench_skipped(void) {
  return skipped;
}

static int strategy_of(const char *name, struct bench_strategy *s) {
  s->name = name;
  if (strcmp(name, "blocking") == 0) {
    s->backend = BENCH_BLOCKING;
    return 1;
  }
  if (strcmp(name, "set") == 0) {
    s->backend = BENCH_SET;
    return 1;
  }
  if (strcmp(name, "aset") == 0) {
    s->backend = BENCH_ASET;
    return 1;
  }
  if (strcmp(name, "spawn") == 0) {
    s->backend = BENCH_SPAWN;
    return 1;
  }
  if (strcmp(name, "event") == 0) {
    /* What a program gets from anypoll_poll: the point of the library. */
    s->backend = ANYPOLL_BACKEND_DEFAULT;
    return 1;
  }
  /* "native" is the kernel's poll(); the others go by the library's own
   * names, so a backend missing from this build is reported missing. */
  const char *lib = strcmp(name, "native") == 0 ? "poll" : name;
  int b = anypoll_backend_from_name(lib);
  if (b < 0)
    return 0;
  s->backend = b;
  return 1;
}

int bench_strategies(const char *list, struct bench_strategy *out) {
  static const char all[] = BENCH_ALL;
  static char buf[256];
  snprintf(buf, sizeof buf, "%s", strcmp(list, "all") == 0 ? all : list);
  int n = 0;
  skipped[0] = 0;
  for (char *tok = strtok(buf, ","); tok != NULL && n < BENCH_MAX_STRATEGIES;
       tok = strtok(NULL, ",")) {
    if (strategy_of(tok, &out[n])) {
      n++;
    } else {
      fprintf(stderr, "bench: strategy '%s' is not available in this build: "
                      "skipped\n", tok);
      size_t len = strlen(skipped);
      snprintf(skipped + len, sizeof skipped - len, "%s%s", len ? " " : "",
               tok);
    }
  }
  return n;
}

int bench_wait(const struct bench_strategy *s, struct pollfd *fds, int n) {
  if (s->backend == BENCH_BLOCKING)
    return 1;
  if (s->backend == BENCH_SET || s->backend == BENCH_ASET) {
    fprintf(stderr, "bench: the set strategy needs bench_set_open\n");
    exit(2);
  }
  int r = anypoll_poll_with(s->backend, fds, (anypoll_nfds_t)n, -1);
  if (r < 0)
    bench_die("anypoll_poll_with");
  return r;
}

/* The same on every platform: anypoll_read is the portable call. */
long bench_anypoll_read(int fd, void *buf, size_t len) {
  return anypoll_read(fd, buf, (unsigned)len);
}

anypoll_set *bench_set_open(struct pollfd *fds, int n) {
  anypoll_set *set = anypoll_set_new();
  if (set == NULL)
    bench_die("anypoll_set_new");
  for (int i = 0; i < n; i++)
    if ((int)fds[i].fd >= 0 &&
        anypoll_set_add(set, (int)fds[i].fd, (unsigned)fds[i].events, &fds[i]) != 0)
      bench_die("anypoll_set_add");
  return set;
}

int bench_set_wait(anypoll_set *set, struct pollfd *fds, int n) {
  struct anypoll_event ev[16];
  for (int i = 0; i < n; i++)
    fds[i].revents = 0;
  int r = anypoll_set_wait(set, ev, 16, -1);
  if (r < 0)
    bench_die("anypoll_set_wait");
  for (int i = 0; i < r; i++)
    ((struct pollfd *)ev[i].data)->revents = (short)ev[i].events;
  return r;
}

void bench_set_close(anypoll_set *set, struct pollfd *fds, int n) {
  for (int i = 0; i < n; i++)
    if ((int)fds[i].fd >= 0 && anypoll_set_del(set, (int)fds[i].fd) != 0)
      bench_die("anypoll_set_del");
  if (anypoll_set_free(set) != 0)
    bench_die("anypoll_set_free");
}

/* ---- Command line ---------------------------------------------------------- */

const char *bench_arg(int argc, char **argv, const char *name,
                      const char *fallback) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0)
      return argv[i + 1];
  return fallback;
}

double bench_arg_num(int argc, char **argv, const char *name,
                     double fallback) {
  const char *v = bench_arg(argc, argv, name, NULL);
  return v == NULL ? fallback : atof(v);
}
