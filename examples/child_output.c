/* SPDX-License-Identifier: MIT */
/* Run a child process and collect its stdout and stderr as they come, with
 * neither pipe blocking the other: the reason most programs need poll() on
 * pipes. The child is this program again, started with "--child".
 *
 *   child_output     prints what the child wrote on each stream, and its
 *                    exit status */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* fork, pipe, waitpid under -std=c11 */
#endif
#include <stdio.h>
#include <string.h>

#include "anypoll.h"

#ifdef _WIN32
#  include <fcntl.h>
#  include <io.h>
#  include <windows.h>
#  define read_fd _read
#  define close_fd _close
typedef HANDLE child_t;

/* Starts "this-program --child" with stdout and stderr on two new pipes;
 * out[0] and out[1] get their read ends as C runtime descriptors, which is
 * what anypoll_poll takes on Windows. Returns 0, or -1 on failure. */
static int start_child(const char *argv0, int out[2], child_t *child) {
  (void)argv0;
  SECURITY_ATTRIBUTES inherit = { sizeof inherit, NULL, TRUE };
  HANDLE rd[2], wr[2];
  for (int i = 0; i < 2; i++) {
    if (!CreatePipe(&rd[i], &wr[i], &inherit, 0))
      return -1;
    /* Only the write ends go to the child: while any process holds a write
     * end, the pipe never reports end of file. */
    SetHandleInformation(rd[i], HANDLE_FLAG_INHERIT, 0);
    out[i] = _open_osfhandle((intptr_t)rd[i], _O_RDONLY | _O_BINARY);
  }
  char self[MAX_PATH], cmd[MAX_PATH + 16];
  GetModuleFileNameA(NULL, self, sizeof self);
  snprintf(cmd, sizeof cmd, "\"%s\" --child", self);
  STARTUPINFOA si = { .cb = sizeof si, .dwFlags = STARTF_USESTDHANDLES };
  si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  si.hStdOutput = wr[0];
  si.hStdError = wr[1];
  PROCESS_INFORMATION pi;
  BOOL ok = CreateProcessA(NULL, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi);
  CloseHandle(wr[0]);
  CloseHandle(wr[1]);
  if (!ok)
    return -1;
  CloseHandle(pi.hThread);
  *child = pi.hProcess;
  return 0;
}

static int wait_child(child_t child) {
  DWORD status = 0;
  WaitForSingleObject(child, INFINITE);
  GetExitCodeProcess(child, &status);
  CloseHandle(child);
  return (int)status;
}
#else
#  include <sys/wait.h>
#  include <unistd.h>
#  define read_fd read
#  define close_fd close
typedef pid_t child_t;

static int start_child(const char *argv0, int out[2], child_t *child) {
  int p[2][2];
  if (pipe(p[0]) != 0 || pipe(p[1]) != 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[0][1], 1);
    dup2(p[1][1], 2);
    for (int i = 0; i < 4; i++)
      close(p[i / 2][i % 2]);
    execl(argv0, argv0, "--child", (char *)NULL);
    _exit(127);
  }
  /* As on Windows: while the parent holds a write end, no end of file. */
  close(p[0][1]);
  close(p[1][1]);
  out[0] = p[0][0];
  out[1] = p[1][0];
  *child = pid;
  return pid > 0 ? 0 : -1;
}

static int wait_child(child_t child) {
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
#endif

/* The child: a few lines on each stream, and an exit status to report. */
static int child_main(void) {
  for (int i = 1; i <= 3; i++) {
    printf("line %d\n", i);
    fflush(stdout);
    fprintf(stderr, "warning %d\n", i);
  }
  return 3;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0)
    return child_main();

  int out[2];
  child_t child;
  if (start_child(argv[0], out, &child) != 0) {
    fprintf(stderr, "cannot start the child\n");
    return 1;
  }

  struct pollfd fds[2] = { { 0 } };
  for (int i = 0; i < 2; i++) {
    fds[i].fd = out[i];
    fds[i].events = POLLIN;
  }
  static char text[2][4096];
  int len[2] = { 0, 0 };
  int open_pipes = 2;
  while (open_pipes > 0) {
    if (anypoll_poll(fds, 2, -1) < 0) {
      perror("anypoll_poll");
      return 1;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].revents == 0)
        continue;
      /* POLLHUP may arrive with data still buffered: read until read()
       * itself reports end of file. */
      int n = (int)read_fd(out[i], text[i] + len[i],
                           (unsigned)(sizeof text[i] - 1 - (unsigned)len[i]));
      if (n > 0) {
        len[i] += n;
      } else {
        close_fd(out[i]);
        fds[i].fd = -1; /* a negative fd is ignored from now on */
        open_pipes--;
      }
    }
  }

  printf("child stdout:\n%.*s", len[0], text[0]);
  printf("child stderr:\n%.*s", len[1], text[1]);
  printf("child exit status: %d\n", wait_child(child));
  return 0;
}
