/* pccat: the cat-like child for pollcat's tests, built for both platforms
 * (Windows has no cat). Copies stdin to stdout with plain blocking reads
 * and writes, as an ordinary program does.
 *   --both      also copy everything to stderr
 *   --no-read   do not read stdin at all
 *   --exit N    exit with status N at the end
 *   --args ...  print each further argument as [ARG] on its own line and
 *               exit (checks the command line pollcat built for us) */
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
