# SPDX-License-Identifier: MIT
cmake_minimum_required(VERSION 3.16)
# Helpers shared by the packaging test scripts (run with cmake -P).

# The public functions: every anypoll_* function that include/anypoll.h
# declares ANYPOLL_EXTERN, sorted.
function(anypoll_public_functions header out)
  file(READ ${header} text)
  string(REGEX MATCHALL "ANYPOLL_EXTERN[^;]*[ *](anypoll_[a-z0-9_]+)[ ]*\\("
    decls "${text}")
  set(names)
  foreach(decl IN LISTS decls)
    string(REGEX REPLACE ".*[ *](anypoll_[a-z0-9_]+)[ ]*\\($" "\\1" name "${decl}")
    list(APPEND names ${name})
  endforeach()
  list(SORT names)
  if(NOT names)
    message(FATAL_ERROR "no public functions found in ${header}")
  endif()
  set(${out} ${names} PARENT_SCOPE)
endfunction()

# Runs a command; fails the test with its output unless it exits 0.
# The output goes to the variable named by OUTPUT_VARIABLE when given.
function(run)
  cmake_parse_arguments(R "" "OUTPUT_VARIABLE;WORKING_DIRECTORY" "COMMAND" ${ARGN})
  if(NOT R_WORKING_DIRECTORY)
    set(R_WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  execute_process(COMMAND ${R_COMMAND} WORKING_DIRECTORY ${R_WORKING_DIRECTORY}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(JOIN R_COMMAND " " cmd)
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}${err}")
  endif()
  if(R_OUTPUT_VARIABLE)
    set(${R_OUTPUT_VARIABLE} "${out}" PARENT_SCOPE)
  endif()
endfunction()

# Runs the consumer program (through the emulator, given as a |-separated
# list, when cross-compiled) and checks its exact output.
# The output goes through a file, not a pipe: when this run is the one that
# starts the wineserver, Wine's services inherit its stdout and keep a pipe
# open for as long as they live, so reading the pipe to EOF would wait for
# them (seen in CI: a 300 s timeout).
function(run_consumer exe version)
  string(REPLACE "|" ";" emulator "${EMULATOR}")
  set(file ${exe}.out)
  execute_process(COMMAND ${emulator} ${exe} RESULT_VARIABLE rc
    OUTPUT_FILE ${file} ERROR_FILE ${file}.err)
  file(READ ${file} out)
  if(NOT rc EQUAL 0)
    file(READ ${file}.err err)
    message(FATAL_ERROR "failed (${rc}): ${exe}\n${out}${err}")
  endif()
  string(REPLACE "\r" "" out "${out}")
  if(NOT out STREQUAL "consumer ok ${version}\n")
    message(FATAL_ERROR "${exe}: unexpected output:\n${out}")
  endif()
  message(STATUS "${exe}: ${out}")
endfunction()

# The DT_NEEDED entries of an ELF file.
function(elf_needed file out)
  run(COMMAND ${OBJDUMP} -p ${file} OUTPUT_VARIABLE dump)
  string(REGEX MATCHALL "NEEDED +[^\n]+" lines "${dump}")
  list(TRANSFORM lines REPLACE "NEEDED +" "")
  set(${out} ${lines} PARENT_SCOPE)
endfunction()
