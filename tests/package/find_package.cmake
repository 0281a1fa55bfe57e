# SPDX-License-Identifier: MIT
# Configures, builds and runs the consumer project of tests/package/cmake
# against the staged install (MODE=find_package), with anypoll's source
# tree as a subdirectory (MODE=add_subdirectory) or fetched by FetchContent
# from the local tree (MODE=fetchcontent). As a subproject, anypoll must
# build its libraries only, add no -Werror to its own compilation, and take
# none of the host's target names, also with its tools, benchmarks and
# tests on.
#   -DMODE=... -DSTAGE=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#   -DCC=... -DCFLAGS=... -DTOOLCHAIN=... -DEMULATOR=a|b -DOBJDUMP=...
#   -DEXE_SUFFIX=.exe -DVERSION=x.y.z -DFORMAT=elf|pe
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
set(args -S ${CMAKE_CURRENT_LIST_DIR}/cmake -B ${WORK_DIR} -G ${GENERATOR}
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS=${CFLAGS}"
  -DANYPOLL_USE=${MODE} -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
if(TOOLCHAIN)
  list(APPEND args -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN})
else()
  list(APPEND args -DCMAKE_C_COMPILER=${CC})
endif()
if(MODE STREQUAL "find_package")
  list(APPEND args -DCMAKE_PREFIX_PATH=${STAGE})
elseif(MODE STREQUAL "add_subdirectory")
  list(APPEND args -DANYPOLL_SOURCE_DIR=${SOURCE_DIR})
else()
  list(APPEND args -DFETCHCONTENT_SOURCE_DIR_ANYPOLL=${SOURCE_DIR}
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON)
endif()
run(COMMAND ${CMAKE_COMMAND} ${args})
run(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR})

if(NOT MODE STREQUAL "find_package")
  # Only the libraries: none of anypoll's programs was built.
  file(GLOB_RECURSE programs ${WORK_DIR}/*/pollcat${EXE_SUFFIX}
    ${WORK_DIR}/*/demo${EXE_SUFFIX} ${WORK_DIR}/*/timeouts${EXE_SUFFIX}
    ${WORK_DIR}/*/anypoll_test${EXE_SUFFIX} ${WORK_DIR}/*/relay${EXE_SUFFIX})
  if(programs)
    message(FATAL_ERROR "the subproject built programs: ${programs}")
  endif()
  # anypoll's sources compiled with warnings, but never as errors (the
  # host's -Werror comes after add_subdirectory and applies to its own
  # code only).
  file(READ ${WORK_DIR}/compile_commands.json commands)
  string(REGEX MATCHALL "\"command\": \"[^\"]*src/anypoll\\.c\"" lib "${commands}")
  if(NOT lib)
    message(FATAL_ERROR "no compile command for anypoll's src/anypoll.c")
  endif()
  if(lib MATCHES "-Werror")
    message(FATAL_ERROR "anypoll forces -Werror on its host: ${lib}")
  endif()
  # Everything on: still no clash with the host's targets (a clash is a
  # configure error), and the programs build.
  run(COMMAND ${CMAKE_COMMAND} -DANYPOLL_BUILD_TOOLS=ON
    -DANYPOLL_BUILD_BENCH=ON -DANYPOLL_BUILD_TESTS=ON ${WORK_DIR})
  run(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR} --target anypoll_pollcat
    anypoll_timeouts anypoll_demo anypoll_bench_relay)
endif()

foreach(kind static shared)
  set(exe ${WORK_DIR}/consumer_${kind}${EXE_SUFFIX})
  if(FORMAT STREQUAL "elf")
    elf_needed(${exe} needed)
    string(REGEX MATCH "^[0-9]+" major "${VERSION}")
    if(kind STREQUAL "shared" AND NOT "libanypoll.so.${major}" IN_LIST needed)
      message(FATAL_ERROR "${exe} does not load libanypoll.so.${major}: ${needed}")
    elseif(kind STREQUAL "static" AND needed MATCHES "libanypoll")
      message(FATAL_ERROR "${exe} loads the shared library: ${needed}")
    endif()
  else()
    run(COMMAND ${OBJDUMP} -p ${exe} OUTPUT_VARIABLE dump)
    string(REGEX MATCHALL "DLL Name: [^\n]+" dlls "${dump}")
    if(kind STREQUAL "shared" AND NOT dlls MATCHES "libanypoll.dll")
      message(FATAL_ERROR "${exe} does not load libanypoll.dll: ${dlls}")
    elseif(kind STREQUAL "static" AND dlls MATCHES "libanypoll")
      message(FATAL_ERROR "${exe} loads the DLL: ${dlls}")
    endif()
  endif()
  run_consumer(${exe} ${VERSION})
endforeach()
