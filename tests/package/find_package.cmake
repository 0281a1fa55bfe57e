# Configures, builds and runs the consumer project of tests/package/cmake
# against the staged install (MODE=find_package) or with anypoll's source
# tree as a subdirectory (MODE=add_subdirectory).
#   -DMODE=... -DSTAGE=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#   -DCC=... -DCFLAGS=... -DTOOLCHAIN=... -DEMULATOR=a|b -DOBJDUMP=...
#   -DEXE_SUFFIX=.exe -DVERSION=x.y.z -DFORMAT=elf|pe
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
set(args -S ${CMAKE_CURRENT_LIST_DIR}/cmake -B ${WORK_DIR} -G ${GENERATOR}
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS=${CFLAGS}"
  -DANYPOLL_USE=${MODE})
if(TOOLCHAIN)
  list(APPEND args -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN})
else()
  list(APPEND args -DCMAKE_C_COMPILER=${CC})
endif()
if(MODE STREQUAL "find_package")
  list(APPEND args -DCMAKE_PREFIX_PATH=${STAGE})
else()
  list(APPEND args -DANYPOLL_SOURCE_DIR=${SOURCE_DIR})
endif()
run(COMMAND ${CMAKE_COMMAND} ${args})
run(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR})

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
