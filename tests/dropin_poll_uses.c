/* SPDX-License-Identifier: MIT */
/* The drop-in header's poll is a name, not only a call: on Windows it is
 * an object-like macro (as gnulib's replacement headers make it), so that
 * everything a program may do with POSIX's poll works: take its address,
 * keep it in a struct member that is itself named poll and call it through
 * that member, or name a data member poll. A function-like macro broke the
 * first two (`&poll` named nothing; `ops->poll(...)` became a member that
 * does not exist). */
#ifdef _WIN32
#  include <winsock2.h>
#  include <fcntl.h>
#  include <io.h>
#  define pipe(p) _pipe((p), 4096, _O_BINARY)
#  define write _write
#  define close _close
#else
#  include <unistd.h>
#endif
#include <anypoll/poll.h>
#include <stdio.h>

typedef int poll_fn(struct pollfd *, nfds_t, int);

/* A table of operations, as event loops keep their backends. */
struct poll_ops {
  const char *name;
  poll_fn *poll;
};

/* A data member of that name. */
struct poll_stats {
  int poll;
};

static int ready(poll_fn *fn, struct pollfd *fd) {
  fd->revents = 0x5a;
  return fn(fd, 1, 0) == 1 && fd->revents == POLLIN;
}

int dropin_poll_uses(void);

int dropin_poll_uses(void) {
  int p[2];
  if (pipe(p) != 0 || write(p[1], "x", 1) != 1)
    return 1;
  struct pollfd fd;
  fd.fd = p[0];
  fd.events = POLLIN;
  int failed = 0;

  poll_fn *address = &poll;
  if (!ready(address, &fd)) {
    fprintf(stderr, "&poll: revents %#x\n", fd.revents);
    failed = 1;
  }

  struct poll_ops table = { "anypoll", poll };
  const struct poll_ops *ops = &table;
  fd.revents = 0x5a;
  if (ops->poll(&fd, 1, 0) != 1 || fd.revents != POLLIN) {
    fprintf(stderr, "ops->poll: revents %#x\n", fd.revents);
    failed = 1;
  }

  struct poll_stats stats = { 0 };
  stats.poll += ready(table.poll, &fd);
  if (stats.poll != 1) {
    fprintf(stderr, "stats.poll: %d\n", stats.poll);
    failed = 1;
  }
  close(p[0]);
  close(p[1]);
  return failed;
}
