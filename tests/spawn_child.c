/* SPDX-License-Identifier: MIT */
/* The child that tests/test_spawn.c starts with anypoll_spawn, built for
 * both platforms. It uses nothing of anypoll: what it sees is what the
 * system gave it. argv[1] onwards is a list of steps, run in order:
 *   args          print every later argument (then stop), one line each:
 *                 "<length> <hex bytes>" (hex, so that spaces, quotes,
 *                 backslashes and empty arguments come back unambiguous),
 *                 then "end"
 *   cat           copy standard input to standard output until end of file
 *   write N       write N bytes of the pattern byte k = k % 251 to stdout
 *   out TEXT      write TEXT and a newline to standard output
 *   err TEXT      write TEXT and a newline to standard error
 *   env NAME      print NAME's value, or "(unset)", and a newline
 *   pid           print the process id and a newline
 *   isopen N      print "open N" or "closed N": whether descriptor N (on
 *                 Windows: handle value N) is open in this process
 *   readall       read standard input to its end, discard it, print the
 *                 count and a newline
 *   sleep MS      sleep MS milliseconds
 *   forever       sleep until killed (never reads standard input), at
 *                 most ten minutes, and on POSIX only while its parent
 *                 lives
 *   exit N        exit with status N
 * With no step left it exits 0. Unknown steps exit 99. */
#ifndef _WIN32
#  define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#  include <fcntl.h>
#  include <io.h>
#  include <windows.h>
/* No wildcard expansion of the command line: the arguments must come back
 * exactly as the parent passed them. */
int _dowildcard = 0;
#  define child_read _read
#  define child_write _write
#else
#  include <fcntl.h>
#  include <time.h>
#  include <unistd.h>
#  define child_read read
#  define child_write write
#endif

static void put(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    int n = (int)child_write(fd, p, (unsigned)(len > 65536 ? 65536 : len));
    if (n <= 0)
      exit(98);
    p += n;
    len -= (size_t)n;
  }
}

static void puts_fd(int fd, const char *s) { put(fd, s, strlen(s)); }

static void pause_ms(long ms) {
#ifdef _WIN32
  Sleep((DWORD)ms);
#else
  struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
  while (nanosleep(&t, &t) != 0)
    ;
#endif
}

static int is_open(long n) {
#ifdef _WIN32
  DWORD flags;
  return GetHandleInformation((HANDLE)(intptr_t)n, &flags) != 0;
#else
  return fcntl((int)n, F_GETFD) != -1;
#endif
}

int main(int argc, char **argv) {
#ifdef _WIN32
  _setmode(0, _O_BINARY);
  _setmode(1, _O_BINARY);
  _setmode(2, _O_BINARY);
#endif
  static char buf[65536];
  for (int i = 1; i < argc; i++) {
    const char *step = argv[i];
    const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(step, "args") == 0) {
      for (int j = i + 1; j < argc; j++) {
        size_t len = strlen(argv[j]);
        int n = snprintf(buf, sizeof buf, "%u ", (unsigned)len);
        for (size_t k = 0; k < len && n + 3 < (int)sizeof buf; k++)
          n += snprintf(buf + n, sizeof buf - (size_t)n, "%02x",
                        (unsigned char)argv[j][k]);
        buf[n++] = '\n';
        put(1, buf, (size_t)n);
      }
      puts_fd(1, "end\n");
      return 0;
    } else if (strcmp(step, "cat") == 0) {
      int n;
      while ((n = (int)child_read(0, buf, sizeof buf)) > 0)
        put(1, buf, (size_t)n);
      if (n < 0)
        return 97;
    } else if (strcmp(step, "readall") == 0) {
      long long total = 0;
      int n;
      while ((n = (int)child_read(0, buf, sizeof buf)) > 0)
        total += n;
      snprintf(buf, sizeof buf, "%lld\n", total);
      puts_fd(1, buf);
    } else if (strcmp(step, "forever") == 0) {
      /* Until killed; but not past the test that started it, should that
       * test fail before killing it: on POSIX it ends once its parent has
       * (it is then reparented), and in any case after ten minutes. */
#ifndef _WIN32
      pid_t parent = getppid();
#endif
      for (int t = 0; t < 3000; t++) {
        pause_ms(200);
#ifndef _WIN32
        if (getppid() != parent)
          return 96;
#endif
      }
      return 95;
    } else if (strcmp(step, "pid") == 0) {
#ifdef _WIN32
      snprintf(buf, sizeof buf, "%ld\n", (long)GetCurrentProcessId());
#else
      snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
#endif
      puts_fd(1, buf);
    } else if (arg == NULL) {
      return 99;
    } else if (strcmp(step, "write") == 0) {
      long long n = atoll(arg), k = 0;
      while (k < n) {
        size_t chunk = 0;
        while (chunk < sizeof buf && k < n)
          buf[chunk++] = (char)(k++ % 251);
        put(1, buf, chunk);
      }
      i++;
    } else if (strcmp(step, "out") == 0 || strcmp(step, "err") == 0) {
      int fd = step[0] == 'o' ? 1 : 2;
      puts_fd(fd, arg);
      puts_fd(fd, "\n");
      i++;
    } else if (strcmp(step, "env") == 0) {
      const char *v = getenv(arg);
      puts_fd(1, v != NULL ? v : "(unset)");
      puts_fd(1, "\n");
      i++;
    } else if (strcmp(step, "isopen") == 0) {
      snprintf(buf, sizeof buf, "%s %s\n",
               is_open(atol(arg)) ? "open" : "closed", arg);
      puts_fd(1, buf);
      i++;
    } else if (strcmp(step, "sleep") == 0) {
      pause_ms(atol(arg));
      i++;
    } else if (strcmp(step, "exit") == 0) {
      return atoi(arg);
    } else {
      return 99;
    }
  }
  return 0;
}
