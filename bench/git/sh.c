/* SPDX-License-Identifier: MIT */
/* A stand-in for sh.exe, for make bench-git. A file:// clone makes git run
 * `sh -c "git-upload-pack '<path>'"`, and Wine has no sh; this runs
 * `git.exe upload-pack <path>` (git.exe from this program's directory)
 * with the same standard handles, and returns its exit status. Any other
 * command is refused with status 127, as sh does for an unknown command. */
#include <process.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

#define PREFIX "git-upload-pack "

/* git quotes the path for sh: '...' with every ' written as '\''. */
static int unquote(const char *s, char *out, size_t size) {
  size_t n = 0;
  while (*s != '\0') {
    if (*s == '\'') {
      for (s++; *s != '\'' && *s != '\0'; s++) {
        if (n + 1 >= size)
          return -1;
        out[n++] = *s;
      }
      if (*s != '\'')
        return -1;
      s++;
    } else if (*s == '\\' && s[1] != '\0') {
      if (n + 1 >= size)
        return -1;
      out[n++] = s[1];
      s += 2;
    } else {
      return -1;
    }
  }
  out[n] = '\0';
  return 0;
}

int main(int argc, char **argv) {
  char path[MAX_PATH * 2], quoted[MAX_PATH * 2 + 3], git[MAX_PATH];
  /* git adds the command once more, as $0 of the script. */
  if (argc < 3 || argc > 4 || strcmp(argv[1], "-c") != 0 ||
      strncmp(argv[2], PREFIX, strlen(PREFIX)) != 0 ||
      unquote(argv[2] + strlen(PREFIX), path, sizeof path) != 0) {
    fprintf(stderr, "sh (bench-git stand-in): only -c \"" PREFIX
                    "'PATH'\" is supported; got");
    for (int i = 1; i < argc; i++)
      fprintf(stderr, " [%s]", argv[i]);
    fprintf(stderr, "\n");
    return 127;
  }
  DWORD len = GetModuleFileNameA(NULL, git, sizeof git);
  char *slash = strrchr(git, '\\');
  if (len == 0 || len >= sizeof git || slash == NULL ||
      (size_t)(slash - git) + sizeof "\\git.exe" > sizeof git)
    return 127;
  strcpy(slash, "\\git.exe");
  /* _spawnv joins the arguments with spaces and quotes nothing. */
  snprintf(quoted, sizeof quoted, "\"%s\"", path);
  const char *args[] = { "git.exe", "upload-pack", quoted, NULL };
  fflush(NULL);
  intptr_t status = _spawnv(_P_WAIT, git, args);
  if (status == -1) {
    perror("sh (bench-git stand-in): git.exe");
    return 127;
  }
  return (int)status;
}
