/* SPDX-License-Identifier: MIT */
/* The request counter's program (Windows only; bench/requests-count runs it
 * under Wine with the server's request trace on and does the counting).
 *
 *   requests [--k K] [--warmup W] [--settle-scale F] [SCENARIO...]
 *
 * Each scenario makes W waits to warm up (the pool's threads exist, the
 * sockets have their AFD state), then K measured waits between two marker
 * requests, then tears down. A marker is an OpenEventW on a name no object
 * has ("anypoll-requests:begin:SCENARIO:K:PID:CALLER:WRITER", and
 * ":end:SCENARIO"): a request the wineserver traces with its name in
 * clear, so the script can cut the trace at exactly those two points and
 * knows which thread ids are the caller (measured), the writer (excluded:
 * its requests are not the wait's cost) and the process (every other
 * thread of it is a helper).
 *
 * A woken wait is one anypoll_poll with an infinite timeout that the writer
 * ends by writing one byte, plus the caller's read of that byte, which is
 * what a program pays per wake-up. The writer writes only once the caller
 * has taken the previous byte and a few milliseconds have passed, so that
 * the caller is blocked in the wait when the byte arrives (the
 * hand-over is a shared counter, which makes no request). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <winsock2.h>
#include <windows.h>

#include "requests.h"

static const struct scenario scenarios[] = {
  { "blocking-pipe", BLOCKING_READ, 1, 0, 0, 0, 0 },
  { "pipe-1", POLL_WOKEN, 1, 0, 0, 0, 0 },
  { "pipe-2-1idle", POLL_WOKEN, 2, 0, 0, 0, 0 },
  { "blocking-recv", BLOCKING_RECV, 0, 1, 1, 0, 0 },
  { "socket-1", POLL_WOKEN, 0, 1, 1, 0, 0 },
  { "mixed-64", POLL_WOKEN, 32, 32, 0, 0, 0 },
  { "now-ready-pipe", POLL_NOW, 1, 0, 0, 1, 0 },
  { "now-idle-64", POLL_NOW, 32, 32, 0, 0, 0 },
  /* N idle registrations plus the one woken: the count must not grow
   * with N. */
  { "set-pipe-1", SET_WOKEN, 2, 0, 0, 0, 0 },
  { "set-pipe-64", SET_WOKEN, 65, 0, 0, 0, 0 },
  { "set-pipe-1000", SET_WOKEN, 1001, 0, 0, 0, 0 },
  { "set-pipe-aread-1", SET_AREAD, 2, 0, 0, 0, 0 },
  { "set-pipe-aread-1000", SET_AREAD, 1001, 0, 0, 0, 0 },
  { "set-anypipe-1", SET_ANYPIPE, 2, 0, 0, 0, 0 },
  { "set-anypipe-64", SET_ANYPIPE, 65, 0, 0, 0, 0 },
  { "set-anypipe-1000", SET_ANYPIPE, 1001, 0, 0, 0, 0 },
  { "set-anybuf-1", SET_ANYBUF, 2, 0, 0, 0, 0 },
  { "set-anybuf-1000", SET_ANYBUF, 1001, 0, 0, 0, 0 },
  { "set-twosets-1", SET_TWO, 2, 0, 0, 0, 0 },
  { "set-twosets-1000", SET_TWO, 1001, 0, 0, 0, 0 },
  { "set-anymix-1", SET_ANYMIX, 2, 0, 0, 0, 0 },
  { "set-anymix-1000", SET_ANYMIX, 1001, 0, 0, 0, 0 },
  /* The rule for pipes another process may share, for its cost: each
   * wait that sleeps reads every idle one and cancels the reads before it
   * returns (set_shared.c), up to 64 of them; at 64 idle (65 pipes) one is
   * peeked on the timer, so that count depends on how many 16 ms peeks
   * fall in a wait: not in the ceilings. (At 1000, 936 on the timer, each
   * wait's 1.5 s settling time costs some 10^5 requests of peeks.) */
  { "set-pipe-shared-1", SET_WOKEN, 2, 0, 0, 0, 1 },
  { "set-pipe-shared-64", SET_WOKEN, 65, 0, 0, 0, 1 },
  { "set-pipe-unshared-1", SET_WOKEN, 2, 0, 0, 0, 2 },
  { "set-pipe-unshared-64", SET_WOKEN, 65, 0, 0, 0, 2 },
  { "set-socket-1", SET_WOKEN, 0, 2, 1, 0, 0 },
  { "set-socket-64", SET_WOKEN, 0, 65, 1, 0, 0 },
  { "set-socket-1000", SET_WOKEN, 0, 1001, 1, 0, 0 },
  { "set-socket-assoc-1", SET_WOKEN, 0, 2, 1, 0, 3 },
  { "set-socket-assoc-64", SET_WOKEN, 0, 65, 1, 0, 3 },
  { "set-socket-assoc-1000", SET_WOKEN, 0, 1001, 1, 0, 3 },
  { "backoff-1", POLL_BACKOFF, 1, 0, 0, 0, 0 },
  { "backoff-64", POLL_BACKOFF, 64, 0, 0, 0, 0 },
};
#define SCENARIO_COUNT (int)(sizeof scenarios / sizeof scenarios[0])

int main(int argc, char **argv) {
  int k = 200, warmup = 20;
  int chosen[SCENARIO_COUNT] = { 0 };
  int any = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--k") == 0 && i + 1 < argc) {
      k = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
      warmup = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--settle-scale") == 0 && i + 1 < argc) {
      requests_settle_scale = atof(argv[++i]);
    } else if (strcmp(argv[i], "--list") == 0) {
      for (int j = 0; j < SCENARIO_COUNT; j++)
        printf("%s\n", scenarios[j].name);
      return 0;
    } else {
      int j = 0;
      while (j < SCENARIO_COUNT && strcmp(argv[i], scenarios[j].name) != 0)
        j++;
      if (j == SCENARIO_COUNT) {
        fprintf(stderr,
                "usage: requests [--k K] [--warmup W] [--settle-scale F] [--list] "
                "[SCENARIO...]\n");
        return 2;
      }
      chosen[j] = any = 1;
    }
  }
  if (k < 1 || warmup < 1) {
    fprintf(stderr, "requests: K and W must be at least 1\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  WSADATA wsa;
  if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0)
    requests_die("WSAStartup");
  for (int j = 0; j < SCENARIO_COUNT; j++)
    if (!any || chosen[j])
      requests_run(&scenarios[j], k, warmup);
  return 0;
}
