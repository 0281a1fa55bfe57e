/* SPDX-License-Identifier: MIT */
/* Runs one test case (or every one) against one backend:
 *   anypoll_test [CASE|all|--list] [BACKEND]
 * BACKEND is a poll backend's name, or for the watch set's cases
 * "setdefault" or "setpoll" (tests/CMakeLists.txt). */
#include <string.h>

#include "test.h"

#ifdef _WIN32
#  define TEST_CASE_WIN(name) TEST_CASE(name)
#  define TEST_CASE_CONSOLE(name) TEST_CASE(name)
#else
#  define TEST_CASE_POSIX(name) TEST_CASE(name)
#  define TEST_CASE_SET_POSIX(name) TEST_CASE(name)
#endif

/* The spawn cases exist where the platform's anypoll_spawn is built
 * (tests/CMakeLists.txt defines TP_HAVE_SPAWN). */
#ifndef TP_HAVE_SPAWN
#  define TEST_CASE_SPAWN(name)
#  define TEST_CASE_SPAWN_POSIX(name)
#elif !defined(_WIN32)
#  define TEST_CASE_SPAWN_POSIX(name) TEST_CASE_SPAWN(name)
#endif

#define TEST_CASE(name) TEST(name);
#include "list.h"
#undef TEST_CASE

static const struct {
  const char *name;
  void (*fn)(void);
} cases[] = {
#define TEST_CASE(name) { #name, test_##name },
#include "list.h"
#undef TEST_CASE
};
#define CASE_COUNT (sizeof cases / sizeof cases[0])

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
#ifdef _WIN32
  /* test_win_set.c's child, here rather than in tp_child_main: the
   * programs that share platform_win32.c do not have test_win_set.c. */
  if (argc > 3 && strcmp(argv[1], "--child") == 0 &&
      strcmp(argv[2], "set-close") == 0)
    return tp_set_close_child(argv[3]);
#endif
  if (argc > 1 && strcmp(argv[1], "--child") == 0)
    return tp_child_main(argc, argv);
  const char *which = argc > 1 ? argv[1] : "all";
  if (strcmp(which, "--list") == 0) {
    for (size_t i = 0; i < CASE_COUNT; i++)
      printf("%s\n", cases[i].name);
    return 0;
  }
  const char *shown = NULL;
  if (argc > 2 && strcmp(argv[2], "setdefault") == 0) {
    /* The watch set's cases: the default set backend, or the portable one
     * ("setpoll"); anypoll_poll keeps its default backend. */
    shown = argv[2];
  } else if (argc > 2 && (strcmp(argv[2], "spawn") == 0 ||
                           strcmp(argv[2], "spawnreaper") == 0)) {
    /* The spawn cases (test_spawn.c): default backends; "spawnreaper" is
     * the POSIX fallback for systems without pidfd_open. */
    tp_spawn_mode = argv[2];
    shown = argv[2];
  } else if (argc > 2 && strcmp(argv[2], "setpoll") == 0) {
    tp_set_backend = "poll";
    shown = argv[2];
  } else if (argc > 2) {
    tp_backend = anypoll_backend_from_name(argv[2]);
    if (tp_backend < 0) {
      fprintf(stderr, "backend %s is not available here\n", argv[2]);
      return 2;
    }
  }
  int ran = 0;
  for (size_t i = 0; i < CASE_COUNT; i++) {
    if (strcmp(which, "all") != 0 && strcmp(which, cases[i].name) != 0)
      continue;
    if (shown == NULL)
      shown = anypoll_backend_name(tp_backend);
    printf("%s [%s] ...\n", cases[i].name, shown);
    cases[i].fn();
    printf("%s [%s] ok\n", cases[i].name, shown);
    ran++;
  }
  if (ran == 0) {
    fprintf(stderr, "no test case named %s\n", which);
    return 2;
  }
  return 0;
}
