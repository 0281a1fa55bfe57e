# SPDX-License-Identifier: MIT
# Builds the one-file release and a program from it alone, with one
# compiler and no build system, then runs the program.
#   -DSOURCE_DIR=... -DWORK_DIR=... -DPYTHON=python3 -DCC=gcc -DCFLAGS=...
#   -DLIBS=... -DNM=... -DEMULATOR=a|b (cross builds)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
if(NOT PYTHON)
  message(FATAL_ERROR "python3 not found (Debian: apt-get install python3)")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
run(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/amalgamate.py ${WORK_DIR}/dist)
file(GLOB produced RELATIVE ${WORK_DIR}/dist ${WORK_DIR}/dist/*)
list(SORT produced)
# compat/: the gnulib-ABI pair, tested by tests/compat/dist.cmake.
if(NOT produced STREQUAL "anypoll.c;anypoll.h;compat")
  message(FATAL_ERROR "dist/ holds ${produced}, expected anypoll.c, anypoll.h and compat/")
endif()

separate_arguments(cflags UNIX_COMMAND "${CFLAGS}")
separate_arguments(libs UNIX_COMMAND "${LIBS}")
set(strict -std=c11 -Wall -Wextra -Werror)

# Only the public functions may have external linkage in the bundle.
run(COMMAND ${CC} ${strict} ${cflags} -c ${WORK_DIR}/dist/anypoll.c
  -o ${WORK_DIR}/anypoll.o)
run(COMMAND ${NM} --defined-only -g ${WORK_DIR}/anypoll.o OUTPUT_VARIABLE dump)
string(REGEX MATCHALL "[^\n]+" entries "${dump}")
set(lines)
foreach(entry IN LISTS entries)
  string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] " "" name "${entry}")
  list(APPEND lines ${name})
endforeach()
list(SORT lines)
anypoll_public_functions(${SOURCE_DIR}/include/anypoll.h expected)
if(NOT lines STREQUAL expected)
  message(FATAL_ERROR "dist/anypoll.c defines the external symbols\n  ${lines}\nexpected exactly\n  ${expected}")
endif()

file(COPY ${CMAKE_CURRENT_LIST_DIR}/consumer.c DESTINATION ${WORK_DIR})
run(COMMAND ${CC} ${strict} ${cflags} -DCONSUMER_DIST -I dist
  consumer.c dist/anypoll.c -o consumer${EXE_SUFFIX} ${libs}
  WORKING_DIRECTORY ${WORK_DIR})
file(READ ${WORK_DIR}/dist/anypoll.h header)
string(REGEX MATCH "#define ANYPOLL_VERSION_STRING \"([^\"]+)\"" _ "${header}")
set(version ${CMAKE_MATCH_1})
run_consumer(${WORK_DIR}/consumer${EXE_SUFFIX} ${version})

# The same with the drop-in poll() names that <anypoll/poll.h> gives.
run(COMMAND ${CC} ${strict} ${cflags} -DCONSUMER_DIST -DANYPOLL_DEFINE_POLL
  -DCONSUMER_POLL_MACRO -I dist consumer.c dist/anypoll.c
  -o consumer_poll${EXE_SUFFIX} ${libs}
  WORKING_DIRECTORY ${WORK_DIR})
run_consumer(${WORK_DIR}/consumer_poll${EXE_SUFFIX} ${version})
