# SPDX-License-Identifier: MIT
# Installation: headers, both libraries, man pages, anypoll.pc and the CMake
# package anypollConfig.cmake exporting anypoll::anypoll (static) and
# anypoll::anypoll_shared.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The same names for a parent project that uses add_subdirectory(anypoll)
# as for one that uses find_package(anypoll).
add_library(anypoll::anypoll ALIAS anypoll)
add_library(anypoll::anypoll_shared ALIAS anypoll_shared)

# A parent project that adds anypoll as a subdirectory decides itself
# whether anypoll goes into its own installation.
option(ANYPOLL_INSTALL "Generate anypoll's install rules" ${ANYPOLL_TOP_LEVEL})
if(NOT ANYPOLL_INSTALL)
  return()
endif()

set(ANYPOLL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/anypoll)

install(FILES ${PROJECT_SOURCE_DIR}/include/anypoll.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/anypoll/poll.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/anypoll)

install(TARGETS anypoll anypoll_shared EXPORT anypollTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(EXPORT anypollTargets NAMESPACE anypoll::
  DESTINATION ${ANYPOLL_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/anypollConfig.cmake.in
  ${PROJECT_BINARY_DIR}/anypollConfig.cmake
  INSTALL_DESTINATION ${ANYPOLL_CMAKE_DIR})
# The soname carries the major version only, so a package of the same major
# version is what a user built against may expect to work.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/anypollConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/anypollConfig.cmake
  ${PROJECT_BINARY_DIR}/anypollConfigVersion.cmake
  DESTINATION ${ANYPOLL_CMAKE_DIR})

# anypoll.pc is written at install time: `cmake --install --prefix P` may
# name another prefix than the one configured, and the file must hold the
# prefix it is actually installed under.
if(WIN32)
  set(ANYPOLL_PC_LIBS_PRIVATE "Libs.private: -lws2_32")
else()
  set(ANYPOLL_PC_LIBS_PRIVATE "")
endif()
set(ANYPOLL_PC_PREFIX "@ANYPOLL_PC_PREFIX@") # kept for the second pass
configure_file(${CMAKE_CURRENT_LIST_DIR}/anypoll.pc.in
  ${PROJECT_BINARY_DIR}/anypoll.pc.in @ONLY)
install(CODE "
  set(ANYPOLL_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/anypoll.pc.in\"
    \"${PROJECT_BINARY_DIR}/pkgconfig/anypoll.pc\" @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/anypoll.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/man/man3
  DESTINATION ${CMAKE_INSTALL_MANDIR} FILES_MATCHING PATTERN "*.3")
