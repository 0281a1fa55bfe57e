/* pccat: the cat-like child for pollcat's tests, built for both platforms
 * (Windows has no cat). Copies stdin to stdout with plain blocking reads
 * and writes, as an ordinary program does.
 *   --both      also copy everything to stderr
 *   --no-read   do not read stdin at all
 *   --exit N    exit with status N at the end
 *   --args ...  print each further argument as [ARG] on its own line and
 *               exit (checks the command line pollcat built for us)
 *   --relay CMD ARGS  (Windows only, for bench/pollcat-throughput) run CMD
 *               with anonymous pipes for its stdin and stdout, copied by
 *               two threads with plain blocking ReadFile/WriteFile: the
 *               simplest relay there is, which shows what Windows pipes
 *               themselves cost (under Wine every pipe read and write is a
 *               wineserver request), the floor for pollcat's exec mode. */
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

static int relay(int argc, char **argv) {
  static char cmdline[32768];
  size_t pos = 0;
  for (int i = 0; i < argc; i++)
    pos += (size_t)snprintf(cmdline + pos, sizeof cmdline - pos, "%s%s",
                            i > 0 ? " " : "", argv[i]);
  SECURITY_ATTRIBUTES sa = { sizeof sa, NULL, TRUE };
  HANDLE in_r, in_w, out_r, out_w;
  if (!CreatePipe(&in_r, &in_w, &sa, 1048576) ||
      !CreatePipe(&out_r, &out_w, &sa, 1048576))
    return 97;
  SetHandleInformation(in_w, HANDLE_FLAG_INHERIT, 0);
  SetHandleInformation(out_r, HANDLE_FLAG_INHERIT, 0);
  STARTUPINFOA si;
  memset(&si, 0, sizeof si);
  si.cb = sizeof si;
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = in_r;
  si.hStdOutput = out_w;
  si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
  PROCESS_INFORMATION pi;
  if (!CreateProcessA(NULL, cmdline, NULL, NULL, TRUE, 0, NULL, NULL, &si,
                      &pi))
    return 96;
  CloseHandle(in_r);
  CloseHandle(out_w);
  struct copy in = { GetStdHandle(STD_INPUT_HANDLE), in_w };
  struct copy out = { out_r, GetStdHandle(STD_OUTPUT_HANDLE) };
  HANDLE t = CreateThread(NULL, 0, copy_thread, &in, 0, NULL);
  copy_thread(&out);
  WaitForSingleObject(t, INFINITE);
  WaitForSingleObject(pi.hProcess, INFINITE);
  DWORD code = 0;
  GetExitCodeProcess(pi.hProcess, &code);
  return (int)code;
}
#else
static int relay(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fputs("pccat: --relay is for Windows\n", stderr);
  return 99;
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
  int both = 0, no_read = 0, status = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--both") == 0)
      both = 1;
    else if (strcmp(argv[i], "--no-read") == 0)
      no_read = 1;
    else if (strcmp(argv[i], "--relay") == 0 && i + 1 < argc)
      return relay(argc - i - 1, argv + i + 1);
    else if (strcmp(argv[i], "--args") == 0) {
      for (int j = i + 1; j < argc; j++)
        printf("[%s]\n", argv[j]);
      return 0;
    } else if (strcmp(argv[i], "--exit") == 0 && i + 1 < argc)
      status = atoi(argv[++i]);
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
