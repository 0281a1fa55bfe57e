# SPDX-License-Identifier: MIT
# The fixture of the package tests: a fresh install of the build tree into
# a staging prefix, checked file by file against what the package promises.
#   -DBUILD_DIR=... -DSTAGE=... -DLIBDIR=lib -DMANDIR=share/man
#   -DFORMAT=elf|pe -DVERSION=x.y.z
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${STAGE})
run(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${STAGE})

string(REGEX MATCH "^[0-9]+" major "${VERSION}")
set(files
  include/anypoll.h include/anypoll/poll.h
  ${LIBDIR}/libanypoll.a ${LIBDIR}/pkgconfig/anypoll.pc
  ${LIBDIR}/cmake/anypoll/anypollConfig.cmake
  ${LIBDIR}/cmake/anypoll/anypollConfigVersion.cmake
  ${LIBDIR}/cmake/anypoll/anypollTargets.cmake
  ${MANDIR}/man3/anypoll_poll.3 ${MANDIR}/man3/anypoll_poll_with.3
  ${MANDIR}/man3/anypoll_backend_name.3 ${MANDIR}/man3/anypoll_backend_from_name.3
  ${MANDIR}/man3/anypoll_version.3 ${MANDIR}/man3/anypoll_set.3
  ${MANDIR}/man3/anypoll_set_wait.3 ${MANDIR}/man3/anypoll_pipe.3
  ${MANDIR}/man3/anypoll_read.3 ${MANDIR}/man3/anypoll_write.3
  ${MANDIR}/man3/anypoll_close.3
  ${MANDIR}/man3/anypoll_spawn.3 ${MANDIR}/man3/anypoll_proc_wait.3
  ${MANDIR}/man3/anypoll_proc_kill.3 ${MANDIR}/man3/anypoll_proc_pid.3
  ${MANDIR}/man1/pollcat.1)
if(FORMAT STREQUAL "pe")
  list(APPEND files bin/libanypoll.dll ${LIBDIR}/libanypoll.dll.a
    bin/pollcat.exe)
else()
  list(APPEND files bin/pollcat)
  list(APPEND files ${LIBDIR}/libanypoll.so.${VERSION})
  foreach(link libanypoll.so.${major} libanypoll.so)
    if(NOT IS_SYMLINK ${STAGE}/${LIBDIR}/${link})
      message(FATAL_ERROR "${LIBDIR}/${link} is not a symbolic link")
    endif()
  endforeach()
endif()
foreach(f IN LISTS files)
  if(NOT EXISTS ${STAGE}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

# The installed pollcat runs (under the emulator for a cross build) and is
# of this version.
if(EMULATOR)
  string(REPLACE "|" ";" emulator "${EMULATOR}")
endif()
if(FORMAT STREQUAL "pe")
  set(pollcat ${STAGE}/bin/pollcat.exe)
else()
  set(pollcat ${STAGE}/bin/pollcat)
endif()
execute_process(COMMAND ${emulator} ${pollcat} --version
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^pollcat ${VERSION} \\(anypoll ${VERSION}\\)")
  message(FATAL_ERROR "installed pollcat --version: exit ${rc}: ${out}${err}")
endif()

# The pkg-config file names the prefix given to cmake --install, not the
# one configured.
file(STRINGS ${STAGE}/${LIBDIR}/pkgconfig/anypoll.pc prefix REGEX "^prefix=")
if(NOT prefix STREQUAL "prefix=${STAGE}")
  message(FATAL_ERROR "anypoll.pc has ${prefix}, expected prefix=${STAGE}")
endif()
