# SPDX-License-Identifier: MIT
# Builds the consumer against the staged install with nothing but the
# compiler and pkg-config, once linked with the shared library and once
# with the static one, and runs both (Windows ones through the emulator).
#   -DSTAGE=... -DLIBDIR=lib -DWORK_DIR=... -DCC=gcc -DCFLAGS=...
#   -DPKG_CONFIG=pkg-config -DOBJDUMP=objdump -DVERSION=x.y.z
#   -DFORMAT=elf|pe -DEMULATOR=a|b
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found (Debian: apt-get install pkgconf)")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
# Only the staged anypoll.pc, never one installed on the machine.
set(ENV{PKG_CONFIG_LIBDIR} ${STAGE}/${LIBDIR}/pkgconfig)
unset(ENV{PKG_CONFIG_PATH})

run(COMMAND ${PKG_CONFIG} --modversion anypoll OUTPUT_VARIABLE got)
string(STRIP "${got}" got)
if(NOT got STREQUAL VERSION)
  message(FATAL_ERROR "pkg-config --modversion anypoll: ${got}, expected ${VERSION}")
endif()
run(COMMAND ${PKG_CONFIG} --cflags anypoll OUTPUT_VARIABLE pc_cflags)
run(COMMAND ${PKG_CONFIG} --libs anypoll OUTPUT_VARIABLE pc_libs)
separate_arguments(pc_cflags UNIX_COMMAND "${pc_cflags}")
separate_arguments(pc_libs UNIX_COMMAND "${pc_libs}")
separate_arguments(cflags UNIX_COMMAND "${CFLAGS}")
set(strict -std=c11 -Wall -Wextra -Werror)
set(src ${CMAKE_CURRENT_LIST_DIR}/consumer.c)

if(FORMAT STREQUAL "pe")
  # Windows: the import library, with the DLL beside the program; and the
  # static library, which -static makes the linker take for -lanypoll.
  run(COMMAND ${PKG_CONFIG} --libs --static anypoll OUTPUT_VARIABLE pc_static)
  separate_arguments(pc_static UNIX_COMMAND "${pc_static}")
  run(COMMAND ${CC} ${strict} ${cflags} ${pc_cflags} ${src}
    -o ${WORK_DIR}/consumer_shared.exe ${pc_libs} -static-libgcc)
  file(COPY ${STAGE}/bin/libanypoll.dll DESTINATION ${WORK_DIR})
  run(COMMAND ${CC} ${strict} ${cflags} ${pc_cflags} ${src}
    -o ${WORK_DIR}/consumer_static.exe -static ${pc_static})
  foreach(kind shared static)
    run(COMMAND ${OBJDUMP} -p ${WORK_DIR}/consumer_${kind}.exe OUTPUT_VARIABLE dump)
    string(REGEX MATCHALL "DLL Name: [^\n]+" dlls "${dump}")
    if(kind STREQUAL "shared" AND NOT dlls MATCHES "libanypoll.dll")
      message(FATAL_ERROR "consumer_shared.exe does not load libanypoll.dll: ${dlls}")
    elseif(kind STREQUAL "static" AND dlls MATCHES "libanypoll")
      message(FATAL_ERROR "consumer_static.exe loads the DLL: ${dlls}")
    endif()
    run_consumer(${WORK_DIR}/consumer_${kind}.exe ${VERSION})
  endforeach()
  return()
endif()

run(COMMAND ${CC} ${strict} ${cflags} ${pc_cflags} ${src}
  -o ${WORK_DIR}/consumer_shared ${pc_libs})
elf_needed(${WORK_DIR}/consumer_shared needed)
string(REGEX MATCH "^[0-9]+" major "${VERSION}")
if(NOT "libanypoll.so.${major}" IN_LIST needed)
  message(FATAL_ERROR "consumer_shared does not load libanypoll.so.${major}: ${needed}")
endif()
set(ENV{LD_LIBRARY_PATH} ${STAGE}/${LIBDIR})
run_consumer(${WORK_DIR}/consumer_shared ${VERSION})
unset(ENV{LD_LIBRARY_PATH})

run(COMMAND ${CC} ${strict} ${cflags} ${pc_cflags} ${src}
  -o ${WORK_DIR}/consumer_static -Wl,-Bstatic ${pc_libs} -Wl,-Bdynamic)
elf_needed(${WORK_DIR}/consumer_static needed)
if(needed MATCHES "libanypoll")
  message(FATAL_ERROR "consumer_static loads the shared library: ${needed}")
endif()
run_consumer(${WORK_DIR}/consumer_static ${VERSION})
