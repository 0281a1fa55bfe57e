/* SPDX-License-Identifier: MIT */
/* pollcat's command line: the options, --help's usage text, and main,
 * which picks the mode. The top of pollcat's portable files: it calls
 * net.c and child.c, which call relay.c, which calls poll.c, which calls
 * only common.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char usage_text[] =
    "usage: pollcat [options] connect HOST PORT\n"
    "       pollcat [options] listen [ADDR] PORT\n"
    "       pollcat [options] exec [--] CMD [ARGS...]\n"
    "       pollcat [options] -e CMD connect HOST PORT\n"
    "       pollcat [options] [-k] [-e CMD] listen [ADDR] PORT\n"
    "options:\n"
    "  -k          listen: keep listening, serve many clients at once (each\n"
    "              client's data to stdout, or each its own -e command)\n"
    "  -e CMD      relay the connection to CMD (split at blanks) instead of\n"
    "              stdin/stdout; with -k, one CMD per client\n"
    "  -4          IPv4 only\n"
    "  -6          IPv6 only (listen without ADDR: IPv6 clients only)\n"
    "  -q SECONDS  after end of stdin, quit once idle that long; -q 0 (as\n"
    "              nc -q 0): no limit, the reply is read to its end\n"
    "  -w SECONDS  connect/accept timeout, and quit (status 7) when idle\n"
    "              that long\n"
    "  -v          say what happens, on stderr\n"
    "  --stats     at exit, print the CPU and wall time of the relay, the\n"
    "              bytes moved, and the counts of polls, reads and writes\n"
    "  --help      this text\n"
    "  --version   the version of pollcat and anypoll\n"
    "exit status: 0 done, 2 usage, 3 bad port, 4 unknown host, 5 refused,\n"
    "  6 address in use, 7 timeout, 8 reader gone, 9 connection reset or\n"
    "  other network error,\n"
    "  10 local error, 126/127 command not runnable/not found; in exec mode\n"
    "  and with -e the child's status\n";

static double parse_seconds(const char *name, const char *s) {
  char *end;
  errno = 0;
  double v = s == NULL ? -1 : strtod(s, &end);
  if (s == NULL || end == s || *end != '\0' || errno != 0 || !isfinite(v) ||
      v < 0 || v > 1e6)
    usage_error("%s needs a number of seconds from 0 to 1000000", name);
  return v;
}

/* -e CMD: the command line split at blanks, as ncat -e does (no quoting;
 * a command with awkward arguments belongs in a script). */
static char **split_command(const char *line) {
  size_t len = strlen(line);
  char *copy = malloc(len + 1);
  char **argv = malloc((len / 2 + 2) * sizeof *argv);
  if (copy == NULL || argv == NULL) {
    say("out of memory");
    exit(PC_EXIT_IO);
  }
  memcpy(copy, line, len + 1);
  int n = 0;
  for (char *p = copy; *p != '\0';) {
    while (*p == ' ' || *p == '\t')
      *p++ = '\0';
    if (*p == '\0')
      break;
    argv[n++] = p;
    while (*p != '\0' && *p != ' ' && *p != '\t')
      p++;
  }
  argv[n] = NULL;
  if (n == 0)
    usage_error("-e needs a command%s", "");
  return argv;
}

/* A closed stdout where the data would go: pollcat stops before it
 * connects, listens or starts a child. Discarding the data instead (as a
 * null device would) would end a transfer that went nowhere with status 0,
 * which promises that every byte was delivered. */
static void need_stdout(const int closed[3]) {
  if (closed[1]) {
    say("stdout is closed: nowhere to write the data (>/dev/null discards "
        "it)");
    exit(PC_EXIT_IO);
  }
}

int main(int argc, char **argv) {
  int closed[3];
  pc_init(closed);
  char *pos[4];
  int npos = 0;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (npos > 0 && strcmp(pos[0], "exec") == 0) {
      if (strcmp(a, "--") == 0)
        i++;
      break; /* the command and its arguments */
    }
    if (a[0] != '-' || a[1] == '\0') {
      if (npos == 4)
        usage_error("too many arguments ('%s')", a);
      pos[npos++] = argv[i];
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("pollcat %s (anypoll %s)\n", ANYPOLL_VERSION_STRING,
             anypoll_version());
      return 0;
    } else if (strcmp(a, "-k") == 0) {
      opt.keep = 1;
    } else if (strcmp(a, "-e") == 0) {
      if (++i >= argc)
        usage_error("-e needs a command%s", "");
      opt.cmd = split_command(argv[i]);
    } else if (strcmp(a, "-4") == 0) {
      opt.family = AF_INET;
    } else if (strcmp(a, "-6") == 0) {
      opt.family = AF_INET6;
    } else if (strcmp(a, "-v") == 0) {
      opt.verbose = 1;
    } else if (strcmp(a, "--stats") == 0) {
      opt.stats = 1;
    } else if (strcmp(a, "-q") == 0) {
      opt.quit_after = parse_seconds("-q", argv[++i < argc ? i : argc]);
    } else if (strcmp(a, "-w") == 0) {
      opt.wait = parse_seconds("-w", argv[++i < argc ? i : argc]);
    } else if (strcmp(a, "--backend") == 0) {
      /* For the tests: show that the idle test catches a busy wait. */
      const char *name = ++i < argc ? argv[i] : "";
      opt.backend = anypoll_backend_from_name(name);
      if (opt.backend < 0)
        usage_error("unknown backend '%s'", name);
    } else if (strcmp(a, "--") == 0) {
      usage_error("'--' only goes before the command of exec%s", "");
    } else {
      usage_error("unknown option '%s'", a);
    }
  }
  if (npos == 0)
    usage_error("missing mode: connect, listen or exec%s", "");
  const char *mode = pos[0];
  if (strcmp(mode, "connect") == 0) {
    if (opt.keep)
      usage_error("-k goes with listen%s", "");
    if (npos != 3)
      usage_error("connect needs HOST and PORT%s", "");
    if (opt.cmd == NULL)
      need_stdout(closed);
    mode_connect(pos[1], pos[2]);
  } else if (strcmp(mode, "listen") == 0) {
    if (npos < 2 || npos > 3)
      usage_error("listen needs [ADDR] PORT%s", "");
    if (opt.cmd == NULL)
      need_stdout(closed);
    mode_listen(npos == 3 ? pos[1] : NULL, pos[npos - 1]);
  } else if (strcmp(mode, "exec") == 0) {
    if (opt.cmd != NULL || opt.keep)
      usage_error("exec takes no -e or -k%s", "");
    if (npos != 1)
      usage_error("exec takes no arguments before the command%s", "");
    if (i >= argc)
      usage_error("exec: missing command%s", "");
    need_stdout(closed);
    mode_exec(argv + i);
  }
  usage_error("unknown mode '%s'", mode);
  return PC_EXIT_USAGE;
}

