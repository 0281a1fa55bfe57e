# SPDX-License-Identifier: MIT
# Tests of what anypoll ships rather than of how it polls: the exported
# symbols, the one-file release, the man pages, and programs outside the
# tree built against a staged install. The scripts are in tests/package/.
set(PKG_TESTS ${PROJECT_SOURCE_DIR}/tests/package)
set(PKG_WORK ${PROJECT_BINARY_DIR}/package-tests)
# Tools missing here make their tests fail with a message, not the whole
# configuration (scripts/setup-deps installs them).
find_package(Python3 COMPONENTS Interpreter)
# A list would be split into separate arguments on the test's command line.
string(REPLACE ";" "|" PKG_EMULATOR "${CMAKE_CROSSCOMPILING_EMULATOR}")
if(WIN32)
  set(PKG_FORMAT pe)
  set(PKG_EXE .exe)
  set(PKG_DIST_LIBS "-lws2_32 -static")
else()
  set(PKG_FORMAT elf)
  set(PKG_EXE "")
  set(PKG_DIST_LIBS "")
endif()

if(WIN32)
  add_test(NAME package.symbols COMMAND ${CMAKE_COMMAND}
    -DHEADER=${PROJECT_SOURCE_DIR}/include/anypoll.h -DFORMAT=pe
    -DSHARED=$<TARGET_FILE:anypoll_shared> -DOBJDUMP=${CMAKE_OBJDUMP}
    -DSTATIC=$<TARGET_FILE:anypoll> -DSTATIC_EXE=$<TARGET_FILE:anypoll_test>
    -P ${PKG_TESTS}/symbols.cmake)
else()
  add_test(NAME package.symbols COMMAND ${CMAKE_COMMAND}
    -DHEADER=${PROJECT_SOURCE_DIR}/include/anypoll.h -DFORMAT=elf
    -DSHARED=$<TARGET_FILE:anypoll_shared> -DNM=${CMAKE_NM}
    -DOBJDUMP=${CMAKE_OBJDUMP} -DSONAME=$<TARGET_SONAME_FILE_NAME:anypoll_shared>
    -P ${PKG_TESTS}/symbols.cmake)
endif()

# The one-file release, built by the compiler alone; natively also with
# clang when there is one.
set(PKG_DIST_COMPILERS ${CMAKE_C_COMPILER})
if(NOT CMAKE_CROSSCOMPILING)
  find_program(PKG_CLANG clang)
  if(PKG_CLANG)
    list(APPEND PKG_DIST_COMPILERS ${PKG_CLANG})
  endif()
endif()
foreach(cc IN LISTS PKG_DIST_COMPILERS)
  get_filename_component(cc_name ${cc} NAME_WE)
  add_test(NAME package.dist.${cc_name} COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${PKG_WORK}/dist-${cc_name}
    -DPYTHON=${Python3_EXECUTABLE} -DCC=${cc} "-DCFLAGS=${CMAKE_C_FLAGS}"
    "-DLIBS=${PKG_DIST_LIBS}" -DNM=${CMAKE_NM} -DEXE_SUFFIX=${PKG_EXE}
    "-DEMULATOR=${PKG_EMULATOR}" -P ${PKG_TESTS}/dist.cmake)
endforeach()

# The one-file releases under the warning flags of the projects that carry
# such files (git's DEVELOPER=1, gnulib's manywarnings, -std=c99 -Wpedantic).
foreach(cc IN LISTS PKG_DIST_COMPILERS)
  get_filename_component(cc_name ${cc} NAME_WE)
  add_test(NAME package.hostflags.${cc_name} COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${PKG_WORK}/hostflags-${cc_name}
    -DPYTHON=${Python3_EXECUTABLE} -DCC=${cc} "-DCFLAGS=${CMAKE_C_FLAGS}"
    -DWIN32=${WIN32} -P ${PKG_TESTS}/hostflags.cmake)
  set_tests_properties(package.hostflags.${cc_name} PROPERTIES TIMEOUT 600)
endforeach()

# The version is kept in one place (VERSION) and stated alike everywhere.
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME version.agree COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${PKG_WORK}/version
    -DPYTHON=${Python3_EXECUTABLE} -DVERSION=${PROJECT_VERSION}
    -P ${PKG_TESTS}/version.cmake)
endif()

# The man pages render without a single groff warning. They are the same
# on every target, so only native builds check them.
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME package.man COMMAND ${CMAKE_COMMAND}
    -DMAN_DIR=${PROJECT_SOURCE_DIR}/man
    -DHEADER=${PROJECT_SOURCE_DIR}/include/anypoll.h
    -DVERSION=${PROJECT_VERSION} -P ${PKG_TESTS}/man.cmake)
endif()

# A staged install, and projects outside the tree that consume it.
set(PKG_STAGE ${PKG_WORK}/stage)
add_test(NAME package.install COMMAND ${CMAKE_COMMAND}
  -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSTAGE=${PKG_STAGE}
  -DLIBDIR=${CMAKE_INSTALL_LIBDIR} -DMANDIR=${CMAKE_INSTALL_MANDIR}
  -DFORMAT=${PKG_FORMAT} -DVERSION=${PROJECT_VERSION}
  "-DEMULATOR=${PKG_EMULATOR}" -P ${PKG_TESTS}/install.cmake)
set_tests_properties(package.install PROPERTIES FIXTURES_SETUP anypoll_stage)

# The API as stated: header, man pages, the staged install and README.md's
# list agree (the same on every target, so only native builds check it).
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME package.api COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DSTAGE=${PKG_STAGE}
    -DMANDIR=${CMAKE_INSTALL_MANDIR} -P ${PKG_TESTS}/api.cmake)
  set_tests_properties(package.api PROPERTIES FIXTURES_REQUIRED anypoll_stage)
  # The docs' links and anchors resolve, and the tables docs/performance.md
  # embeds are what bench/tables.awk prints from its CSV.
  add_test(NAME docs.check COMMAND ${Python3_EXECUTABLE}
    ${PROJECT_SOURCE_DIR}/tools/check-docs.py ${PROJECT_SOURCE_DIR})
endif()

set(PKG_CONSUMER_ARGS -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DSTAGE=${PKG_STAGE}
  -DLIBDIR=${CMAKE_INSTALL_LIBDIR} -DCC=${CMAKE_C_COMPILER}
  "-DCFLAGS=${CMAKE_C_FLAGS}" -DOBJDUMP=${CMAKE_OBJDUMP}
  -DVERSION=${PROJECT_VERSION} -DFORMAT=${PKG_FORMAT} -DEXE_SUFFIX=${PKG_EXE}
  "-DEMULATOR=${PKG_EMULATOR}" "-DGENERATOR=${CMAKE_GENERATOR}"
  -DTOOLCHAIN=${CMAKE_TOOLCHAIN_FILE})

add_test(NAME package.find_package COMMAND ${CMAKE_COMMAND}
  ${PKG_CONSUMER_ARGS} -DMODE=find_package
  -DWORK_DIR=${PKG_WORK}/find_package -P ${PKG_TESTS}/find_package.cmake)
set_tests_properties(package.find_package PROPERTIES
  FIXTURES_REQUIRED anypoll_stage TIMEOUT 300)

find_program(PKG_CONFIG_EXECUTABLE NAMES pkgconf pkg-config)
add_test(NAME package.pkgconfig COMMAND ${CMAKE_COMMAND}
  ${PKG_CONSUMER_ARGS} -DPKG_CONFIG=${PKG_CONFIG_EXECUTABLE}
  -DWORK_DIR=${PKG_WORK}/pkgconfig -P ${PKG_TESTS}/pkgconfig.cmake)
set_tests_properties(package.pkgconfig PROPERTIES
  FIXTURES_REQUIRED anypoll_stage TIMEOUT 300)

if(NOT CMAKE_CROSSCOMPILING)
  # A parent project that builds anypoll from source as its subdirectory,
  # or fetches it with FetchContent (from this source tree: no network).
  foreach(mode add_subdirectory fetchcontent)
    add_test(NAME package.${mode} COMMAND ${CMAKE_COMMAND}
      ${PKG_CONSUMER_ARGS} -DMODE=${mode}
      -DWORK_DIR=${PKG_WORK}/${mode} -P ${PKG_TESTS}/find_package.cmake)
    set_tests_properties(package.${mode} PROPERTIES TIMEOUT 600)
  endforeach()
  # A Meson project with anypoll as its subproject (meson.build).
  find_program(PKG_MESON meson)
  find_program(PKG_NINJA NAMES ninja ninja-build)
  add_test(NAME package.meson COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${PKG_WORK}/meson
    -DMESON=${PKG_MESON} -DNINJA=${PKG_NINJA} -DVERSION=${PROJECT_VERSION}
    -P ${PKG_TESTS}/meson.cmake)
  set_tests_properties(package.meson PROPERTIES TIMEOUT 300)
  # meson.build names the same source files as ANYPOLL_SOURCES, for each
  # platform (a text comparison: needs neither Meson nor a Windows build).
  add_test(NAME package.meson_sources COMMAND ${CMAKE_COMMAND}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -P ${PROJECT_SOURCE_DIR}/tools/check-meson-sources.cmake)
  set_tests_properties(package.meson_sources PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "list the same sources")
endif()
