/* SPDX-License-Identifier: MIT */
/* pollcat's Windows layer: handles behind C runtime descriptors (which is
 * what anypoll waits on), Winsock's start and errors, and our ends of a
 * child's pipes. The sockets are win32_sock.c's (win32.h).
 *
 * Writes. Windows reports no write readiness for a pipe it did not make
 * for overlapped I/O, so a write to such a pipe may block however small it
 * is. Where that could deadlock the relay it must not happen: our end of a
 * child's stdin comes from anypoll_spawn, overlapped, and anypoll_write on
 * it returns once the write is issued; while that write is still pending
 * (the child is not reading) the end reports no POLLOUT, so the relay
 * waits in anypoll_poll instead of in a write, and never writes twice per
 * POLLOUT (a second write would wait for the first). Our own stdout and
 * stderr belong to whoever started us (their mode is shared with other
 * processes), so writes to them stay blocking: a slow reader there holds
 * the relay back, as any pipeline does, but cannot deadlock it, since
 * nothing we could do meanwhile would make that reader go faster. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <string.h>
#include <winsock2.h>
#include <windows.h>

#include "pollcat.h"
#include "win32.h"

#define CHUNK 65536

static DWORD last_error;
static int last_is_wsa; /* 2: a would-block outside connect */
/* The last failure was anypoll_read's or anypoll_write's: this errno. */
static int last_errno;

/* Records a Win32 or Winsock failure (kind: last_is_wsa's values). */
void pc_win_set_last(DWORD code, int kind) {
  last_error = code;
  last_is_wsa = kind;
  last_errno = 0;
}

static int fail_errno(void) {
  pc_win_set_last(0, 0);
  last_errno = errno;
  return -1;
}

static int fail_win(void) {
  pc_win_set_last(GetLastError(), 0);
  return -1;
}

int pc_win_fail_wsa(void) {
  pc_win_set_last((DWORD)WSAGetLastError(), 1);
  return -1;
}

/* The same code means "in progress" from connect, "try again" elsewhere. */
int pc_win_fail_wsa_io(void) {
  pc_win_fail_wsa();
  if (last_error == WSAEWOULDBLOCK)
    last_is_wsa = 2;
  return -1;
}

enum pc_err pc_error(void) {
  if (last_errno != 0)
    return last_errno == EPIPE ? PCE_PIPE : PCE_OTHER;
  switch (last_error) {
  case 0: return PCE_NONE;
  case WSAEWOULDBLOCK: return last_is_wsa == 2 ? PCE_AGAIN : PCE_INPROGRESS;
  case WSAECONNRESET:
  case WSAECONNABORTED:
  case WSAENETRESET:
    return PCE_RESET;
  case WSAESHUTDOWN:
  case ERROR_BROKEN_PIPE:
  case ERROR_NO_DATA: /* the pipe is being closed */
  case ERROR_PIPE_NOT_CONNECTED: /* Wine, for a Unix pipe without reader */
    return PCE_PIPE;
  case WSAECONNREFUSED: return PCE_REFUSED;
  case WSAEADDRINUSE: return PCE_INUSE;
  case WSAETIMEDOUT: return PCE_TIMEDOUT;
  default: return PCE_OTHER;
  }
}

/* Words for the errors a user of a network tool meets, the same as the
 * POSIX build prints (glibc's strerror and gai_strerror), so messages read
 * alike on both platforms. Wine has no message text for the WSA codes
 * (FormatMessage fails: "error 10049" was all it could say), and Windows'
 * own texts end in ". " and a line break. */
static const struct {
  DWORD code;
  const char *text;
} words[] = {
  { WSAECONNREFUSED, "connection refused" },
  { WSAEADDRINUSE, "address in use" },
  { WSAECONNRESET, "connection reset by peer" },
  { WSAETIMEDOUT, "connection timed out" },
  { WSAEADDRNOTAVAIL, "Cannot assign requested address" },
  { WSAENETUNREACH, "Network is unreachable" },
  { WSAEHOSTUNREACH, "No route to host" },
  { WSAENETDOWN, "Network is down" },
  { WSAECONNABORTED, "Software caused connection abort" },
  { WSAENETRESET, "Network dropped connection on reset" },
  { WSAEACCES, "Permission denied" },
  { WSAEAFNOSUPPORT, "Address family not supported by protocol" },
  { WSAEMFILE, "Too many open files" },
  { WSAENOBUFS, "No buffer space available" },
  { WSAESHUTDOWN, "Cannot send after transport endpoint shutdown" },
  { WSAENOTCONN, "Transport endpoint is not connected" },
  /* getaddrinfo's codes (EAI_NONAME is WSAHOST_NOT_FOUND, and so on). */
  { WSAHOST_NOT_FOUND, "Name or service not known" },
  { WSATRY_AGAIN, "Temporary failure in name resolution" },
  { WSANO_RECOVERY, "Non-recoverable failure in name resolution" },
  { WSANO_DATA, "No address associated with hostname" },
  { WSAEINVAL, "Invalid argument" },
  { WSATYPE_NOT_FOUND, "Servname not supported for ai_socktype" },
  { WSA_NOT_ENOUGH_MEMORY, "Memory allocation failure" },
};

static const char *text_of(DWORD code) {
  static char text[256];
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (words[i].code == code)
      return words[i].text;
  DWORD n = FormatMessageA(
      FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL,
      code, 0, text, sizeof text, NULL);
  while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' ||
                   text[n - 1] == '.' || text[n - 1] == ' '))
    text[--n] = '\0';
  if (n == 0)
    snprintf(text, sizeof text, "error %lu", (unsigned long)code);
  return text;
}

const char *pc_error_text(void) {
  return last_errno != 0 ? strerror(last_errno) : text_of(last_error);
}

/* mingw's gai_strerror formats the system's text, ". " and all. Wine 8
 * passes some of glibc's (negative) EAI codes through unchanged, -9 for an
 * address of the wrong family (-4/-6): those get glibc's words too. */
const char *pc_gai_text(int rc) {
  switch (rc) {
  case -2: return "Name or service not known";
  case -3: return "Temporary failure in name resolution";
  case -4: return "Non-recoverable failure in name resolution";
  case -5: return "No address associated with hostname";
  case -6: return "ai_family not supported";
  case -9: return "Address family for hostname not supported";
  default: return text_of((DWORD)rc);
  }
}

/* Whether the standard stream n is missing: no handle (-2, or NULL from a
 * parent that gave none), or a handle that is not open. */
static int std_missing(int n) {
  intptr_t h = _get_osfhandle(n);
  if (h == -1 || h == -2 || h == 0)
    return 1;
  SetLastError(NO_ERROR);
  return GetFileType((HANDLE)h) == FILE_TYPE_UNKNOWN &&
         GetLastError() != NO_ERROR;
}

void pc_init(int closed[3]) {
  static const DWORD std_id[3] = { STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
                                   STD_ERROR_HANDLE };
  /* The C runtime keeps descriptors 0-2 for missing standard handles, but
   * the null device in their place makes the relay's view of them simple:
   * an empty stdin, a stderr that discards. */
  for (int n = 0; n < 3; n++) {
    closed[n] = std_missing(n);
    if (!closed[n])
      continue;
    int fd = _open("NUL", (n == 0 ? _O_RDONLY : _O_WRONLY) | _O_BINARY);
    if (fd < 0 || (fd != n && _dup2(fd, n) != 0))
      exit(PC_EXIT_IO); /* stderr itself may be missing: no message */
    if (fd != n)
      _close(fd);
    SetStdHandle(std_id[n], (HANDLE)_get_osfhandle(n));
  }
  WSADATA wsa;
  if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0) {
    fputs("pollcat: cannot start Winsock\n", stderr);
    exit(PC_EXIT_IO);
  }
  /* Messages are written through stdio; data goes to the handles. */
  for (int i = 0; i < 3; i++)
    _setmode(i, _O_BINARY);
}

/* Reads and writes per round (relay.c, stream_pump). A file never waits
 * for another process, so its reads and writes may repeat; a pipe's reads
 * may repeat when PeekNamedPipe says how much is there (and never block
 * then). A write to our own stdout or stderr pipe blocks while the reader
 * is slow, one large write as much as many small ones, so it takes all
 * there is (see the top of this file). */
static void set_kind(struct pc_io *io, int is_std_out) {
  DWORD type = GetFileType(io->handle);
  if (type == FILE_TYPE_DISK) {
    io->max_write = SIZE_MAX;
    io->nonblocking = 1;
    io->nb_read = 1;
  } else if (type == FILE_TYPE_PIPE) {
    io->peek = 1;
    io->nb_read = 1;
    if (is_std_out) {
      io->max_write = SIZE_MAX;
      io->nonblocking = 1;
    }
  }
}

void pc_std_io(int n, struct pc_io *io) {
  memset(io, 0, sizeof *io);
  io->fd = -1;
  io->sock = PC_NO_SOCK;
  intptr_t h = _get_osfhandle(n);
  /* -2: the process was started without this standard handle. */
  if (h == -1 || h == -2 || h == 0)
    return;
  io->fd = n;
  io->kind = PC_IO_STREAM;
  io->handle = (HANDLE)h;
  io->max_write = CHUNK;
  set_kind(io, n != 0);
}

long pc_read(struct pc_io *io, void *buf, size_t len) {
  if (io->kind == PC_IO_SOCKET) {
    int n = recv((SOCKET)io->sock, buf, (int)len, 0);
    if (n >= 0)
      return n;
    return pc_win_fail_wsa_io();
  }
  if (io->peek) {
    /* After poll returns no helper read is pending on a synchronous pipe
     * (anypoll cancels it), so the peek does not wait behind one; on an
     * overlapped pipe (a child's) nothing waits behind a pending read. */
    DWORD avail = 0;
    if (PeekNamedPipe(io->handle, NULL, 0, NULL, &avail, NULL)) {
      if (avail == 0) {
        pc_win_set_last(WSAEWOULDBLOCK, 2); /* PCE_AGAIN */
        return -1;
      }
      if (len > avail)
        len = avail;
    } else if (GetLastError() == ERROR_BROKEN_PIPE) {
      return 0;
    } else {
      /* Wine's Unix pipes (a program started from a shell) cannot be
       * peeked: one blocking read per poll round, as for a console. */
      io->peek = 0;
      io->nb_read = 0;
    }
  }
  if (io->overlapped) {
    /* At most what the peek saw: returns at once. 0 at end of input. */
    int n = anypoll_read(io->fd, buf, (unsigned)len);
    return n >= 0 ? n : fail_errno();
  }
  DWORD got = 0;
  if (ReadFile(io->handle, buf, (DWORD)len, &got, NULL))
    return (long)got;
  DWORD e = GetLastError();
  /* The writer closed its end: the end of the input. */
  if (e == ERROR_BROKEN_PIPE || e == ERROR_HANDLE_EOF)
    return 0;
  return fail_win();
}

long pc_write(struct pc_io *io, const void *buf, size_t len) {
  if (io->kind == PC_IO_SOCKET) {
    int n = send((SOCKET)io->sock, buf, (int)len, 0);
    if (n >= 0)
      return n;
    if (WSAGetLastError() == WSAEWOULDBLOCK)
      return 0;
    return pc_win_fail_wsa();
  }
  if (io->overlapped) {
    /* Returns once issued: the write end reported POLLOUT, so no earlier
     * write of ours is pending for it to wait for. EPIPE once the child
     * has closed its stdin. */
    int n = anypoll_write(io->fd, buf, (unsigned)len);
    return n >= 0 ? n : fail_errno();
  }
  DWORD done = 0;
  if (WriteFile(io->handle, buf, (DWORD)len, &done, NULL))
    return (long)done;
  return fail_win();
}

void pc_shut(struct pc_io *io) {
  if (io->kind == PC_IO_SOCKET)
    shutdown((SOCKET)io->sock, SD_SEND);
  else
    pc_close(io);
}

void pc_close(struct pc_io *io) {
  /* Closes the handle too. anypoll_close, as our end of a child's stdin
   * may hold a write still pending, which must reach the child before its
   * end of input (anypoll_spawn keeps the end open until then). */
  if (io->fd >= 0)
    anypoll_close(io->fd);
  io->fd = -1;
  io->handle = NULL;
}

/* ---- Our ends of a child's pipes (anypoll_spawn) ----------------------- */

void pc_child_io(int n, int fd, struct pc_io *io) {
  memset(io, 0, sizeof *io);
  io->fd = fd;
  io->kind = PC_IO_STREAM;
  io->sock = PC_NO_SOCK;
  io->handle = (HANDLE)_get_osfhandle(fd);
  io->overlapped = 1;
  if (n == 0) {
    /* One write per POLLOUT, of all the buffer holds: it never blocks,
     * and the next one waits for it (pc_write). */
    io->max_write = SIZE_MAX;
  } else {
    /* Peeked first, so that reads never block and may repeat. */
    io->max_write = CHUNK;
    io->peek = 1;
    io->nb_read = 1;
  }
}

double pc_now_ms(void) {
  static LARGE_INTEGER freq;
  if (freq.QuadPart == 0)
    QueryPerformanceFrequency(&freq);
  LARGE_INTEGER t;
  QueryPerformanceCounter(&t);
  return (double)t.QuadPart * 1e3 / (double)freq.QuadPart;
}

double pc_cpu_ms(void) {
  FILETIME created, exited, kernel, user;
  if (!GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel,
                       &user))
    return 0;
  ULARGE_INTEGER k = { .LowPart = kernel.dwLowDateTime,
                       .HighPart = kernel.dwHighDateTime };
  ULARGE_INTEGER u = { .LowPart = user.dwLowDateTime,
                       .HighPart = user.dwHighDateTime };
  return (double)(k.QuadPart + u.QuadPart) / 1e4; /* 100 ns units */
}
