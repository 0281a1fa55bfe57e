/* SPDX-License-Identifier: MIT */
/* A program outside the anypoll tree, built against an installed anypoll
 * (through pkg-config or find_package) or against the one-file release in
 * dist/. It checks that the header and the library linked in agree and that
 * the library behaves (anypoll_poll and the watch set), and prints
 * "consumer ok VERSION". */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* pipe, close under -std=c11 */
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef CONSUMER_DIST
#  include "anypoll.h"
#else
#  include <anypoll/poll.h> /* the drop-in header, which includes anypoll.h */
#endif

#ifdef _WIN32
#  include <fcntl.h>
#  include <io.h>
#  define make_pipe(p) _pipe((p), 4096, _O_BINARY)
#  define write_fd(fd, s, n) _write((fd), (s), (n))
#  define read_fd(fd, b, n) _read((fd), (b), (n))
#  define close_fd _close
#else
#  include <unistd.h>
#  define make_pipe(p) pipe(p)
#  define write_fd write
#  define read_fd read
#  define close_fd close
#endif

static int failures;

static void check(int ok, const char *what, long got) {
  if (!ok) {
    printf("FAILED: %s (got %ld)\n", what, got);
    failures++;
  }
}

int main(void) {
  check(strcmp(anypoll_version(), ANYPOLL_VERSION_STRING) == 0,
        "anypoll_version() == ANYPOLL_VERSION_STRING", 0);
  check(strcmp(anypoll_backend_name(ANYPOLL_BACKEND_DEFAULT), "default") == 0,
        "anypoll_backend_name(DEFAULT) is \"default\"", 0);
  errno = 0;
  int r = anypoll_backend_from_name("no-such-backend");
  check(r == -1 && errno == EINVAL, "unknown backend name: -1, EINVAL", r);

  int p[2];
  if (make_pipe(p) != 0) {
    perror("pipe");
    return 1;
  }
  struct pollfd fd = { 0 };
  fd.fd = p[0];
  fd.events = POLLIN;

  r = anypoll_poll(&fd, 1, 0);
  check(r == 0 && fd.revents == 0, "empty pipe, timeout 0: 0", r);
  r = anypoll_poll(&fd, 1, 30);
  check(r == 0 && fd.revents == 0, "empty pipe, timeout 30 ms: 0", r);

#ifdef CONSUMER_POLL_MACRO
  /* The drop-in names: poll() is anypoll_poll on Windows. */
  nfds_t one = 1;
  r = poll(&fd, one, 0);
  check(r == 0 && fd.revents == 0, "poll(), empty pipe: 0", r);
#endif

  check(write_fd(p[1], "x", 1) == 1, "write 1 byte", 0);
  r = anypoll_poll(&fd, 1, -1);
  check(r == 1 && fd.revents == POLLIN, "pipe with data: 1, POLLIN", fd.revents);

  char c;
  check(read_fd(p[0], &c, 1) == 1 && c == 'x', "read the byte back", 0);

  /* The watch set on the same pipe: every one of its source files must be
   * in the build that made this library (a missing one fails the link). */
  anypoll_set *set = anypoll_set_new();
  check(set != NULL, "anypoll_set_new() != NULL", 0);
  if (set != NULL) {
    static int tag;
    struct anypoll_event ev[2];
    r = anypoll_set_add(set, p[0], POLLIN, &tag);
    check(r == 0, "anypoll_set_add: 0", r);
    r = anypoll_set_wait(set, ev, 2, 0);
    check(r == 0, "set, empty pipe, timeout 0: 0", r);
    check(write_fd(p[1], "y", 1) == 1, "write 1 byte", 0);
    r = anypoll_set_wait(set, ev, 2, -1);
    check(r == 1 && ev[0].fd == p[0] && ev[0].events == POLLIN &&
              ev[0].data == &tag,
          "set, pipe with data: 1, POLLIN, its data", r);
    /* Deleted before the pipe is closed, as the header asks. */
    r = anypoll_set_del(set, p[0]);
    check(r == 0, "anypoll_set_del: 0", r);
    r = anypoll_set_free(set);
    check(r == 0, "anypoll_set_free: 0", r);
    check(read_fd(p[0], &c, 1) == 1 && c == 'y', "read the byte back", 0);
  }
  close_fd(p[1]);
  r = anypoll_poll(&fd, 1, -1);
  check(r == 1 && fd.revents == POLLHUP, "writer closed: 1, POLLHUP", fd.revents);
  close_fd(p[0]);

  if (failures != 0)
    return 1;
  printf("consumer ok %s\n", anypoll_version());
  return 0;
}
