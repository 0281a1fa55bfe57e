/* SPDX-License-Identifier: MIT */
/* feed_stdin HOLD_MS =TEXT PROGRAM [ARGS...] (Windows only, for the tests):
 * runs PROGRAM with its stdin on a new Windows anonymous pipe, writes TEXT
 * into it ('|' stands for a newline), keeps the pipe open HOLD_MS ms more,
 * closes it and exits with PROGRAM's exit status.
 *
 * The example tests need it under Wine: a Unix pipe that Wine hands to a
 * Windows program as stdin is not a Windows pipe (PeekNamedPipe fails on it
 * with ERROR_NOT_SUPPORTED), so it would not show how the examples behave
 * on Windows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

int main(int argc, char **argv) {
  if (argc < 4 || argv[2][0] != '=') {
    fprintf(stderr, "usage: feed_stdin HOLD_MS =TEXT PROGRAM [ARGS...]\n");
    return 125;
  }
  /* The command line: every argument quoted (none of ours holds a quote). */
  char cmd[4096] = "";
  for (int i = 3; i < argc; i++) {
    size_t used = strlen(cmd);
    if (snprintf(cmd + used, sizeof cmd - used, "%s\"%s\"", i > 3 ? " " : "",
                 argv[i]) >= (int)(sizeof cmd - used))
      return 125;
  }
  SECURITY_ATTRIBUTES inherit = { sizeof inherit, NULL, TRUE };
  HANDLE rd, wr;
  if (!CreatePipe(&rd, &wr, &inherit, 0))
    return 125;
  SetHandleInformation(wr, HANDLE_FLAG_INHERIT, 0);
  STARTUPINFOA si = { .cb = sizeof si, .dwFlags = STARTF_USESTDHANDLES };
  si.hStdInput = rd;
  si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
  si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
  PROCESS_INFORMATION pi;
  if (!CreateProcessA(NULL, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
    fprintf(stderr, "feed_stdin: cannot start %s (error %lu)\n", argv[3],
            GetLastError());
    return 125;
  }
  CloseHandle(rd);
  for (const char *p = argv[2] + 1; *p != '\0'; p++) {
    char c = *p == '|' ? '\n' : *p;
    DWORD done;
    if (!WriteFile(wr, &c, 1, &done, NULL))
      break;
  }
  Sleep((DWORD)atoi(argv[1]));
  CloseHandle(wr);
  DWORD status = 125;
  WaitForSingleObject(pi.hProcess, INFINITE);
  GetExitCodeProcess(pi.hProcess, &status);
  return (int)status;
}
