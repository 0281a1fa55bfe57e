# SPDX-License-Identifier: MIT
# The public API, stated alike everywhere: every function that
# include/anypoll.h declares ANYPOLL_EXTERN has a man page in man/man3 (a
# page, or a .so link to the page that documents it), every page there
# documents only such functions, every page is installed (the staged
# install of package.install), and README.md's API list names exactly the
# pages of man/man3. The exports are package.symbols' business (the same
# function list). A failure says which file and line to change.
#   -DSOURCE_DIR=... -DSTAGE=... -DMANDIR=share/man
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
set(header ${SOURCE_DIR}/include/anypoll.h)
anypoll_public_functions(${header} functions)
set(errors)

# The pages of man/man3, by name (anypoll_set_add for anypoll_set_add.3).
file(GLOB page_files RELATIVE ${SOURCE_DIR}/man/man3 ${SOURCE_DIR}/man/man3/*.3)
set(pages)
foreach(f IN LISTS page_files)
  string(REGEX REPLACE "\\.3$" "" name "${f}")
  list(APPEND pages ${name})
endforeach()
list(SORT pages)

foreach(fn IN LISTS functions)
  if(NOT fn IN_LIST pages)
    list(APPEND errors "include/anypoll.h declares ${fn} but man/man3/${fn}.3 "
      "does not exist: write the page, or a one-line '.so man3/PAGE.3' link to "
      "the page that documents it\n")
  endif()
endforeach()

# What each page documents: a .so link names its target, which must exist;
# a whole page names its functions in its NAME section, and each must be
# declared by the header (an overview page such as anypoll_set.3 is a page
# whose own name is not a function).
foreach(page IN LISTS pages)
  file(READ ${SOURCE_DIR}/man/man3/${page}.3 text)
  if(text MATCHES "^\\.so man3/([^\n]+)\n")
    if(NOT EXISTS ${SOURCE_DIR}/man/man3/${CMAKE_MATCH_1})
      list(APPEND errors "man/man3/${page}.3 links to ${CMAKE_MATCH_1}, which does not exist\n")
    endif()
    continue()
  endif()
  if(NOT text MATCHES "\n\\.SH NAME\n([^\n]*(\n[^.][^\n]*)*)")
    list(APPEND errors "man/man3/${page}.3 has no NAME section\n")
    continue()
  endif()
  string(REGEX REPLACE "\\\\-.*" "" names "${CMAKE_MATCH_1}")
  string(REGEX MATCHALL "anypoll_[a-z0-9_]+" names "${names}")
  foreach(name IN LISTS names)
    if(NOT name IN_LIST functions)
      list(APPEND errors "man/man3/${page}.3 documents ${name} (its NAME "
        "section), which include/anypoll.h does not declare ANYPOLL_EXTERN\n")
    endif()
  endforeach()
endforeach()

# Installed: every page, from the staged install (cmake/Install.cmake
# installs the directory man/man3).
foreach(page IN LISTS pages)
  if(NOT EXISTS ${STAGE}/${MANDIR}/man3/${page}.3)
    list(APPEND errors "man/man3/${page}.3 is not installed (no "
      "${MANDIR}/man3/${page}.3 under the staged prefix ${STAGE}): see "
      "cmake/Install.cmake\n")
  endif()
endforeach()

# README.md: the API list between "<!-- api-list" and "<!-- api-list end -->"
# names every page of man/man3 as NAME(3), once, and nothing else. Read
# line by line; ';' and brackets would upset CMake's lists, so they go.
file(READ ${SOURCE_DIR}/README.md readme)
string(REGEX REPLACE "[][;]" "." readme "${readme}")
string(REPLACE "\n" ";" lines "${readme}")
set(n 0)
set(begin 0)
set(end 0)
set(listed)
foreach(line IN LISTS lines)
  math(EXPR n "${n} + 1")
  if(line MATCHES "^<!-- api-list end")
    set(end ${n})
  elseif(line MATCHES "^<!-- api-list")
    set(begin ${n})
  elseif(begin AND NOT end)
    string(REGEX MATCHALL "anypoll_[a-z0-9_]+\\(3\\)" refs "${line}")
    foreach(ref IN LISTS refs)
      string(REPLACE "(3)" "" ref "${ref}")
      if(ref IN_LIST listed)
        list(APPEND errors "README.md:${n}: ${ref}(3) is named twice in the API list\n")
      endif()
      list(APPEND listed ${ref})
      if(NOT ref IN_LIST pages)
        list(APPEND errors "README.md:${n}: the API list names ${ref}(3), but "
          "man/man3/${ref}.3 does not exist: take it out of the list\n")
      endif()
    endforeach()
  endif()
endforeach()
if(NOT begin OR NOT end)
  list(APPEND errors "README.md has no API list: the lines '<!-- api-list ...' "
    "and '<!-- api-list end -->' around it are missing\n")
else()
  foreach(page IN LISTS pages)
    if(NOT page IN_LIST listed)
      list(APPEND errors "README.md:${end}: the API list (lines ${begin} to "
        "${end}) lacks ${page}(3): add `${page}(3)` to it, in its group\n")
    endif()
  endforeach()
endif()

# A count in README.md ("the five anypoll_* functions", "16 man pages")
# goes stale when the API grows: any that is there must be right.
list(LENGTH functions nfunctions)
list(LENGTH pages npages)
string(TOLOWER "${readme}" lower)
set(words one two three four five six seven eight nine ten eleven twelve
  thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty
  twenty-one twenty-two twenty-three twenty-four twenty-five)
string(REGEX MATCHALL "(^|[^a-z0-9-])([0-9]+|[a-z]+(-[a-z]+)?) +(public |`anypoll_\\*` |anypoll_\\* )?(functions|man pages)"
  counts "${lower}")
foreach(count IN LISTS counts)
  if(NOT count MATCHES "([0-9]+|[a-z]+(-[a-z]+)?) +(public |`anypoll_\\*` |anypoll_\\* )?(functions|man pages)$")
    continue()
  endif()
  set(number ${CMAKE_MATCH_1})
  set(what ${CMAKE_MATCH_4})
  list(FIND words "${number}" index)
  if(index GREATER_EQUAL 0)
    math(EXPR number "${index} + 1")
  elseif(NOT number MATCHES "^[0-9]+$")
    continue()
  endif()
  if(what STREQUAL "functions")
    set(expected ${nfunctions})
  else()
    set(expected ${npages})
  endif()
  if(NOT number EQUAL expected)
    string(STRIP "${count}" count)
    list(APPEND errors "README.md says \"${count}\", but there are ${expected}: "
      "say it without the count (the API list names them)\n")
  endif()
endforeach()

if(errors)
  string(REPLACE ";" "" errors "${errors}")
  message(FATAL_ERROR "the API as stated does not agree:\n${errors}")
endif()
list(JOIN functions ", " fl)
message(STATUS "include/anypoll.h, man/man3, the install and README.md agree: "
  "${nfunctions} functions (${fl}), ${npages} man pages")
