# SPDX-License-Identifier: MIT
# The version is kept in VERSION alone; everything that states it must
# agree: CMake's project version (passed as VERSION), include/anypoll.h's
# ANYPOLL_VERSION_* macros, CHANGELOG.md's latest release, README.md and the
# one-file releases (tools/amalgamate.py stamps VERSION into them). The man
# pages (package.man), pkg-config (package.pkgconfig), the CMake package
# (package.find_package) and Meson (package.meson) check their own against
# the same VERSION.
#   -DSOURCE_DIR=... -DWORK_DIR=... -DPYTHON=python3 -DVERSION=x.y.z
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(STRINGS ${SOURCE_DIR}/VERSION file_version LIMIT_COUNT 1)
if(NOT file_version STREQUAL VERSION)
  message(FATAL_ERROR "VERSION says ${file_version}, CMake's project ${VERSION}")
endif()

file(READ ${SOURCE_DIR}/include/anypoll.h header)
set(parts)
foreach(part MAJOR MINOR PATCH)
  if(NOT header MATCHES "#define ANYPOLL_VERSION_${part} ([0-9]+)\n")
    message(FATAL_ERROR "include/anypoll.h has no ANYPOLL_VERSION_${part}")
  endif()
  list(APPEND parts ${CMAKE_MATCH_1})
endforeach()
list(JOIN parts "." macros)
if(NOT macros STREQUAL VERSION)
  message(FATAL_ERROR "include/anypoll.h's ANYPOLL_VERSION_MAJOR/MINOR/PATCH "
    "say ${macros}, VERSION says ${VERSION}")
endif()
if(NOT header MATCHES "#define ANYPOLL_VERSION_STRING \"([^\"]*)\"")
  message(FATAL_ERROR "include/anypoll.h has no ANYPOLL_VERSION_STRING")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL VERSION)
  message(FATAL_ERROR "ANYPOLL_VERSION_STRING is \"${CMAKE_MATCH_1}\", VERSION says ${VERSION}")
endif()

# The latest release in CHANGELOG.md (the first "## [x.y.z]" heading after
# "## [Unreleased]") is this version.
file(STRINGS ${SOURCE_DIR}/CHANGELOG.md headings REGEX "^## \\[[0-9]+\\.[0-9]+\\.[0-9]+\\]")
list(GET headings 0 latest)
string(REGEX REPLACE "^## \\[([^]]+)\\].*" "\\1" latest "${latest}")
if(NOT latest STREQUAL VERSION)
  message(FATAL_ERROR "CHANGELOG.md's latest release is ${latest}, VERSION says ${VERSION}")
endif()

# The README's first screen names the current version.
file(READ ${SOURCE_DIR}/README.md readme)
string(FIND "${readme}" "**Version ${VERSION}**" at)
if(at LESS 0)
  message(FATAL_ERROR "README.md does not say **Version ${VERSION}**")
endif()

file(REMOVE_RECURSE ${WORK_DIR})
run(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/amalgamate.py ${WORK_DIR}/dist)
foreach(f anypoll.c anypoll.h compat/poll.c compat/poll.h)
  file(READ ${WORK_DIR}/dist/${f} text)
  if(NOT text MATCHES "^/\\* SPDX-License-Identifier: MIT\n")
    message(FATAL_ERROR "dist/${f} does not start with the licence notice")
  endif()
  if(NOT text MATCHES "Permission is hereby granted")
    message(FATAL_ERROR "dist/${f} lacks the MIT licence text")
  endif()
  if(NOT text MATCHES "anypoll ${VERSION}[:,]")
    message(FATAL_ERROR "dist/${f} does not name anypoll ${VERSION}")
  endif()
endforeach()
message(STATUS "VERSION, CMake, anypoll.h, CHANGELOG.md and dist/ all say ${VERSION}")
