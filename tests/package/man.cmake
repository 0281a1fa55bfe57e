# SPDX-License-Identifier: MIT
# Renders every man page with groff (all warnings on) and with man -l, and
# fails on any diagnostic. Pages are rendered from MAN_DIR so that the .so
# links (man3/...) resolve as they do in an installed man hierarchy.
#   -DMAN_DIR=.../man -DVERSION=x.y.z [-DHEADER=include/anypoll.h]
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(GLOB pages RELATIVE ${MAN_DIR} ${MAN_DIR}/man3/*.3 ${MAN_DIR}/man1/*.1)
list(LENGTH pages count)
if(count LESS 6)
  message(FATAL_ERROR "expected at least 6 man pages, found ${count}: ${pages}")
endif()
if(NOT "man1/pollcat.1" IN_LIST pages)
  message(FATAL_ERROR "no pollcat(1) page: ${pages}")
endif()
# Every public function has its page (or a .so link to the page that
# describes it).
if(HEADER)
  anypoll_public_functions(${HEADER} functions)
  foreach(f IN LISTS functions)
    if(NOT "man3/${f}.3" IN_LIST pages)
      message(FATAL_ERROR "no man page man3/${f}.3 for ${f}")
    endif()
  endforeach()
endif()
set(ENV{MANPAGER} cat)
set(ENV{PAGER} cat)
set(ENV{MANWIDTH} 80)
set(ENV{LC_ALL} C.UTF-8)
foreach(page IN LISTS pages)
  # A page is either a .so link or a whole page of this version.
  file(STRINGS ${MAN_DIR}/${page} first LIMIT_COUNT 1)
  if(NOT first MATCHES "^\\.so man3/" AND
     NOT first MATCHES "^\\.TH [A-Z_]+ [13] [0-9-]+ \"anypoll ${VERSION}\" ")
    message(FATAL_ERROR "${page}: not a page of anypoll ${VERSION}: ${first}")
  endif()
  foreach(renderer groff man)
    if(renderer STREQUAL "groff")
      set(cmd groff -man -ww -Tutf8 -z ${page})
    else()
      set(cmd man --warnings=w -E UTF-8 -l ${page})
    endif()
    execute_process(COMMAND ${cmd} WORKING_DIRECTORY ${MAN_DIR}
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
      message(FATAL_ERROR "${renderer} ${page}: exit ${rc}\n${err}")
    endif()
    if(renderer STREQUAL "man" AND NOT out MATCHES "NAME")
      message(FATAL_ERROR "man -l ${page} rendered no NAME section:\n${out}")
    endif()
  endforeach()
  message(STATUS "${page}: no warnings")
endforeach()
