/* SPDX-License-Identifier: MIT */
/* A server that watches 1000 clients with a watch set (anypoll_set): each
 * client's connection is registered once, and each wait reports only the
 * connections with something to read. To stay self-contained the clients
 * are pipes made with anypoll_pipe, and the program plays them too: in
 * each round a few hundred clients send a request line, the server reads
 * and counts them, and at the end every client hangs up, which the server
 * sees as end of input and answers by deleting and closing the connection.
 *
 *   set_server [CLIENTS]      (1000 by default)
 *
 * Windows: a program built with mingw-w64 uses msvcrt, whose C runtime
 * holds at most 2048 descriptors; each client here takes two (both ends of
 * its pipe), so 1000 clients is about as many as fit. A server with real
 * sockets takes one descriptor per client.
 *
 * The pipes are read and written with anypoll_read and anypoll_write, which
 * are read() and write() on POSIX. On Windows an anypoll_pipe read end is
 * opened for overlapped I/O, so that the set waits on it with no thread,
 * and the C runtime's _read cannot read such a handle: anypoll_read can. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* read, write, close under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>

#include "anypoll.h"

#ifdef _WIN32
#  include <io.h>
#  define close_fd _close
static void raise_descriptor_limit(int need) { (void)need; }
#else
#  include <sys/resource.h>
#  include <unistd.h>
#  define close_fd close
/* 1000 pipes are 2000 descriptors, above the usual soft limit of 1024. */
static void raise_descriptor_limit(int need) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)need) {
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (rlim_t)need
                      ? (rlim_t)need
                      : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}
#endif

#define ROUNDS 3
#define BATCH 64 /* events taken per wait */

struct client {
  int id;
  int server_end; /* what the server watches */
  int client_end; /* what the client writes to */
  int requests;   /* request lines received */
  int open;
};

static void die(const char *what) {
  perror(what);
  exit(1);
}

/* Reads what one ready client sent. Returns the request lines read, or
 * -1 when the client hung up (the connection is then deleted and closed). */
static int serve(anypoll_set *set, struct client *c) {
  char buf[256];
  long n = anypoll_read(c->server_end, buf, sizeof buf);
  if (n < 0)
    die("read");
  if (n == 0) {
    /* Delete before close: the set's rule. */
    if (anypoll_set_del(set, c->server_end) != 0)
      die("anypoll_set_del");
    close_fd(c->server_end);
    c->open = 0;
    return -1;
  }
  int lines = 0;
  for (long i = 0; i < n; i++)
    lines += buf[i] == '\n';
  c->requests += lines;
  return lines;
}

int main(int argc, char **argv) {
  int count = argc > 1 ? atoi(argv[1]) : 1000;
  if (count < 1)
    return 2;
  raise_descriptor_limit(2 * count + 64);
  struct client *clients = calloc((size_t)count, sizeof *clients);
  anypoll_set *set = anypoll_set_new();
  if (clients == NULL || set == NULL)
    die("setting up");
  for (int i = 0; i < count; i++) {
    int p[2];
    if (anypoll_pipe(p) != 0)
      die("anypoll_pipe");
    clients[i].id = i;
    clients[i].server_end = p[0];
    clients[i].client_end = p[1];
    clients[i].open = 1;
    if (anypoll_set_add(set, p[0], POLLIN, &clients[i]) != 0)
      die("anypoll_set_add");
  }

  struct anypoll_event ev[BATCH];
  int served = 0, waits = 0;
  for (int round = 0; round < ROUNDS; round++) {
    /* A different third of the clients speaks in each round: each client
     * sends one request in all. */
    int sent = 0;
    for (int i = round; i < count; i += ROUNDS) {
      char line[64];
      int len = snprintf(line, sizeof line, "request %d from %d\n", round, i);
      if (anypoll_write(clients[i].client_end, line, (unsigned)len) != len)
        die("write");
      sent++;
    }
    for (int got = 0; got < sent;) {
      int n = anypoll_set_wait(set, ev, BATCH, 5000);
      if (n < 0)
        die("anypoll_set_wait");
      if (n == 0) {
        fprintf(stderr, "round %d: %d of %d requests, then nothing\n", round,
                got, sent);
        return 1;
      }
      waits++;
      for (int k = 0; k < n; k++) {
        int lines = serve(set, ev[k].data);
        if (lines > 0)
          got += lines;
      }
    }
    served += sent;
  }

  /* Every client hangs up; the server closes each connection it sees end. */
  for (int i = 0; i < count; i++)
    close_fd(clients[i].client_end);
  int open = count;
  while (open > 0) {
    int n = anypoll_set_wait(set, ev, BATCH, 5000);
    if (n <= 0) {
      fprintf(stderr, "%d connections never ended\n", open);
      return 1;
    }
    for (int k = 0; k < n; k++)
      if (serve(set, ev[k].data) < 0)
        open--;
  }
  int wrong = 0;
  for (int i = 0; i < count; i++)
    wrong += clients[i].requests != 1;
  printf("watched %d clients: %d requests served in %d rounds, %d clients "
         "hung up, %d miscounted\n",
         count, served, ROUNDS, count, wrong);
  fprintf(stderr, "(%d waits for the requests)\n", waits);
  anypoll_set_free(set);
  free(clients);
  return wrong == 0 ? 0 : 1;
}
