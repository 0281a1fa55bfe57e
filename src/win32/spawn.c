/* SPDX-License-Identifier: MIT */
/* anypoll_spawn and the process descriptor on Windows.
 *
 * The child's streams. A new pipe (ANYPOLL_STDIO_PIPE) is one of
 * anypoll_pipe's named pipes (anypipe.c): the parent's end is opened for
 * overlapped I/O, so that anypoll_poll waits on it with an overlapped
 * zero-byte read and a watch set on its completion port (set_anypipe.c),
 * with no thread either way; the child's end is synchronous, as every
 * program expects its standard handles to be (an overlapped stdin breaks
 * the C runtime's reads). For stdin the parent's write end is the client
 * end: a server end opened for writing has no FILE_READ_ATTRIBUTES, and
 * without it anypoll_poll could not ask it whether its reader has gone.
 *
 * Inheritance. The child gets its three handles and nothing else: each is
 * a handle made for the child (a pipe's end, NUL, or a duplicate of the
 * parent's descriptor), made inheritable only just before CreateProcessW
 * and closed just after it, and named in PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
 * so that no other inheritable handle of the program reaches the child.
 * The parent's ends are never inheritable. The window is the
 * CreateProcessW call alone (under Wine 8, which waits there for the child
 * to start, 12 to 106 ms, median 26, of an anypoll_spawn of 35); a process
 * that another thread creates in it with bInheritHandles and no list
 * inherits the child's handles (anypoll_spawn(3), BUGS). Nothing
 * documented closes it: a handle reaches a new process only by inheritance,
 * from its creator or from the process named by
 * PROC_THREAD_ATTRIBUTE_PARENT_PROCESS, which would need a helper process
 * of ours, alive as long as the program, as every child's parent (the
 * children would take its job and token, and its pid as their parent's);
 * writing the child's standard handles into the suspended child is
 * undocumented.
 *
 * The process descriptor. msvcrt's and the UCRT's _open_osfhandle refuse a
 * process handle (GetFileType says FILE_TYPE_UNKNOWN), so the descriptor is
 * the read end of an anypoll_pipe pipe, which every anypoll wait already
 * waits on with no thread. A thread-pool wait on the process handle
 * (CreateThreadpoolWait, set once; its callback runs on a worker of a
 * private pool of one thread, never in the wait thread, whose callback a
 * blocking unregister cannot wait for under Wine 8) writes one byte to the
 * pipe's write end when the child exits: POLLIN comes then, and not
 * before. Under Wine 8 (and Windows before 8) the pool's wait threads each
 * wait on up to 63 handles, so N children cost ceil(N / 63) wait threads
 * while they run, plus the one worker when they exit; Windows 8 and later
 * wait with no thread. A table, under a lock, maps the descriptor (number and
 * handle) to the process handle, the pid, the wait and the write end;
 * anypoll_close releases them all and does not touch the child.
 *
 * A failed spawn leaves nothing behind: the child is created suspended and
 * resumed only once everything else has succeeded; before that, a failure
 * ends it (it has run no code) and closes every handle and descriptor made
 * for it. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
#include <wchar.h>

#include "spawn.h"

/* ---- anypoll_spawn ------------------------------------------------------- */

struct spawn {
  HANDLE child[3]; /* the child's handles (NULL: none) */
  int parent[3];   /* the parent's descriptors, or -1 */
  int proc_fd;
  struct proc *p;
  WCHAR *path, *line, *env;
  LPPROC_THREAD_ATTRIBUTE_LIST attrs;
};

/* A CreateProcess error as anypoll_spawn's errno. */
static int spawn_error(DWORD e) {
  switch (e) {
  case ERROR_FILE_NOT_FOUND:
  case ERROR_PATH_NOT_FOUND:
    errno = ENOENT;
    return -1;
  case ERROR_ACCESS_DENIED:
  case ERROR_BAD_EXE_FORMAT:
  case ERROR_EXE_MACHINE_TYPE_MISMATCH:
    errno = EACCES;
    return -1;
  case ERROR_FILENAME_EXCED_RANGE:
    errno = E2BIG;
    return -1;
  default:
    return anypoll__set_errno_win(e);
  }
}

/* The child's handle for stream i; 0, or -1 with errno. */
static int spawn_stream(struct spawn *s, int i, int how) {
  if (how == ANYPOLL_STDIO_PIPE) {
    HANDLE rd, wr;
    if (anypoll__anypipe_make(&rd, &wr, i == 0) != 0)
      return -1;
    HANDLE mine = i == 0 ? wr : rd;
    s->child[i] = i == 0 ? rd : wr;
    s->parent[i] = _open_osfhandle((intptr_t)mine, (i == 0 ? _O_WRONLY : _O_RDONLY) |
                                                       _O_BINARY | _O_NOINHERIT);
    if (s->parent[i] < 0) {
      CloseHandle(mine);
      errno = EMFILE;
      return -1;
    }
    if (i == 0 && anypoll__stdin_register(s->parent[0], mine) != 0) {
      _close(s->parent[0]);
      s->parent[0] = -1;
      return -1;
    }
    return 0;
  }
  if (how == ANYPOLL_STDIO_NULL) {
    HANDLE h = CreateFileW(L"NUL", GENERIC_READ | GENERIC_WRITE,
                           FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                           OPEN_EXISTING, 0, NULL);
    if (h == INVALID_HANDLE_VALUE)
      return anypoll__set_errno_win(GetLastError());
    s->child[i] = h;
    return 0;
  }
  int fd = how == ANYPOLL_STDIO_INHERIT ? i : how;
  intptr_t os = anypoll__sys_os_handle(fd);
  HANDLE h = (HANDLE)os;
  if (how == ANYPOLL_STDIO_INHERIT && (os == -1 || os == -2)) {
    /* Descriptor i is not open: the process's standard handle, if any
     * (a program without a console and descriptors passes none). */
    static const DWORD std_id[3] = { STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
                                     STD_ERROR_HANDLE };
    h = GetStdHandle(std_id[i]);
    if (h == NULL || h == INVALID_HANDLE_VALUE)
      return 0;
  } else if (os == -1 || os == -2) {
    errno = EBADF;
    return -1;
  }
  if (!anypoll__sys_duplicate(h, &s->child[i])) {
    s->child[i] = NULL;
    if (GetLastError() == ERROR_INVALID_HANDLE) {
      errno = EBADF;
      return -1;
    }
    return anypoll__set_errno_win(GetLastError());
  }
  return 0;
}

/* The process descriptor's pipe and entry; 0, or -1 with errno. */
static int spawn_proc_pipe(struct spawn *s) {
  s->p = calloc(1, sizeof *s->p);
  if (s->p == NULL) {
    errno = ENOMEM;
    return -1;
  }
  HANDLE rd;
  if (anypoll__anypipe_make(&rd, &s->p->write_end, 0) != 0)
    return -1;
  s->proc_fd = _open_osfhandle((intptr_t)rd, _O_RDONLY | _O_BINARY | _O_NOINHERIT);
  if (s->proc_fd < 0) {
    CloseHandle(rd);
    errno = EMFILE;
    return -1;
  }
  s->p->fd = s->proc_fd;
  s->p->read_end = rd;
  return 0;
}

/* The list of the child's handles; *count how many. 0, or -1 with errno. */
static int spawn_attributes(struct spawn *s, HANDLE list[3], int *count) {
  *count = 0;
  for (int i = 0; i < 3; i++) {
    /* A console pseudo-handle (before Windows 8: low bits 3) cannot be in
     * the list; the console is inherited anyway. */
    if (s->child[i] != NULL && ((UINT_PTR)s->child[i] & 3) != 3)
      list[(*count)++] = s->child[i];
  }
  if (*count == 0)
    return 0;
  SIZE_T size = 0;
  InitializeProcThreadAttributeList(NULL, 1, 0, &size);
  s->attrs = malloc(size);
  if (s->attrs == NULL) {
    errno = ENOMEM;
    return -1;
  }
  if (!InitializeProcThreadAttributeList(s->attrs, 1, 0, &size)) {
    free(s->attrs);
    s->attrs = NULL;
    return anypoll__set_errno_win(GetLastError());
  }
  if (!UpdateProcThreadAttribute(s->attrs, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
                                 list, (SIZE_T)*count * sizeof list[0], NULL,
                                 NULL))
    return anypoll__set_errno_win(GetLastError());
  return 0;
}

static void spawn_cleanup(struct spawn *s, int failed) {
  for (int i = 0; i < 3; i++) {
    if (s->child[i] != NULL)
      CloseHandle(s->child[i]);
    if (failed && s->parent[i] >= 0) {
      if (i == 0)
        anypoll__stdin_release(s->parent[0]);
      _close(s->parent[i]);
    }
  }
  if (failed && s->proc_fd >= 0)
    _close(s->proc_fd);
  if (failed && s->p != NULL)
    anypoll__spawn_proc_free(s->p);
  if (s->attrs != NULL) {
    DeleteProcThreadAttributeList(s->attrs);
    free(s->attrs);
  }
  free(s->path);
  free(s->line);
  free(s->env);
}

/* Starts the child, suspended, and its wait; resumes it. */
static int spawn_start(struct spawn *s, int batch) {
  HANDLE list[3];
  int count;
  if (spawn_attributes(s, list, &count) != 0)
    return -1;
  WCHAR cmd[MAX_PATH + 16];
  const WCHAR *app = s->path;
  if (batch) {
    UINT n = GetSystemDirectoryW(cmd, MAX_PATH);
    if (n == 0 || n >= MAX_PATH)
      return anypoll__set_errno_win(GetLastError());
    wcscpy(cmd + n, L"\\cmd.exe");
    app = cmd;
  }
  STARTUPINFOEXW si;
  ZeroMemory(&si, sizeof si);
  si.StartupInfo.cb = sizeof si;
  si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  si.StartupInfo.hStdInput = s->child[0];
  si.StartupInfo.hStdOutput = s->child[1];
  si.StartupInfo.hStdError = s->child[2];
  si.lpAttributeList = s->attrs;
  for (int i = 0; i < count; i++)
    SetHandleInformation(list[i], HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
  anypoll__test_in_spawn_window(list, count);
  PROCESS_INFORMATION pi;
  DWORD flags = CREATE_SUSPENDED | (count > 0 ? EXTENDED_STARTUPINFO_PRESENT : 0) |
                (s->env != NULL ? CREATE_UNICODE_ENVIRONMENT : 0);
  BOOL ok = CreateProcessW(app, s->line, NULL, NULL, count > 0, flags, s->env,
                           NULL, &si.StartupInfo, &pi);
  DWORD error = GetLastError();
  /* The child has its copies; ours go in spawn_cleanup. */
  for (int i = 0; i < count; i++)
    SetHandleInformation(list[i], HANDLE_FLAG_INHERIT, 0);
  if (!ok)
    return spawn_error(error);
  s->p->process = pi.hProcess;
  s->p->pid = pi.dwProcessId;
  s->p->wait = anypoll__spawn_proc_wait_new(s->p);
  if (s->p->wait == NULL) {
    error = GetLastError();
    /* It has run no code: end it, and nothing of it remains. */
    TerminateProcess(pi.hProcess, 1);
    WaitForSingleObject(pi.hProcess, INFINITE);
    CloseHandle(pi.hThread);
    return anypoll__set_errno_win(error);
  }
  SetThreadpoolWait(s->p->wait, pi.hProcess, NULL);
  ResumeThread(pi.hThread);
  CloseHandle(pi.hThread);
  return 0;
}

int anypoll_spawn(const char *file, char *const argv[], char *const envp[],
                  const int stdio[3], int pipes[3], int *proc) {
  if (anypoll__spawn_args_ok(file, argv, stdio, pipes, proc) != 0)
    return -1;
  if (anypoll__win_init() != 0)
    return -1;
  struct spawn s;
  ZeroMemory(&s, sizeof s);
  s.proc_fd = -1;
  for (int i = 0; i < 3; i++)
    s.parent[i] = -1;
  int batch = 0;
  int r = anypoll__spawn_resolve(file, &s.path, &batch);
  if (r == 0)
    r = anypoll__spawn_cmdline(s.path, batch, argv, &s.line);
  if (r == 0 && envp != NULL)
    r = anypoll__spawn_environment(envp, &s.env);
  /* The caller's descriptors first: a descriptor this call makes could
   * otherwise take the number of one the caller named that is not open. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < 3 && r == 0; i++)
      if ((stdio[i] == ANYPOLL_STDIO_PIPE) == (pass == 1))
        r = spawn_stream(&s, i, stdio[i]);
  if (r == 0)
    r = spawn_proc_pipe(&s);
  if (r == 0)
    r = spawn_start(&s, batch);
  if (r != 0) {
    int e = errno;
    spawn_cleanup(&s, 1);
    errno = e;
    return -1;
  }
  anypoll__spawn_proc_add(s.p);
  for (int i = 0; i < 3; i++)
    pipes[i] = s.parent[i];
  *proc = s.proc_fd;
  spawn_cleanup(&s, 0);
  return 0;
}

