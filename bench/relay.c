/* SPDX-License-Identifier: MIT */
/* Scenarios 1, 2 and 6: a producer and a relay, as in git's upload-pack
 * relaying pack-objects' output (the seed's experiment).
 *
 * A child process does CPU work per chunk and writes each chunk to a pipe.
 * The parent waits on that pipe plus a second, idle pipe whose write end
 * the child holds open (as a child's stderr), reads what is there and
 * forwards it to the null device. It measures, from the child's first
 * chunk to end-of-file: wall time, its own CPU time and (under Wine) the
 * wineserver's CPU time.
 *
 *   relay [--mb 32] [--chunk 16384] [--work 40000] [--reps 5]
 *         [--strategies all] [--pipe-size 65536] [--scenario s1]
 *         [--read 65536] [--csv FILE]
 *
 * --work is the producer's CPU work per chunk, in iterations of a small
 * integer loop. Scenario 1 runs it pinned to one CPU (taskset -c 0, and the
 * wineserver as well), scenario 2 on two CPUs, scenario 6 with --work 0
 * and --read 4096: the producer writes 64 KiB at a time with no work and the
 * relay reads 4 KiB at a time, so the pipe stays full and every poll finds
 * data ready, which is the seed's "very fast local case". */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#ifdef _WIN32
#  include <windows.h>
#endif

#define MAX_READ 1048576
/* This program's path, for the "spawn" strategy's producer. */
static const char *relay_self;
#define MAX_REPS 64

/* The producer: `work` iterations of an LCG per chunk, stirred into the
 * chunk so that the compiler cannot drop them. */
static int produce_on(int data, int idle, double mb, long chunk, long work);

static int produce(int argc, char **argv) {
  if (argc < 8)
    return 2;
  int data = bench_fd_from_token(argv[3]);
  int idle = bench_fd_from_token(argv[4]);
  return produce_on(data, idle, atof(argv[5]), atol(argv[6]), atol(argv[7]));
}

/* Started by anypoll_spawn (strategy "spawn"): the data on stdout, stderr
 * the idle pipe. */
static int produce_spawned(int argc, char **argv) {
  if (argc < 6)
    return 2;
  return produce_on(1, 2, atof(argv[3]), atol(argv[4]), atol(argv[5]));
}

static int produce_on(int data, int idle, double mb, long chunk, long work) {
  unsigned char *buf = calloc(1, (size_t)chunk);
  if (buf == NULL)
    return 2;
  long long total = (long long)(mb * 1024 * 1024);
  uint64_t x = 88172645463325252ULL;
  /* One byte says "started", so that process start-up (slow under Wine)
   * stays out of the measurement. */
  if (bench_write(data, "R", 1) != 1)
    return 3;
  for (long long sent = 0; sent < total; sent += chunk) {
    for (long i = 0; i < work; i++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      buf[i & (chunk - 1)] ^= (unsigned char)(x >> 56);
    }
    for (long off = 0; off < chunk;) {
      long n = bench_write(data, buf + off, (size_t)(chunk - off));
      if (n <= 0)
        return 3;
      off += n;
    }
  }
  bench_close(data);
  bench_close(idle);
  free(buf);
  return 0;
}

struct sample {
  double wall, cpu, server;
  long long bytes, reads;
};

static struct sample run_once(const struct bench_strategy *s, double mb,
                              long chunk, long work, unsigned pipe_size,
                              int devnull, unsigned char *buf, long rsize) {
  int data[2], idle[2];
  int spawned = s->backend == BENCH_SPAWN;
  int aset = s->backend == BENCH_ASET || spawned;
  if (spawned) {
    data[1] = idle[1] = -1; /* the child's */
  } else if (aset) {
    /* anypoll_pipe's capacity is fixed (64 KiB, --pipe-size's default). */
    if (anypoll_pipe(data) != 0 || anypoll_pipe(idle) != 0)
      bench_die("anypoll_pipe");
  } else {
    bench_pipe(data, pipe_size);
    bench_pipe(idle, pipe_size);
  }
  char mbs[32], chunks[32], works[32];
  snprintf(mbs, sizeof mbs, "%g", mb);
  snprintf(chunks, sizeof chunks, "%ld", chunk);
  snprintf(works, sizeof works, "%ld", work);
  const int pass[2] = { data[1], idle[1] };
  const char *args[3] = { mbs, chunks, works };
  struct bench_child *c = NULL;
  int proc = -1;
  if (spawned) {
    char *argv[] = { (char *)relay_self, (char *)"--child", (char *)"spawned",
                     mbs, chunks, works, NULL };
    const int stdio[3] = { ANYPOLL_STDIO_NULL, ANYPOLL_STDIO_PIPE,
                           ANYPOLL_STDIO_PIPE };
    int pipes[3];
    if (anypoll_spawn(relay_self, argv, NULL, stdio, pipes, &proc) != 0)
      bench_die("anypoll_spawn");
    data[0] = pipes[1];
    idle[0] = pipes[2];
  } else {
    c = bench_spawn("produce", pass, 2, 3, args);
    bench_close(data[1]);
    bench_close(idle[1]);
  }

  char r;
  long (*rd)(int, void *, size_t) = aset ? bench_anypoll_read : bench_read;
  if (rd(data[0], &r, 1) != 1 || r != 'R')
    bench_die("producer start");
  struct sample out = { 0, 0, 0, 0, 0 };
  struct pollfd fds[2];
  memset(fds, 0, sizeof fds);
  fds[0].fd = data[0];
  fds[0].events = POLLIN;
  fds[1].fd = idle[0];
  fds[1].events = POLLIN;
  /* The set is registered once, before the clock starts, as a program
   * would at start-up. */
  anypoll_set *set = s->backend == BENCH_SET || aset ? bench_set_open(fds, 2)
                                                     : NULL;
  double t0 = bench_now(), c0 = bench_cpu_fine(), s0 = bench_server_cpu();
  for (;;) {
    if (set != NULL)
      bench_set_wait(set, fds, 2);
    else
      bench_wait(s, fds, 2);
    if (s->backend != BENCH_BLOCKING && fds[0].revents == 0) {
      /* Only the idle pipe fired. The producer closes it at its end, just
       * after the data pipe; a strategy that checks the entries one after
       * the other (yield, sleep1) can find the data pipe still open and,
       * a moment later in the same round, the idle pipe hung up. That is
       * the end of the run, not a wake-up for nothing: stop watching the
       * idle pipe, and the data pipe's end of file comes next. Anything
       * else on the idle pipe while the producer runs is a failure. */
      if (fds[1].revents == POLLHUP) {
        if (set != NULL && anypoll_set_del(set, (int)fds[1].fd) != 0)
          bench_die("anypoll_set_del");
        fds[1].fd = -1;
        continue;
      }
      fprintf(stderr, "relay: idle pipe reported %#x\n", fds[1].revents);
      exit(2);
    }
    long n = rd(data[0], buf, (size_t)rsize);
    out.reads++;
    if (n < 0)
      bench_die("read");
    if (n == 0)
      break;
    if (bench_write(devnull, buf, (size_t)n) != n)
      bench_die("write NUL");
    out.bytes += n;
  }
  out.wall = bench_now() - t0;
  out.cpu = bench_cpu_fine() - c0;
  double s1 = bench_server_cpu();
  out.server = s0 < 0 || s1 < 0 ? NAN : s1 - s0;
  if (set != NULL)
    bench_set_close(set, fds, 2);
  if (spawned) {
    int status = -1;
    if (anypoll_proc_wait(proc, &status) != 0 || status != 0 ||
        anypoll_close(proc) != 0)
      bench_die("producer exit status");
    anypoll_close(data[0]);
    anypoll_close(idle[0]);
    return out;
  }
  if (bench_child_wait(c) != 0)
    bench_die("producer exit status");
  bench_close(data[0]);
  bench_close(idle[0]);
  return out;
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
#ifdef _WIN32
  static char self[MAX_PATH];
  GetModuleFileNameA(NULL, self, sizeof self);
  relay_self = self;
#else
  relay_self = argv[0];
#endif
  if (argc > 2 && strcmp(argv[1], "--child") == 0)
    return strcmp(argv[2], "spawned") == 0 ? produce_spawned(argc, argv)
                                           : produce(argc, argv);

  double mb = bench_arg_num(argc, argv, "--mb", 32);
  long chunk = (long)bench_arg_num(argc, argv, "--chunk", 16384);
  long work = (long)bench_arg_num(argc, argv, "--work", 40000);
  int reps = (int)bench_arg_num(argc, argv, "--reps", 5);
  unsigned pipe_size = (unsigned)bench_arg_num(argc, argv, "--pipe-size",
                                               65536);
  const char *scenario = bench_arg(argc, argv, "--scenario", "s1");
  long rsize = (long)bench_arg_num(argc, argv, "--read", 65536);
  bench_csv_open(bench_arg(argc, argv, "--csv", NULL));
  if ((chunk & (chunk - 1)) != 0 || reps < 1 || reps > MAX_REPS ||
      rsize < 1 || rsize > MAX_READ) {
    fprintf(stderr, "relay: --chunk must be a power of two, --reps 1..%d, "
            "--read 1..%d\n", MAX_REPS, MAX_READ);
    return 2;
  }
  struct bench_strategy st[BENCH_MAX_STRATEGIES];
  /* "all" here also takes the watch set, on _pipe pipes (set), on
   * anypoll_pipe pipes (aset) and on an anypoll_spawn child's (spawn),
   * which this program supports. */
  const char *list = bench_arg(argc, argv, "--strategies", "all");
  int ns = bench_strategies(strcmp(list, "all") == 0 ? BENCH_ALL ",set,aset,spawn"
                                                     : list,
                            st);
  int blocking = -1, sleep1 = -1;
  for (int i = 0; i < ns; i++) {
    if (st[i].backend == BENCH_BLOCKING)
      blocking = i;
    if (strcmp(st[i].name, "sleep1") == 0)
      sleep1 = i;
  }

  unsigned char *buf = malloc((size_t)rsize);
  int devnull = bench_devnull();
  static struct sample res[BENCH_MAX_STRATEGIES][MAX_REPS];
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < ns; k++) {
      int i = (k + r) % ns; /* rotate the order: no strategy always first */
      res[i][r] = run_once(&st[i], mb, chunk, work, pipe_size, devnull, buf,
                           rsize);
    }

  printf("%s %s: %g MiB in %ld-byte chunks, producer work %ld, reads of %ld, "
         "%d reps (medians)\n", BENCH_PLATFORM, scenario, mb, chunk, work,
         rsize, reps);
  printf("%-9s %9s %8s %8s %9s %12s %12s %8s\n", "strategy", "wall s",
         "x block", "x sleep1", "MB/s", "relay CPU", "server CPU", "reads");
  printf("%-9s %9s %8s %8s %9s %12s %12s %8s\n", "", "", "", "", "",
         "s per GB", "s per GB", "");
  for (int i = 0; i < ns; i++) {
    double wall[MAX_REPS], cpu[MAX_REPS], srv[MAX_REPS], ratio[MAX_REPS],
        cratio[MAX_REPS], reads[MAX_REPS], sratio[MAX_REPS];
    int nsrv = 0;
    for (int r = 0; r < reps; r++) {
      double gb = (double)res[i][r].bytes / 1e9;
      wall[r] = res[i][r].wall;
      reads[r] = (double)res[i][r].reads;
      cpu[r] = res[i][r].cpu / gb;
      if (!isnan(res[i][r].server))
        srv[nsrv++] = res[i][r].server / gb;
      /* Each repetition's ratio pairs runs made moments apart. */
      ratio[r] = blocking >= 0 ? res[i][r].wall / res[blocking][r].wall : NAN;
      sratio[r] = sleep1 >= 0 ? res[i][r].wall / res[sleep1][r].wall : NAN;
      cratio[r] = blocking >= 0 && res[blocking][r].cpu > 0
                      ? res[i][r].cpu / res[blocking][r].cpu
                      : NAN;
    }
    double w = bench_median(wall, reps);
    double x = blocking >= 0 ? bench_median(ratio, reps) : NAN;
    double c = bench_median(cpu, reps);
    double cx = blocking >= 0 ? bench_median(cratio, reps) : NAN;
    double sv = nsrv ? bench_median(srv, nsrv) : NAN;
    double mbps = (double)res[i][0].bytes / 1e6 / w;
    double rd = bench_median(reads, reps);
    double sx = sleep1 >= 0 ? bench_median(sratio, reps) : NAN;
    printf("%-9s %9.3f %8.3f %8.3f %9.1f %12.2f %12.2f %8.0f\n", st[i].name,
           w, x, sx, mbps, c, sv, rd);
    bench_csv_row(scenario, st[i].name, work, "wall_s", w, x, reps);
    bench_csv_row(scenario, st[i].name, work, "cpu_s_per_gb", c, cx, reps);
    bench_csv_row(scenario, st[i].name, work, "server_cpu_s_per_gb", sv, NAN,
                  nsrv);
    /* The same pairing against sleep1: scenario 6's target. */
    bench_csv_row(scenario, st[i].name, work, "wall_x_sleep1", sx, NAN, reps);
    /* Each read follows one wait (blocking: the read is the wait). */
    bench_csv_row(scenario, st[i].name, work, "reads", rd, NAN, reps);
  }
  if (bench_skipped()[0])
    printf("skipped (not in this build): %s\n", bench_skipped());
  bench_csv_close();
  free(buf);
  return 0;
}
