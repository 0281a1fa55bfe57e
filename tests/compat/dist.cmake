# SPDX-License-Identifier: MIT
# The gnulib-ABI pair as `make amalgamate` writes it: exactly compat/poll.c
# and compat/poll.h, compiled by the compiler alone, strictly and with the
# flags git's Windows build uses, with one external name: poll (rpl_poll
# outside Windows, as gnulib names a replaced poll).
#   -DSOURCE_DIR=... -DWORK_DIR=... -DPYTHON=python3 -DCC=gcc -DCFLAGS=...
#   -DNM=... -DSYMBOL=poll|rpl_poll
include(${CMAKE_CURRENT_LIST_DIR}/../package/common.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
run(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/amalgamate.py ${WORK_DIR}/dist)
file(GLOB produced RELATIVE ${WORK_DIR}/dist/compat ${WORK_DIR}/dist/compat/*)
list(SORT produced)
if(NOT produced STREQUAL "poll.c;poll.h")
  message(FATAL_ERROR "dist/compat holds ${produced}, expected poll.c and poll.h")
endif()

separate_arguments(cflags UNIX_COMMAND "${CFLAGS}")
set(builds
  "-std=c11 -Wall -Wextra -Werror"
  # git's Makefile: CFLAGS -g -O2 -Wall, gnu99 before 2.40, -DWIN32 and
  # -DNOGDI for mingw.
  "-std=gnu99 -g -O2 -Wall -Werror -DWIN32 -DNOGDI")
set(n 0)
foreach(build IN LISTS builds)
  separate_arguments(flags UNIX_COMMAND "${build}")
  run(COMMAND ${CC} ${flags} ${cflags} -c ${WORK_DIR}/dist/compat/poll.c
    -o ${WORK_DIR}/poll${n}.o)
  run(COMMAND ${NM} --defined-only -g ${WORK_DIR}/poll${n}.o
    OUTPUT_VARIABLE dump)
  string(REGEX MATCHALL "[^\n]+" entries "${dump}")
  set(names)
  foreach(entry IN LISTS entries)
    string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] " "" name "${entry}")
    list(APPEND names ${name})
  endforeach()
  if(NOT names STREQUAL SYMBOL)
    message(FATAL_ERROR "dist/compat/poll.c (${build}) defines the external "
      "symbols\n  ${names}\nexpected exactly\n  ${SYMBOL}")
  endif()
  math(EXPR n "${n} + 1")
endforeach()
message(STATUS "dist/compat/poll.c defines exactly: ${SYMBOL}")
