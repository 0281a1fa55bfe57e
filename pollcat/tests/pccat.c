/* SPDX-License-Identifier: MIT */
/* pccat: the cat-like child for pollcat's tests, built for both platforms
 * (Windows has no cat). Copies stdin to stdout with plain blocking reads
 * and writes, as an ordinary program does.
 *   --both      also copy everything to stderr
 *   --no-read   do not read stdin at all
 *   --exit N    exit with status N at the end
 *   --sleep MS  sleep MS milliseconds first (with --no-read: a child that
 *               lives on without reading its stdin)
 *   --args ...  print each further argument as [ARG] on its own line and
 *               exit (checks the command line pollcat built for us)
 *   --relay CMD ARGS  (Windows only, for bench/pollcat-throughput) run CMD
 *               with anonymous pipes for its stdin and stdout, copied by
 *               two threads with plain blocking ReadFile/WriteFile: the
 *               simplest relay there is, which shows what Windows pipes
 *               themselves cost (under Wine every pipe read and write is a
 *               wineserver request), the floor for pollcat's exec mode.
 *   --closed LIST CMD ARGS  run CMD without the standard streams named in
 *               LIST (digits 0, 1, 2: "02" is stdin and stderr), as a
 *               shell's <&- and >&- do on POSIX and a parent that gives no
 *               standard handle does on Windows; exit with CMD's status. */
#ifndef _WIN32
#  define _POSIX_C_SOURCE 200809L /* nanosleep */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#  include <fcntl.h>
#  include <io.h>
#  define read _read
#  define write _write
#else
#  include <unistd.h>
#endif

#ifdef _WIN32
#  include <windows.h>

#  include "winproc.h"

struct copy {
  HANDLE from, to;
};

static DWORD WINAPI copy_thread(void *arg) {
  struct copy *c = arg;
  static char buf[2][65536];
  char *b = buf[c->from == GetStdHandle(STD_INPUT_HANDLE) ? 0 : 1];
  DWORD got, put;
  while (ReadFile(c->from, b, 65536, &got, NULL) && got > 0) {
    for (DWORD off = 0; off < got; off += put)
      if (!WriteFile(c->to, b + off, got - off, &put, NULL))
        return 1;
  }
  CloseHandle(c->to);
  return 0;
}

/* The child's exit status, once it has exited. */
static int child_status(HANDLE process) {
  DWORD code = 0;
  WaitForSingleObject(process, INFINITE);
  GetExitCodeProcess(process, &code);
  CloseHandle(process);
  return (int)code;
}

static int relay(char **argv) {
  HANDLE in_r, in_w, out_r, out_w;
  if (!pc_win_pipe(&in_r, &in_w, 1) || !pc_win_pipe(&out_r, &out_w, 0))
    return 97;
  HANDLE process =
      pc_win_start(argv, in_r, out_w, GetStdHandle(STD_ERROR_HANDLE));
  if (process == NULL)
    return 96;
  CloseHandle(in_r);
  CloseHandle(out_w);
  struct copy in = { GetStdHandle(STD_INPUT_HANDLE), in_w };
  struct copy out = { out_r, GetStdHandle(STD_OUTPUT_HANDLE) };
  HANDLE t = CreateThread(NULL, 0, copy_thread, &in, 0, NULL);
  copy_thread(&out);
  WaitForSingleObject(t, INFINITE);
  return child_status(process);
}

/* A process started without a standard handle: NULL in its start-up
 * information, which is what the C runtime and GetStdHandle then report.
 * The others are ours, passed on (inheritable copies: the child inherits
 * only those). */
static int run_closed(const int closed[3], char **argv) {
  static const DWORD which[3] = { STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
                                  STD_ERROR_HANDLE };
  HANDLE h[3] = { NULL, NULL, NULL };
  for (int i = 0; i < 3; i++)
    if (!closed[i] &&
        !DuplicateHandle(GetCurrentProcess(), GetStdHandle(which[i]),
                         GetCurrentProcess(), &h[i], 0, TRUE,
                         DUPLICATE_SAME_ACCESS))
      return 95;
  HANDLE process = pc_win_start(argv, h[0], h[1], h[2]);
  for (int i = 0; i < 3; i++)
    if (h[i] != NULL)
      CloseHandle(h[i]);
  if (process == NULL)
    return 96;
  return child_status(process);
}
static void sleep_ms(int ms) { Sleep((DWORD)ms); }
#else
#  include <errno.h>
#  include <time.h>

static void sleep_ms(int ms) {
  struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
  while (nanosleep(&t, &t) != 0 && errno == EINTR)
    ;
}

static int relay(char **argv) {
  (void)argv;
  fputs("pccat: --relay is for Windows\n", stderr);
  return 99;
}

/* As a shell does for <&- >&- 2>&-: the descriptors closed, then exec. */
static int run_closed(const int closed[3], char **argv) {
  for (int i = 0; i < 3; i++)
    if (closed[i])
      close(i);
  execvp(argv[0], argv);
  return errno == ENOENT ? 127 : 126;
}
#endif

static int write_all(int fd, const char *p, long n) {
  while (n > 0) {
    long w = write(fd, p, (unsigned)n);
    if (w <= 0)
      return -1;
    p += w;
    n -= w;
  }
  return 0;
}

int main(int argc, char **argv) {
  int both = 0, no_read = 0, status = 0, sleep_for = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--both") == 0)
      both = 1;
    else if (strcmp(argv[i], "--no-read") == 0)
      no_read = 1;
    else if (strcmp(argv[i], "--relay") == 0 && i + 1 < argc)
      return relay(argv + i + 1);
    else if (strcmp(argv[i], "--closed") == 0 && i + 2 < argc) {
      int closed[3] = { 0, 0, 0 };
      for (const char *p = argv[i + 1]; *p != '\0'; p++)
        if (*p >= '0' && *p <= '2')
          closed[*p - '0'] = 1;
      return run_closed(closed, argv + i + 2);
    }
    else if (strcmp(argv[i], "--args") == 0) {
      for (int j = i + 1; j < argc; j++)
        printf("[%s]\n", argv[j]);
      return 0;
    } else if (strcmp(argv[i], "--exit") == 0 && i + 1 < argc)
      status = atoi(argv[++i]);
    else if (strcmp(argv[i], "--sleep") == 0 && i + 1 < argc)
      sleep_for = atoi(argv[++i]);
    else {
      fprintf(stderr, "pccat: bad argument '%s'\n", argv[i]);
      return 99;
    }
  }
#ifdef _WIN32
  _setmode(0, _O_BINARY);
  _setmode(1, _O_BINARY);
  _setmode(2, _O_BINARY);
#endif
  sleep_ms(sleep_for);
  static char buf[65536];
  while (!no_read) {
    long n = read(0, buf, sizeof buf);
    if (n <= 0)
      break;
    if (write_all(1, buf, n) != 0 || (both && write_all(2, buf, n) != 0))
      return 98;
  }
  return status;
}
