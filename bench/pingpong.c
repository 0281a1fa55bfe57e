/* SPDX-License-Identifier: MIT */
/* Scenario 4: wake-up latency. One byte goes back and forth between two
 * processes, over a pair of pipes or a loopback TCP connection, and each
 * side waits for it with the strategy under test before reading it
 * (`blocking`: a plain blocking read on both sides, the floor). Reports
 * round trips per second and the median and 99th percentile round trip.
 *
 *   pingpong [--transport pipe|tcp] [--ms 400] [--reps 5]
 *            [--strategies all] [--csv FILE]
 *
 * --ms is the length of one measured phase; every repetition runs one
 * phase per strategy, in rotating order. The child learns the strategy from
 * the byte itself (its value is the strategy's index), so it follows the
 * parent's switch after one round trip, which is not counted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAX_REPS 32
#define MAX_SAMPLES 400000
#define WARMUP 20
#define QUIT 0xFF

struct link {
  int in, out, tcp;
};

static long link_read(const struct link *l, unsigned char *b) {
  return l->tcp ? bench_recv(l->in, b, 1) : bench_read(l->in, b, 1);
}

static long link_write(const struct link *l, const unsigned char *b) {
  return l->tcp ? bench_send(l->out, b, 1) : bench_write(l->out, b, 1);
}

/* The set strategy's set, one per process: the link's read end joins it
 * on the first wait with `set` (a round trip that is not counted: the
 * switch, or the child's first warm-up trip) and leaves it on the first
 * wait with another strategy, so that no other strategy runs beside a
 * registration (on Windows a parked read that would post to the set on
 * every wake-up). */
static anypoll_set *set;
static struct pollfd set_entry;

static void set_leave(void) {
  if (set != NULL && (int)set_entry.fd >= 0) {
    if (anypoll_set_del(set, (int)set_entry.fd) != 0)
      bench_die("anypoll_set_del");
    set_entry.fd = -1;
  }
}

/* Waits with s, then reads the byte. */
static int recv_byte(const struct bench_strategy *s, const struct link *l,
                     unsigned char *b) {
  if (s->backend == BENCH_SET) {
    if (set == NULL) {
      set = anypoll_set_new();
      if (set == NULL)
        bench_die("anypoll_set_new");
      set_entry.fd = -1;
    }
    if ((int)set_entry.fd < 0) {
      set_entry.fd = l->in;
      set_entry.events = POLLIN;
      if (anypoll_set_add(set, l->in, POLLIN, &set_entry) != 0)
        bench_die("anypoll_set_add");
    }
    bench_set_wait(set, &set_entry, 1);
    return link_read(l, b) == 1;
  }
  if (set != NULL)
    set_leave();
  struct pollfd p;
  memset(&p, 0, sizeof p);
  p.fd = l->in;
  p.events = POLLIN;
  bench_wait(s, &p, 1);
  return link_read(l, b) == 1;
}

static int echo(int argc, char **argv) {
  struct link l;
  const char *list;
  if (argc >= 6 && strcmp(argv[2], "echo") == 0) {
    l.in = bench_fd_from_token(argv[3]);
    l.out = bench_fd_from_token(argv[4]);
    l.tcp = 0;
    list = argv[5];
  } else if (argc >= 5 && strcmp(argv[2], "echo-tcp") == 0) {
    l.in = l.out = bench_tcp_connect(atoi(argv[3]));
    l.tcp = 1;
    list = argv[4];
  } else {
    return 2;
  }
  struct bench_strategy st[BENCH_MAX_STRATEGIES];
  int ns = bench_strategies(list, st);
  struct bench_strategy blocking = { "blocking", BENCH_BLOCKING };
  const struct bench_strategy *cur = &blocking;
  unsigned char b;
  while (recv_byte(cur, &l, &b) && b != QUIT) {
    if (b < ns)
      cur = &st[b];
    if (link_write(&l, &b) != 1)
      return 3;
  }
  set_leave();
  return 0;
}

struct phase {
  double rate, p50, p99;
};

static double *lat;

static struct phase run_phase(const struct bench_strategy *s, int index,
                              const struct link *l, double seconds) {
  unsigned char b = (unsigned char)index, got;
  /* The switch: the child waits for this byte the old way. */
  if (link_write(l, &b) != 1 || !recv_byte(s, l, &got) || got != b)
    bench_die("ping-pong switch");
  int n = 0;
  double start = 0, t = bench_now();
  for (int i = 0;; i++) {
    if (i == WARMUP)
      start = t;
    if (link_write(l, &b) != 1 || !recv_byte(s, l, &got) || got != b)
      bench_die("ping-pong");
    double t2 = bench_now();
    if (i >= WARMUP)
      lat[n++] = t2 - t;
    t = t2;
    if (i >= WARMUP && (t - start >= seconds || n == MAX_SAMPLES))
      break;
  }
  struct phase ph;
  ph.rate = n / (t - start);
  ph.p50 = bench_percentile(lat, n, 0.50) * 1e6;
  ph.p99 = bench_percentile(lat, n, 0.99) * 1e6;
  return ph;
}

int main(int argc, char **argv) {
  bench_init(argc, argv);
  if (argc > 2 && strcmp(argv[1], "--child") == 0)
    return echo(argc, argv);
  const char *transport = bench_arg(argc, argv, "--transport", "pipe");
  double seconds = bench_arg_num(argc, argv, "--ms", 400) / 1e3;
  int reps = (int)bench_arg_num(argc, argv, "--reps", 5);
  const char *list = bench_arg(argc, argv, "--strategies", "all");
  /* "all" here also takes the watch set, which this program supports. */
  if (strcmp(list, "all") == 0)
    list = BENCH_ALL ",set";
  bench_csv_open(bench_arg(argc, argv, "--csv", NULL));
  if (reps < 1 || reps > MAX_REPS)
    return 2;
  struct bench_strategy st[BENCH_MAX_STRATEGIES];
  int ns = bench_strategies(list, st);
  /* The child gets the list without the skipped names, in the same order,
   * so that indexes agree. */
  char names[256] = "";
  for (int i = 0; i < ns; i++) {
    size_t len = strlen(names);
    snprintf(names + len, sizeof names - len, "%s%s", i ? "," : "",
             st[i].name);
  }
  int blocking = -1;
  for (int i = 0; i < ns; i++)
    if (st[i].backend == BENCH_BLOCKING)
      blocking = i;

  struct link l;
  struct bench_child *c;
  int tofd[2], fromfd[2];
  if (strcmp(transport, "tcp") == 0) {
    int port;
    int lis = bench_tcp_listen(&port);
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    const char *args[2] = { ports, names };
    c = bench_spawn("echo-tcp", NULL, 0, 2, args);
    l.in = l.out = bench_tcp_accept(lis);
    l.tcp = 1;
    bench_sock_close(lis);
  } else {
    bench_pipe(tofd, 4096);
    bench_pipe(fromfd, 4096);
    const int pass[2] = { tofd[0], fromfd[1] };
    const char *args[1] = { names };
    c = bench_spawn("echo", pass, 2, 1, args);
    bench_close(tofd[0]);
    bench_close(fromfd[1]);
    l.in = fromfd[0];
    l.out = tofd[1];
    l.tcp = 0;
  }
  lat = malloc(MAX_SAMPLES * sizeof *lat);
  if (lat == NULL)
    bench_die("malloc");

  static struct phase res[BENCH_MAX_STRATEGIES][MAX_REPS];
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < ns; k++) {
      int i = (k + r) % ns;
      res[i][r] = run_phase(&st[i], i, &l, seconds);
    }
  set_leave();
  unsigned char q = QUIT;
  link_write(&l, &q);
  if (bench_child_wait(c) != 0)
    bench_die("echo child exit status");

  char scenario[32];
  snprintf(scenario, sizeof scenario, "s4-%s", transport);
  printf("%s %s: one-byte ping-pong between two processes over %s, "
         "%d reps of %.0f ms (medians)\n", BENCH_PLATFORM, scenario,
         transport, reps, seconds * 1e3);
  printf("%-9s %12s %10s %10s %10s\n", "strategy", "round trip/s", "x block",
         "p50 us", "p99 us");
  for (int i = 0; i < ns; i++) {
    double rate[MAX_REPS], p50[MAX_REPS], p99[MAX_REPS], ratio[MAX_REPS];
    for (int r = 0; r < reps; r++) {
      rate[r] = res[i][r].rate;
      p50[r] = res[i][r].p50;
      p99[r] = res[i][r].p99;
      /* As a time ratio: how many times longer a round trip takes. */
      ratio[r] = blocking >= 0 ? res[blocking][r].rate / res[i][r].rate : NAN;
    }
    double x = blocking >= 0 ? bench_median(ratio, reps) : NAN;
    double mr = bench_median(rate, reps);
    double m50 = bench_median(p50, reps), m99 = bench_median(p99, reps);
    printf("%-9s %12.0f %10.2f %10.1f %10.1f\n", st[i].name, mr, x, m50, m99);
    bench_csv_row(scenario, st[i].name, 1, "round_trips_per_s", mr, x, reps);
    bench_csv_row(scenario, st[i].name, 1, "p50_us", m50, NAN, reps);
    bench_csv_row(scenario, st[i].name, 1, "p99_us", m99, NAN, reps);
  }
  if (bench_skipped()[0])
    printf("skipped (not in this build): %s\n", bench_skipped());
  bench_csv_close();
  free(lat);
  return 0;
}
