# SPDX-License-Identifier: MIT
# Checks that the shared library exports exactly the public functions of
# include/anypoll.h, nothing internal, and (Windows) that linking the static
# library exports nothing from the program.
#   -DHEADER=include/anypoll.h -DFORMAT=elf|pe -DSHARED=<.so or .dll>
#   -DNM=... -DOBJDUMP=...   elf: -DSONAME=libanypoll.so.N
#   pe: -DSTATIC=libanypoll.a -DSTATIC_EXE=<a program linked with it>
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
anypoll_public_functions(${HEADER} expected)

if(FORMAT STREQUAL "elf")
  run(COMMAND ${NM} -D --defined-only ${SHARED} OUTPUT_VARIABLE dump)
  string(REGEX MATCHALL "[^\n]+" lines "${dump}")
  set(exported)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^[0-9a-f]* *([A-Za-z]) ([^ ]+)$")
      message(FATAL_ERROR "unexpected nm line: ${line}")
    endif()
    if(NOT CMAKE_MATCH_1 STREQUAL "T")
      message(FATAL_ERROR "exported symbol is not a function: ${line}")
    endif()
    list(APPEND exported ${CMAKE_MATCH_2})
  endforeach()

  run(COMMAND ${OBJDUMP} -p ${SHARED} OUTPUT_VARIABLE dump)
  if(NOT dump MATCHES "SONAME +([^\n]+)")
    message(FATAL_ERROR "${SHARED} has no SONAME")
  endif()
  if(NOT CMAKE_MATCH_1 STREQUAL SONAME)
    message(FATAL_ERROR "SONAME is ${CMAKE_MATCH_1}, expected ${SONAME}")
  endif()
elseif(FORMAT STREQUAL "pe")
  run(COMMAND ${OBJDUMP} -p ${SHARED} OUTPUT_VARIABLE dump)
  if(NOT dump MATCHES "\\[Ordinal/Name Pointer\\] Table\n(([ \t]+\\[ *[0-9]+\\] [^\n]+\n)*)")
    message(FATAL_ERROR "${SHARED} has no export name table")
  endif()
  # Brackets would upset CMake's list splitting: drop the "[   N] " first.
  string(REGEX REPLACE "[ \t]*\\[ *[0-9]+\\] " "" names "${CMAKE_MATCH_1}")
  string(REGEX MATCHALL "[^\n]+" exported "${names}")

  # A dllexport in an object of the static library becomes an -export:
  # directive (.drectve) that every program or DLL linking it would obey.
  file(STRINGS ${STATIC} directives REGEX "-export:")
  if(directives)
    message(FATAL_ERROR "${STATIC} carries export directives: ${directives}")
  endif()
  run(COMMAND ${OBJDUMP} -p ${STATIC_EXE} OUTPUT_VARIABLE dump)
  if(dump MATCHES "Ordinal/Name Pointer")
    message(FATAL_ERROR "${STATIC_EXE}, linked with the static library, exports symbols")
  endif()
else()
  message(FATAL_ERROR "FORMAT must be elf or pe")
endif()

list(SORT exported)
if(NOT exported STREQUAL expected)
  message(FATAL_ERROR "${SHARED} exports\n  ${exported}\nexpected exactly\n  ${expected}")
endif()
message(STATUS "${SHARED} exports exactly: ${exported}")
