/* What a child process started by tp_child_start does, and the stream
 * generator that producers (threads or processes) and consumers share. */
#include <stdint.h>
#include <string.h>

#include "test.h"

unsigned long long tp_rand(unsigned long long *state) {
  /* xorshift64*: enough for sizes and pauses, and identical everywhere. */
  unsigned long long x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 2685821657736338717ULL;
}

unsigned char tp_stream_byte(unsigned long long seed, unsigned long long pos) {
  /* splitmix64 finaliser over (seed, pos): neighbouring positions differ,
   * so a shifted or repeated chunk cannot match by accident. */
  unsigned long long z = seed * 0x9E3779B97F4A7C15ULL + pos;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return (unsigned char)(z ^ (z >> 31));
}

int tp_write_all(int fd, const void *buf, size_t len) {
  const unsigned char *p = buf;
  while (len > 0) {
    long n = tp_write(fd, p, len);
    if (n <= 0)
      return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static void park_forever(void) {
  for (;;)
    tp_sleep_ms(1000);
}

/* Roles:
 *   hold          writes "r" to out, then sleeps until killed;
 *   tcp PORT      connects to the loopback PORT, sends "r" on the socket and
 *                 writes "r" to out, then sleeps until killed;
 *   bytes SEED N  writes N chunks of stream SEED to out (1..2048 bytes,
 *                 with random pauses), then exits. */
int tp_child_run(const char *role, const char *arg, int out_fd) {
  if (strcmp(role, "hold") == 0) {
    if (tp_write(out_fd, "r", 1) != 1)
      return 3;
    park_forever();
  }
  if (strcmp(role, "tcp") == 0) {
    int s = tp_tcp_connect_nb(atoi(arg));
    struct pollfd p;
    tp_pfd(&p, s, POLLOUT);
    if (anypoll_poll(&p, 1, 10000) != 1 || p.revents != POLLOUT)
      return 4;
    tp_socket_set_nonblocking(s, 0);
    if (tp_send(s, "r", 1) != 1 || tp_write(out_fd, "r", 1) != 1)
      return 5;
    park_forever();
  }
  if (strcmp(role, "bytes") == 0) {
    unsigned long long seed = 0, chunks = 0;
    if (sscanf(arg, "%llu %llu", &seed, &chunks) != 2)
      return 6;
    unsigned long long rng = seed * 2 + 1, pos = 0;
    unsigned char buf[2048];
    for (unsigned long long c = 0; c < chunks; c++) {
      size_t len = 1 + (size_t)(tp_rand(&rng) % sizeof buf);
      for (size_t i = 0; i < len; i++)
        buf[i] = tp_stream_byte(seed, pos + i);
      if (tp_write_all(out_fd, buf, len) != 0)
        return 7;
      pos += len;
      if (tp_rand(&rng) % 64 == 0)
        tp_sleep_ms(1);
    }
    return 0;
  }
  return 2;
}
