/* SPDX-License-Identifier: MIT */
/* Run several commands at once, at most a few at a time, and collect each
 * one's output and exit status: what git's run_processes_parallel does
 * with a thread per child on Windows. Here one thread waits on every
 * child's output pipe and exit with one watch set, on POSIX and Windows
 * alike, with no helper thread.
 *
 *   run_parallel [-j N] "CMD ARGS" ...   runs each command (split at
 *                                        spaces), N at a time (default 4),
 *                                        and prints each one's output,
 *                                        in order, then its exit status
 *   run_parallel                         the same with six copies of this
 *                                        program as "--child I", which
 *                                        print a few lines, slower for the
 *                                        earlier ones, and exit with I */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anypoll.h"

#ifdef _WIN32
#  include <windows.h>
#endif

#define MAX_JOBS 64

struct job {
  char *argv[32];
  char *out;     /* everything the command wrote on its stdout */
  size_t len, cap;
  int pipe, proc; /* -1 once done with */
  int status;
};

/* The child of the demonstration: prints three lines, the earlier
 * children after a longer pause, so that they end in another order than
 * they started, and exits with its number. */
static int child_main(int i) {
  anypoll_poll(NULL, 0, (6 - i) * 40); /* a portable sleep */
  for (int k = 1; k <= 3; k++)
    printf("child %d: line %d\n", i, k);
  return i;
}

static int start(struct job *j, anypoll_set *set) {
  int stdio[3] = { ANYPOLL_STDIO_NULL, ANYPOLL_STDIO_PIPE,
                   ANYPOLL_STDIO_INHERIT };
  int pipes[3];
  if (anypoll_spawn(j->argv[0], j->argv, NULL, stdio, pipes, &j->proc) != 0) {
    perror(j->argv[0]);
    return -1;
  }
  j->pipe = pipes[1];
  /* Both point to the job; the event's fd tells the two apart. */
  if (anypoll_set_add(set, j->pipe, POLLIN, j) != 0 ||
      anypoll_set_add(set, j->proc, POLLIN, j) != 0) {
    perror("anypoll_set_add");
    return -1;
  }
  return 0;
}

/* Reads what the pipe has; returns 0 at its end. */
static int collect(struct job *j) {
  char buf[4096];
  int n = anypoll_read(j->pipe, buf, sizeof buf);
  if (n <= 0)
    return 0;
  if (j->len + (size_t)n > j->cap) {
    j->cap = (j->len + (size_t)n) * 2;
    j->out = realloc(j->out, j->cap);
    if (j->out == NULL)
      exit(1);
  }
  memcpy(j->out + j->len, buf, (size_t)n);
  j->len += (size_t)n;
  return 1;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--child") == 0)
    return child_main(atoi(argv[2]));
  static struct job jobs[MAX_JOBS];
  static char self[1024], numbers[MAX_JOBS][8];
  int njobs = 0, parallel = 4, first = 1;
  if (argc > 2 && strcmp(argv[1], "-j") == 0) {
    parallel = atoi(argv[2]);
    first = 3;
  }
  if (parallel < 1)
    parallel = 1;
  if (first >= argc) {
    /* This program again, by its full path. */
#ifdef _WIN32
    GetModuleFileNameA(NULL, self, sizeof self);
#else
    snprintf(self, sizeof self, "%s", argv[0]);
#endif
    for (; njobs < 6; njobs++) {
      snprintf(numbers[njobs], sizeof numbers[njobs], "%d", njobs);
      char **a = jobs[njobs].argv;
      a[0] = self;
      a[1] = "--child";
      a[2] = numbers[njobs];
      a[3] = NULL;
    }
  }
  for (int i = first; i < argc && njobs < MAX_JOBS; i++, njobs++) {
    int n = 0;
    for (char *w = strtok(argv[i], " "); w != NULL && n < 31;
         w = strtok(NULL, " "))
      jobs[njobs].argv[n++] = w;
    jobs[njobs].argv[n] = NULL;
    if (n == 0)
      njobs--;
  }

  anypoll_set *set = anypoll_set_new();
  if (set == NULL) {
    perror("anypoll_set_new");
    return 1;
  }
  int next = 0, running = 0, failed = 0;
  for (;;) {
    while (running < parallel && next < njobs) {
      if (start(&jobs[next], set) != 0) {
        jobs[next].pipe = jobs[next].proc = -1;
        jobs[next].status = 127;
        failed = 1;
      } else {
        running++;
      }
      next++;
    }
    if (running == 0)
      break;
    struct anypoll_event ev[16];
    int n = anypoll_set_wait(set, ev, 16, -1);
    if (n < 0) {
      perror("anypoll_set_wait");
      return 1;
    }
    for (int e = 0; e < n; e++) {
      struct job *j = ev[e].data;
      if (ev[e].fd == j->pipe) {
        if (!collect(j)) {
          anypoll_set_del(set, j->pipe);
          anypoll_close(j->pipe);
          j->pipe = -1;
        }
      } else {
        /* The exit can come before the last of the output: the job is
         * done once both have. */
        anypoll_proc_wait(j->proc, &j->status);
        anypoll_set_del(set, j->proc);
        anypoll_close(j->proc);
        j->proc = -1;
      }
      if (j->pipe < 0 && j->proc < 0)
        running--;
    }
  }
  anypoll_set_free(set);
  for (int i = 0; i < njobs; i++) {
    fwrite(jobs[i].out, 1, jobs[i].len, stdout);
    printf("job %d (%s): exit status %d\n", i, jobs[i].argv[0] == self
           ? "this program --child" : jobs[i].argv[0], jobs[i].status);
    free(jobs[i].out);
  }
  return failed;
}
