/* SPDX-License-Identifier: MIT */
/* ANYPOLL_DEBUG=1: one report per wait on stderr (how each entry was
 * classified and armed, what woke the wait, how long the disarm took), the
 * first thing to ask for when a port hangs. The variable is read once, by
 * the one-time set-up; unset, each hook in the wait loop is one test of a
 * flag that never changes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "win.h"

ANYPOLL__INTERNAL int anypoll__debug_on;

void anypoll__debug_init(void) {
  /* GetEnvironmentVariableA, not getenv: the C runtime's copy of the
   * environment is not the process's in a DLL loaded into a program with
   * another C runtime. */
  char value[8];
  DWORD n = GetEnvironmentVariableA("ANYPOLL_DEBUG", value, sizeof value);
  anypoll__debug_on = n > 0 && n < sizeof value && !(n == 1 && value[0] == '0');
}

static const char *kind_name(int kind) {
  switch (kind) {
  case ANYPOLL_KIND_IGNORED:
    return "ignored";
  case ANYPOLL_KIND_INVALID:
    return "not open";
  case ANYPOLL_KIND_PIPE:
    return "pipe";
  case ANYPOLL_KIND_SOCKET:
    return "socket";
  case ANYPOLL_KIND_CONSOLE_IN:
    return "console input";
  case ANYPOLL_KIND_CONSOLE_OUT:
    return "console output";
  default:
    return "file or device";
  }
}

/* How the wait loop armed the entry, from what arming left in it. */
static const char *armed_name(const struct anypoll__item *it, short events) {
  switch (it->kind) {
  case ANYPOLL_KIND_SOCKET:
    return "the call's AFD poll";
  case ANYPOLL_KIND_CONSOLE_IN:
    if (it->recheck)
      return "re-checked on the back-off (a partial line is queued)";
    return (events & POLLIN) ? "wait on the console handle" : "nothing to wait for";
  case ANYPOLL_KIND_PIPE:
    if (it->recheck)
      return "re-checked on the back-off";
    if (!it->u.pipe.readable)
      return "nothing to wait for";
    return it->u.pipe.async ? "overlapped zero-byte read"
                            : "helper thread's zero-byte read";
  default:
    return "nothing to wait for";
  }
}

void anypoll__debug_armed(LONG64 call, const struct pollfd *fds,
                          const struct anypoll__item *items,
                          anypoll_nfds_t nfds, DWORD wait_ms) {
  int saved = errno; /* stderr's writes must not change the call's errno */
  fprintf(stderr, "anypoll[%lu] call %lld: %lu entries, waiting ",
          (unsigned long)GetCurrentThreadId(), (long long)call,
          (unsigned long)nfds);
  if (wait_ms == INFINITE)
    fprintf(stderr, "without a timeout\n");
  else
    fprintf(stderr, "up to %lu ms\n", (unsigned long)wait_ms);
  for (anypoll_nfds_t i = 0; i < nfds; i++) {
    const struct anypoll__item *it = &items[i];
    fprintf(stderr, "  [%lu] fd %lld events 0x%x: %s", (unsigned long)i,
            (long long)(intptr_t)fds[i].fd, (unsigned)(unsigned short)fds[i].events,
            kind_name(it->kind));
    if (it->kind == ANYPOLL_KIND_PIPE) {
      const struct anypoll__pipe_item *p = &it->u.pipe;
      fprintf(stderr, " (%s%s%s%s%s%s)", p->readable ? "read" : "",
              p->writable ? (p->readable ? "+write" : "write") : "",
              p->async ? ", overlapped" : ", synchronous",
              p->message ? ", message type" : "",
              p->no_wait ? ", read cannot block" : "",
              p->sole ? ", sole handle" : "");
    }
    fprintf(stderr, " -> %s\n", armed_name(it, fds[i].events));
  }
  errno = saved;
}

void anypoll__debug_woke(LONG64 call, DWORD r, DWORD handles,
                         long long waited_us, long long disarm_us) {
  int saved = errno;
  const char *why;
  char buf[48];
  if (r == WAIT_OBJECT_0)
    why = "the wake event (a pipe read or AFD poll ended)";
  else if (r > WAIT_OBJECT_0 && r < WAIT_OBJECT_0 + handles) {
    snprintf(buf, sizeof buf, "console input handle %lu",
             (unsigned long)(r - WAIT_OBJECT_0));
    why = buf;
  } else if (r == WAIT_TIMEOUT)
    why = "the timeout or the back-off";
  else if (r == WAIT_IO_COMPLETION)
    why = "a user APC (EINTR)";
  else
    why = "a failed wait";
  fprintf(stderr,
          "anypoll[%lu] call %lld: woke by %s after %lld us; disarm took "
          "%lld us\n",
          (unsigned long)GetCurrentThreadId(), (long long)call, why,
          waited_us, disarm_us);
  errno = saved;
}

void anypoll__debug_result(LONG64 call, const struct pollfd *fds,
                           anypoll_nfds_t nfds, int result) {
  int saved = errno;
  fprintf(stderr, "anypoll[%lu] call %lld: returns %d",
          (unsigned long)GetCurrentThreadId(), (long long)call, result);
  for (anypoll_nfds_t i = 0; i < nfds && result > 0; i++)
    if (fds[i].revents != 0)
      fprintf(stderr, " [%lu]=0x%x", (unsigned long)i,
              (unsigned)(unsigned short)fds[i].revents);
  fprintf(stderr, "\n");
  errno = saved;
}
