/* SPDX-License-Identifier: MIT */
/* What anypoll_spawn gives CreateProcessW (spawn.c): the program's path,
 * its command line, its environment block.
 *
 * Encoding: file, argv and envp are taken in the ANSI code page (CP_ACP),
 * the encoding of the argv and environ that a mingw program's C runtime
 * (msvcrt or the UCRT's narrow entry points) hands to main: the same
 * semantics as CreateProcessA, made explicit so that the command line can
 * be built in UTF-16. A byte sequence that is not valid in that code page
 * (possible only where it is a multi-byte one, such as UTF-8) is refused
 * with EINVAL rather than replaced: it would not reach the child intact.
 *
 * The search: a file with no '/', '\\' or ':' is looked for in the
 * directories of the parent's PATH only, in order, as posix_spawnp does
 * (CreateProcess's own search would first look in the program's directory,
 * the current directory and the system directories). The ".exe" rule of
 * CreateProcess applies: a name whose last component has no extension is
 * looked for with ".exe" appended. A file with a directory is taken as
 * given, or with ".exe" appended when it has no extension and does not
 * exist as given. The result is a full path, passed as CreateProcessW's
 * lpApplicationName, so that CreateProcess searches nothing itself.
 *
 * The command line: argv[1..] are quoted so that the Microsoft C runtime's
 * parser gives them back exactly (CommandLineToArgvW's rules): an argument
 * that is empty or holds a space, tab, newline or vertical tab is put in
 * double quotes; a run of backslashes followed by a double quote (or by the
 * closing quote) is doubled, and the double quote escaped with one more
 * backslash; backslashes anywhere else are literal. argv[0] is parsed by
 * other rules (up to the next double quote if it starts with one, else up
 * to the first space or tab; backslashes always literal), so it cannot hold
 * a double quote: that is refused with EINVAL; otherwise it is quoted when
 * empty or when it holds a space or tab. A quoted one that ends with a
 * backslash is refused too: Wine's C runtime reads its \" as an escaped
 * quote, where Microsoft's takes the backslash literally, so no way of
 * writing it reaches both intact.
 *
 * Batch files: CreateProcess runs a .bat or .cmd through cmd.exe, which
 * parses the whole line again by its own rules, where \" means nothing,
 * '%' (and '!' under delayed expansion) expand variables even inside
 * quotes, and & | < > ^ ( ) outside quotes start other commands
 * (CVE-2024-24576, "BatBadBut"). So anypoll_spawn starts cmd.exe itself, as
 * Microsoft's CreateProcess documentation says to run a batch file:
 *   cmd.exe /d /v:off /s /c ""<script>" <arg1> <arg2> ..."
 * (/d: no AutoRun commands; /v:off: no delayed expansion, so '!' is
 * literal; /s: exactly the outer quotes are removed). Each argument is
 * passed as it is when it is made only of letters, digits and
 * # $ ' * + - . / : ? @ [ \ ] _ { } ~, and otherwise in double quotes,
 * inside which cmd.exe takes & | < > ^ ( ) , ; = spaces and tabs
 * literally: the batch file gets it whole in %N, with its quotes, which
 * %~N removes. Refused with EINVAL, as no quoting can protect them: an
 * argument holding '"', '%', '!', or a control character other than tab
 * (CR and LF end cmd.exe's command); a script path holding '%', '!' or a
 * control character. argv[0] is not passed to a batch file: its %0 is the
 * script's path. A file is a batch file when its path, once trailing dots
 * and spaces are dropped (Windows drops them when it opens the file), ends
 * in ".bat" or ".cmd", in any case. The whole cmd.exe line must fit in
 * cmd.exe's 8191 characters (E2BIG otherwise). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "spawn.h"

/* The longest command line CreateProcessW takes, with its terminator. */
#define SPAWN_CMDLINE_MAX 32767
/* The longest line cmd.exe takes (Microsoft documents 8191 characters),
 * without a terminator: past it cmd.exe runs nothing and still exits 0, so
 * a batch file's line longer than that is refused with E2BIG. */
#define SPAWN_BATCH_LINE_MAX 8191

struct wbuf {
  WCHAR *p;
  size_t len, cap;
  int failed; /* out of memory: every later push does nothing */
};

static void wbuf_push(struct wbuf *b, const WCHAR *s, size_t n) {
  if (b->failed)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (b->len + n + 1 > cap)
      cap *= 2;
    WCHAR *p = realloc(b->p, cap * sizeof *p);
    if (p == NULL) {
      b->failed = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n * sizeof *s);
  b->len += n;
  b->p[b->len] = 0;
}

static void wbuf_char(struct wbuf *b, WCHAR c, size_t times) {
  while (times-- > 0)
    wbuf_push(b, &c, 1);
}

WCHAR *anypoll__spawn_widen(const char *s) {
  int n = MultiByteToWideChar(CP_ACP, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
  if (n <= 0) {
    errno = EINVAL;
    return NULL;
  }
  WCHAR *w = malloc((size_t)n * sizeof *w);
  if (w == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  MultiByteToWideChar(CP_ACP, MB_ERR_INVALID_CHARS, s, -1, w, n);
  return w;
}

/* ---- The search ---------------------------------------------------------- */

/* 1: a file (found), 0: nothing there, -1: a directory (EACCES if nothing
 * else is found, as posix_spawnp goes on past it). */
static int spawn_exists(const WCHAR *path) {
  DWORD a = GetFileAttributesW(path);
  if (a == INVALID_FILE_ATTRIBUTES)
    return 0;
  return (a & FILE_ATTRIBUTE_DIRECTORY) ? -1 : 1;
}

static int spawn_has_extension(const WCHAR *name) {
  const WCHAR *leaf = name;
  for (const WCHAR *p = name; *p != 0; p++)
    if (*p == L'\\' || *p == L'/' || *p == L':')
      leaf = p + 1;
  return wcschr(leaf, L'.') != NULL;
}

/* Tries dir (n characters; none: n == 0) joined with name, and with ".exe"
 * when name has no extension; on success *full is the full path. */
static int spawn_try(const WCHAR *dir, size_t n, const WCHAR *name,
                     int exact_first, WCHAR **full, int *saw_dir) {
  struct wbuf b = { 0 };
  wbuf_push(&b, dir, n);
  if (n > 0 && dir[n - 1] != L'\\' && dir[n - 1] != L'/')
    wbuf_char(&b, L'\\', 1);
  wbuf_push(&b, name, wcslen(name));
  if (b.failed) {
    free(b.p);
    return -1;
  }
  int ext = spawn_has_extension(name);
  int found = 0;
  if (ext || exact_first) {
    found = spawn_exists(b.p);
    if (found < 0)
      *saw_dir = 1;
  }
  if (found <= 0 && !ext) {
    wbuf_push(&b, L".exe", 4);
    found = b.failed ? 0 : spawn_exists(b.p);
    if (found < 0)
      *saw_dir = 1;
  }
  if (b.failed) {
    free(b.p);
    return -1;
  }
  if (found <= 0) {
    free(b.p);
    return 0;
  }
  DWORD need = GetFullPathNameW(b.p, 0, NULL, NULL);
  WCHAR *out = need > 0 ? malloc(need * sizeof *out) : NULL;
  if (out == NULL || GetFullPathNameW(b.p, need, out, NULL) >= need) {
    free(out);
    free(b.p);
    return -1;
  }
  free(b.p);
  *full = out;
  return 1;
}

int anypoll__spawn_resolve(const char *file, WCHAR **path, int *batch) {
  WCHAR *name = anypoll__spawn_widen(file);
  if (name == NULL)
    return -1;
  int saw_dir = 0, r = 0;
  *path = NULL;
  if (name[0] == 0) {
    r = 0;
  } else if (wcspbrk(name, L"/\\:") != NULL) {
    r = spawn_try(L"", 0, name, 1, path, &saw_dir);
  } else {
    DWORD need = GetEnvironmentVariableW(L"PATH", NULL, 0);
    WCHAR *list = need > 0 ? malloc(need * sizeof *list) : NULL;
    if (need > 0 && list == NULL) {
      free(name);
      errno = ENOMEM;
      return -1;
    }
    if (list != NULL && GetEnvironmentVariableW(L"PATH", list, need) >= need)
      list[0] = 0;
    for (WCHAR *p = list; p != NULL && *p != 0 && r == 0;) {
      WCHAR *end = wcschr(p, L';');
      size_t n = end != NULL ? (size_t)(end - p) : wcslen(p);
      WCHAR *dir = p;
      /* A directory may be written in double quotes. */
      if (n >= 2 && dir[0] == L'"' && dir[n - 1] == L'"') {
        dir++;
        n -= 2;
      }
      if (n > 0)
        r = spawn_try(dir, n, name, 0, path, &saw_dir);
      p = end != NULL ? end + 1 : p + wcslen(p);
    }
    free(list);
  }
  free(name);
  if (r < 0) {
    errno = ENOMEM;
    return -1;
  }
  if (r == 0) {
    errno = saw_dir ? EACCES : ENOENT;
    return -1;
  }
  /* Windows drops trailing dots and spaces when it opens a file:
   * "x.bat. " is x.bat. */
  size_t n = wcslen(*path);
  while (n > 0 && ((*path)[n - 1] == L'.' || (*path)[n - 1] == L' '))
    n--;
  *batch = n >= 4 && (_wcsnicmp(*path + n - 4, L".bat", 4) == 0 ||
                      _wcsnicmp(*path + n - 4, L".cmd", 4) == 0);
  return 0;
}

/* ---- The command line ---------------------------------------------------- */

/* One argument after argv[0], for the C runtime's parser. */
static void quote_crt(struct wbuf *b, const WCHAR *a) {
  int quote = a[0] == 0 || wcspbrk(a, L" \t\n\v") != NULL;
  if (quote)
    wbuf_char(b, L'"', 1);
  for (const WCHAR *p = a;; p++) {
    size_t slashes = 0;
    while (*p == L'\\') {
      slashes++;
      p++;
    }
    if (*p == 0) {
      /* Before the closing quote they must stand for themselves. */
      wbuf_char(b, L'\\', quote ? 2 * slashes : slashes);
      break;
    }
    if (*p == L'"') {
      wbuf_char(b, L'\\', 2 * slashes + 1);
      wbuf_char(b, L'"', 1);
    } else {
      wbuf_char(b, L'\\', slashes);
      wbuf_char(b, *p, 1);
    }
  }
  if (quote)
    wbuf_char(b, L'"', 1);
}

static int batch_plain(WCHAR c) {
  return (c >= L'a' && c <= L'z') || (c >= L'A' && c <= L'Z') ||
         (c >= L'0' && c <= L'9') || (c != 0 && wcschr(L"#$'*+-./:?@[\\]_{}~", c) != NULL);
}

/* What no quoting can protect from cmd.exe. */
static int batch_refused(WCHAR c, int in_path) {
  if (c < 0x20 && !(c == L'\t' && !in_path))
    return 1;
  return c == L'%' || c == L'!' || (!in_path && c == L'"');
}

static int quote_batch(struct wbuf *b, const WCHAR *a) {
  int plain = a[0] != 0;
  for (const WCHAR *p = a; *p != 0; p++) {
    if (batch_refused(*p, 0))
      return -1;
    if (!batch_plain(*p))
      plain = 0;
  }
  if (!plain)
    wbuf_char(b, L'"', 1);
  wbuf_push(b, a, wcslen(a));
  if (!plain)
    wbuf_char(b, L'"', 1);
  return 0;
}

int anypoll__spawn_cmdline(const WCHAR *path, int batch, char *const argv[],
                           WCHAR **line) {
  struct wbuf b = { 0 };
  int bad = 0;
  if (batch) {
    for (const WCHAR *p = path; *p != 0; p++)
      bad |= batch_refused(*p, 1);
    wbuf_push(&b, L"cmd.exe /d /v:off /s /c \"\"", 26);
    wbuf_push(&b, path, wcslen(path));
    wbuf_char(&b, L'"', 1);
  }
  for (int i = batch ? 1 : 0; argv[i] != NULL && !bad; i++) {
    WCHAR *a = anypoll__spawn_widen(argv[i]);
    if (a == NULL) {
      free(b.p);
      return -1;
    }
    if (i > 0)
      wbuf_char(&b, L' ', 1);
    if (batch) {
      bad = quote_batch(&b, a) != 0;
    } else if (i == 0) {
      /* The program name: no escape exists for a double quote. */
      int quote = a[0] == 0 || wcspbrk(a, L" \t") != NULL;
      size_t n = wcslen(a);
      bad = wcschr(a, L'"') != NULL || (quote && n > 0 && a[n - 1] == L'\\');
      wbuf_char(&b, L'"', quote);
      wbuf_push(&b, a, wcslen(a));
      wbuf_char(&b, L'"', quote);
    } else {
      quote_crt(&b, a);
    }
    free(a);
  }
  if (batch)
    wbuf_char(&b, L'"', 1);
  size_t max = batch ? SPAWN_BATCH_LINE_MAX : SPAWN_CMDLINE_MAX - 1;
  if (bad || b.failed || b.len > max) {
    errno = bad ? EINVAL : b.failed ? ENOMEM : E2BIG;
    free(b.p);
    return -1;
  }
  if (b.p == NULL)
    wbuf_push(&b, L"", 0); /* argv[0] alone and empty is still "" */
  *line = b.p;
  return 0;
}

/* ---- The environment ----------------------------------------------------- */

int anypoll__spawn_environment(char *const envp[], WCHAR **block) {
  struct wbuf b = { 0 };
  for (int i = 0; envp[i] != NULL; i++) {
    WCHAR *e = anypoll__spawn_widen(envp[i]);
    if (e == NULL) {
      free(b.p);
      return -1;
    }
    /* Each string with its terminator; the block ends with one more. */
    wbuf_push(&b, e, wcslen(e) + 1);
    free(e);
  }
  wbuf_char(&b, 0, b.len == 0 ? 2 : 1);
  if (b.failed) {
    free(b.p);
    errno = ENOMEM;
    return -1;
  }
  *block = b.p;
  return 0;
}
