/* SPDX-License-Identifier: MIT */
/* poll() of the gnulib-ABI release (dist/compat/poll.c): the entry point
 * that src/compat/poll.h declares, on top of the library.
 *
 * This file is not compiled on its own: tools/amalgamate.py appends it to
 * the whole library (where anypoll_poll is a static function), and the
 * result is dist/compat/poll.c. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef _WIN32
/* Winsock's bit values, which the library uses, taken while Winsock's
 * macros are still defined: poll.h replaces them with gnulib's. */
enum {
  WS_RDNORM = POLLRDNORM,
  WS_RDBAND = POLLRDBAND,
  WS_PRI = POLLPRI,
  WS_WRNORM = POLLWRNORM,
  WS_WRBAND = POLLWRBAND,
  WS_ERR = POLLERR,
  WS_HUP = POLLHUP,
  WS_NVAL = POLLNVAL,
  WS_IN = POLLIN,
  WS_OUT = POLLOUT
};
#endif

#include "poll.h"

#ifdef _WIN32
/* From here on `struct pollfd` names the gnulib-ABI struct; the library's
 * own is Winsock's, reached through its typedef WSAPOLLFD. */

/* Up to this many entries are translated on the stack (16 bytes each), so
 * that the common call allocates nothing; git's upload-pack polls 2. */
#define COMPAT_STACK_FDS 64

static short events_to_winsock(short gl) {
  int ws = 0;
  if (gl & POLLIN)
    ws |= WS_IN;
  if (gl & POLLRDNORM)
    ws |= WS_RDNORM;
  if (gl & POLLRDBAND)
    ws |= WS_RDBAND;
  if (gl & POLLPRI)
    ws |= WS_PRI;
  if (gl & POLLOUT)
    ws |= WS_OUT;
  if (gl & POLLWRNORM)
    ws |= WS_WRNORM;
  if (gl & POLLWRBAND)
    ws |= WS_WRBAND;
  return (short)ws;
}

/* The library reports a readable descriptor with the Winsock bits the
 * caller asked for; here every such bit turns into each gnulib bit that
 * means it, limited to what the caller asked for, as Linux limits revents
 * to events (plus POLLERR, POLLHUP and POLLNVAL, always reported). */
static short revents_from_winsock(short ws, short gl_events) {
  int gl = 0;
  if (ws & WS_RDNORM)
    gl |= POLLIN | POLLRDNORM;
  if (ws & WS_RDBAND)
    gl |= POLLIN | POLLRDBAND;
  if (ws & WS_PRI)
    gl |= POLLPRI;
  if (ws & WS_WRNORM)
    gl |= POLLOUT | POLLWRNORM;
  if (ws & WS_WRBAND)
    gl |= POLLWRBAND;
  gl &= gl_events;
  if (ws & WS_ERR)
    gl |= POLLERR;
  if (ws & WS_HUP)
    gl |= POLLHUP;
  if (ws & WS_NVAL)
    gl |= POLLNVAL;
  return (short)gl;
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
  /* The library's own checks, made before anything is translated or
   * allocated. */
  if (fds == NULL && nfds > 0) {
    errno = EFAULT;
    return -1;
  }
  if (nfds > ANYPOLL_MAX_NFDS) {
    errno = EINVAL;
    return -1;
  }
  WSAPOLLFD small[COMPAT_STACK_FDS];
  WSAPOLLFD *w = small;
  if (nfds > COMPAT_STACK_FDS) {
    w = malloc(nfds * sizeof *w);
    if (w == NULL) {
      errno = ENOMEM;
      return -1;
    }
  }
  for (nfds_t i = 0; i < nfds; i++) {
    /* Sign-extended: a negative descriptor stays negative, which the
     * library takes as "ignore this entry". */
    w[i].fd = (SOCKET)(intptr_t)fds[i].fd;
    w[i].events = events_to_winsock(fds[i].events);
    w[i].revents = 0;
  }
  int ret = anypoll_poll(w, nfds, timeout);
  if (ret >= 0) {
    /* Counted again: the translation is what the caller sees. */
    ret = 0;
    for (nfds_t i = 0; i < nfds; i++) {
      fds[i].revents = revents_from_winsock(w[i].revents, fds[i].events);
      ret += fds[i].revents != 0;
    }
  }
  if (w != small) {
    int saved = errno;
    free(w);
    errno = saved;
  }
  return ret;
}

#else /* !_WIN32 */

/* rpl_poll, through the header's macro. The system's struct pollfd is the
 * library's, so there is nothing to translate. */
int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
  return anypoll_poll(fds, nfds, timeout);
}

#endif /* _WIN32 */
