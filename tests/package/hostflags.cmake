# SPDX-License-Identifier: MIT
# The one-file releases under the flags of the projects that carry such
# files: dist/compat/poll.c (in place of git's or gnulib's compat/poll) and
# dist/anypoll.c, each compiled alone with -Werror, and a program that
# includes their headers, with:
#   git      git's DEVELOPER=1 set (config.mak.dev, gcc 12 / clang), with
#            -std=gnu99 as git builds and again with -std=c99;
#   gnulib   the warnings of gnulib's manywarnings module (gl_MANYWARN_ALL_GCC)
#            that this compiler knows, less the -Wsuggest-attribute family,
#            which only proposes annotations, with -std=c99;
#   pedantic -std=c99 -Wall -Wextra -Wpedantic.
#   -DSOURCE_DIR=... -DWORK_DIR=... -DPYTHON=python3 -DCC=gcc -DCFLAGS=...
#   -DWIN32=0|1
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
if(NOT PYTHON)
  message(FATAL_ERROR "python3 not found (Debian: apt-get install python3)")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
run(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/amalgamate.py ${WORK_DIR}/dist)
separate_arguments(cflags UNIX_COMMAND "${CFLAGS}")

# Keeps the flags of LIST that CC accepts without a word (a compiler that
# does not know a warning option says so, and -Werror makes that an error).
file(WRITE ${WORK_DIR}/empty.c "int anypoll_probe_unused;\n")
function(supported out)
  set(kept)
  foreach(flag IN LISTS ARGN)
    execute_process(COMMAND ${CC} -Werror -Wall ${flag} -c ${WORK_DIR}/empty.c
      -o ${WORK_DIR}/empty.o RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      list(APPEND kept ${flag})
    endif()
  endforeach()
  set(${out} ${kept} PARENT_SCOPE)
endfunction()

# git's config.mak.dev for gcc 6+ and clang 7+ (the compiler-specific ones
# are kept only where the compiler knows them).
supported(git
  -Werror -Wall -pedantic -Wpedantic -Wdeclaration-after-statement
  -Wformat-security -Wold-style-definition -Woverflow -Wpointer-arith
  -Wstrict-prototypes -Wunused -Wvla -Wwrite-strings -fno-common
  -Wunreachable-code -Wextra -Wmissing-prototypes -Wno-empty-body
  -Wno-missing-field-initializers -Wcomma
  -Wtautological-constant-out-of-range-compare)
if(WIN32)
  # git's MINGW builds with gcc 10+ (config.mak.dev), and its -DWIN32
  # -DNOGDI (config.mak.uname).
  list(APPEND git -Wno-pedantic-ms-format -DWIN32 -DNOGDI)
endif()

# gnulib's manywarnings list for C.
supported(gnulib
  -Wall -Wextra -Warith-conversion -Wbad-function-cast -Wcast-align=strict
  -Wdate-time -Wdouble-promotion -Wduplicated-branches -Wduplicated-cond
  -Wformat-signedness -Winit-self -Winline -Wlogical-op
  -Wmissing-declarations -Wmissing-include-dirs -Wmissing-prototypes
  -Wmissing-variable-declarations -Wnested-externs -Wnull-dereference
  -Wold-style-definition -Wopenmp-simd -Woverlength-strings -Wpacked
  -Wpointer-arith -Wshadow -Wstack-protector -Wstrict-overflow
  -Wstrict-prototypes -Wsync-nand -Wtrampolines -Wuninitialized
  -Wunknown-pragmas -Wunused-macros -Wvariadic-macros -Wvla -Wwrite-strings
  -Warray-bounds=2 -Wformat=2 -Wimplicit-fallthrough=5 -Wshift-overflow=2
  -Wunused-const-variable=2 -fno-common -Wthread-safety)
list(PREPEND gnulib -Werror)

set(set_git -std=gnu99 ${git})
set(set_git-c99 -std=c99 ${git})
set(set_gnulib -std=c99 ${gnulib})
set(set_pedantic -std=c99 -Wall -Wextra -Wpedantic -Werror)

# A program of the host, with prototypes for everything (git's and gnulib's
# -Wmissing-prototypes), including each header and using poll() by name.
file(WRITE ${WORK_DIR}/host_compat.c [=[
#include "poll.h"
int host_compat(struct pollfd *fds, nfds_t n);
int host_compat(struct pollfd *fds, nfds_t n) {
  return poll(fds, n, 0);
}
]=])
file(WRITE ${WORK_DIR}/host_dist.c [=[
#define ANYPOLL_DEFINE_POLL
#include "anypoll.h"
int host_dist(struct pollfd *fds, nfds_t n);
int host_dist(struct pollfd *fds, nfds_t n) {
  return poll(fds, n, 0) + anypoll_poll(fds, n, 0);
}
]=])

foreach(name git git-c99 gnulib pedantic)
  set(parts ${set_${name}})
  list(JOIN parts " " shown)
  message(STATUS "${name}: ${shown}")
  run(COMMAND ${CC} ${parts} ${cflags} -c dist/compat/poll.c
    -o ${name}-compat.o WORKING_DIRECTORY ${WORK_DIR})
  run(COMMAND ${CC} ${parts} ${cflags} -I dist/compat -c host_compat.c
    -o ${name}-host_compat.o WORKING_DIRECTORY ${WORK_DIR})
  run(COMMAND ${CC} ${parts} ${cflags} -c dist/anypoll.c
    -o ${name}-anypoll.o WORKING_DIRECTORY ${WORK_DIR})
  run(COMMAND ${CC} ${parts} ${cflags} -I dist -c host_dist.c
    -o ${name}-host_dist.o WORKING_DIRECTORY ${WORK_DIR})
endforeach()
message(STATUS "dist/compat/poll.c and dist/anypoll.c build under every set")
