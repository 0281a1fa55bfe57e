# SPDX-License-Identifier: MIT
# meson.build and CMakeLists.txt must build the library from the same
# files: the common list and each platform's. Both name them by hand, and
# meson.build once went without the watch set's files for months of
# changes, so this compares them as text (neither build is configured:
# the Windows lists are checked on Linux too).
#   cmake -DSOURCE_DIR=... -P tools/check-meson-sources.cmake
# The lists it reads, in each file: the first assignment of the library's
# sources (CMake: set(ANYPOLL_SOURCES ...); Meson: sources = files(...)),
# then the first top-level if/else/endif after it, whose branches are
# Windows and POSIX. Every src/...c name in a branch belongs to it.
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<anypoll> -P check-meson-sources.cmake")
endif()

# Sets <out>_common, <out>_windows, <out>_posix from text, given the
# markers of the common assignment's start, and of the platform block's
# if, else and endif (each at the start of a line).
function(split_lists text common_start if_mark else_mark endif_mark out)
  string(FIND "${text}" "${common_start}" c0)
  if(c0 LESS 0)
    message(FATAL_ERROR "${out}: '${common_start}' not found")
  endif()
  string(SUBSTRING "${text}" ${c0} -1 rest)
  string(FIND "${rest}" ")" c1)
  string(SUBSTRING "${rest}" 0 ${c1} common)
  string(FIND "${rest}" "\n${if_mark}\n" i0)
  if(i0 LESS 0)
    message(FATAL_ERROR "${out}: '${if_mark}' not found after the sources")
  endif()
  string(SUBSTRING "${rest}" ${i0} -1 rest)
  string(FIND "${rest}" "\n${else_mark}\n" e0)
  string(FIND "${rest}" "\n${endif_mark}\n" f0)
  if(e0 LESS 0 OR f0 LESS e0)
    message(FATAL_ERROR "${out}: no '${else_mark}' ... '${endif_mark}' after '${if_mark}'")
  endif()
  string(SUBSTRING "${rest}" 0 ${e0} windows)
  math(EXPR plen "${f0} - ${e0}")
  string(SUBSTRING "${rest}" ${e0} ${plen} posix)
  foreach(part common windows posix)
    # Names in comments are not sources.
    string(REGEX REPLACE "#[^\n]*" "" ${part} "${${part}}")
    string(REGEX MATCHALL "src/[A-Za-z0-9_/]+\\.c" names "${${part}}")
    list(SORT names)
    set(${out}_${part} "${names}" PARENT_SCOPE)
  endforeach()
endfunction()

file(READ ${SOURCE_DIR}/CMakeLists.txt cmake_text)
file(READ ${SOURCE_DIR}/meson.build meson_text)
split_lists("${cmake_text}" "set(ANYPOLL_SOURCES " "if(WIN32)" "else()"
  "endif()" cmake)
split_lists("${meson_text}" "sources = files(" "if windows" "else" "endif"
  meson)

set(failed 0)
foreach(part common windows posix)
  if(NOT cmake_${part})
    message(SEND_ERROR "CMakeLists.txt: no ${part} sources found")
    set(failed 1)
  endif()
  set(only_cmake ${cmake_${part}})
  set(only_meson ${meson_${part}})
  if(meson_${part})
    list(REMOVE_ITEM only_cmake ${meson_${part}})
  endif()
  if(cmake_${part})
    list(REMOVE_ITEM only_meson ${cmake_${part}})
  endif()
  if(only_cmake)
    message(SEND_ERROR "${part}: in CMakeLists.txt's ANYPOLL_SOURCES but not in meson.build: ${only_cmake}")
    set(failed 1)
  endif()
  if(only_meson)
    message(SEND_ERROR "${part}: in meson.build but not in CMakeLists.txt's ANYPOLL_SOURCES: ${only_meson}")
    set(failed 1)
  endif()
  foreach(f IN LISTS cmake_${part})
    if(NOT EXISTS ${SOURCE_DIR}/${f})
      message(SEND_ERROR "${part}: ${f} is listed but does not exist")
      set(failed 1)
    endif()
  endforeach()
  list(LENGTH cmake_${part} n)
  message(STATUS "${part}: ${n} files")
endforeach()
if(failed)
  message(FATAL_ERROR "meson.build and CMakeLists.txt list different sources")
endif()
message(STATUS "meson.build and CMakeLists.txt list the same sources")
