# SPDX-License-Identifier: MIT
# anypoll as the subproject of a Meson project (tests/package/meson/):
# configures, builds and runs it, with Debian's meson and ninja.
#   -DSOURCE_DIR=... -DWORK_DIR=... -DMESON=meson -DNINJA=ninja -DVERSION=x.y.z
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
if(NOT MESON OR NOT NINJA)
  message(FATAL_ERROR "meson or ninja not found (Debian: apt-get install meson ninja-build)")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/host/subprojects)
configure_file(${CMAKE_CURRENT_LIST_DIR}/meson/meson.build.in
  ${WORK_DIR}/host/meson.build @ONLY)
file(COPY ${CMAKE_CURRENT_LIST_DIR}/consumer.c DESTINATION ${WORK_DIR}/host)
file(CREATE_LINK ${SOURCE_DIR} ${WORK_DIR}/host/subprojects/anypoll SYMBOLIC)
get_filename_component(ninja_dir ${NINJA} DIRECTORY)
set(ENV{PATH} "${ninja_dir}:$ENV{PATH}")
run(COMMAND ${MESON} setup ${WORK_DIR}/build ${WORK_DIR}/host
  --wrap-mode=nodownload)
run(COMMAND ${MESON} compile -C ${WORK_DIR}/build)
run_consumer(${WORK_DIR}/build/consumer ${VERSION})
