/* SPDX-License-Identifier: MIT */
/* Starting a Windows child process (winproc.h): the command line, the
 * pipes and CreateProcess, for pccat. */
#include <string.h>

#include "winproc.h"

/* Appends arg to the command line the way the Microsoft C runtime (and
 * CommandLineToArgvW) splits it again: quoted when it has blanks or
 * quotes or is empty; inside quotes, backslashes are literal except
 * before a quote, where each must be doubled and the quote escaped. */
static int append_arg(char *out, size_t cap, size_t *pos, const char *arg) {
#define PUT(c)                                                               \
  do {                                                                       \
    if (*pos + 1 >= cap)                                                     \
      return -1;                                                             \
    out[(*pos)++] = (c);                                                     \
  } while (0)
  if (*pos > 0)
    PUT(' ');
  if (arg[0] != '\0' && strpbrk(arg, " \t\n\v\"") == NULL) {
    for (const char *p = arg; *p != '\0'; p++)
      PUT(*p);
    out[*pos] = '\0';
    return 0;
  }
  PUT('"');
  for (const char *p = arg;; p++) {
    size_t backslashes = 0;
    while (*p == '\\') {
      backslashes++;
      p++;
    }
    if (*p == '\0') {
      /* Before the closing quote: all doubled. */
      for (size_t i = 0; i < 2 * backslashes; i++)
        PUT('\\');
      break;
    }
    if (*p == '"') {
      for (size_t i = 0; i < 2 * backslashes + 1; i++)
        PUT('\\');
    } else {
      for (size_t i = 0; i < backslashes; i++)
        PUT('\\');
    }
    PUT(*p);
  }
  PUT('"');
  out[*pos] = '\0';
  return 0;
#undef PUT
}

BOOL pc_win_pipe(HANDLE *read_end, HANDLE *write_end, int ours_writes) {
  SECURITY_ATTRIBUTES sa = { sizeof sa, NULL, TRUE };
  if (!CreatePipe(read_end, write_end, &sa, PC_CHILD_PIPE_SIZE))
    return FALSE;
  SetHandleInformation(ours_writes ? *write_end : *read_end,
                       HANDLE_FLAG_INHERIT, 0);
  return TRUE;
}

HANDLE pc_win_start(char **argv, HANDLE in, HANDLE out, HANDLE err) {
  /* CreateProcess's limit, in characters, including the terminator. */
  static char cmdline[32768];
  size_t pos = 0;
  cmdline[0] = '\0';
  for (char **a = argv; *a != NULL; a++) {
    if (append_arg(cmdline, sizeof cmdline, &pos, *a) != 0) {
      SetLastError(ERROR_FILENAME_EXCED_RANGE);
      return NULL;
    }
  }
  STARTUPINFOA si;
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = in;
  si.hStdOutput = out;
  si.hStdError = err;
  PROCESS_INFORMATION pi;
  if (!CreateProcessA(NULL, cmdline, NULL, NULL, TRUE, 0, NULL, NULL, &si,
                      &pi))
    return NULL;
  CloseHandle(pi.hThread);
  return pi.hProcess;
}
