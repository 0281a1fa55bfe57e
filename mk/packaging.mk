# SPDX-License-Identifier: MIT
# Packaging targets, included by the Makefile.
#   make install [PREFIX=/usr/local] [DESTDIR=/staging]   the Linux build
#   make install-mingw PREFIX=/some/dir [DESTDIR=...]     the Windows build
#   make amalgamate           dist/anypoll.{c,h}, and dist/compat/poll.{c,h}
#                             (the gnulib-ABI pair, docs/porting.md)
.PHONY: install install-mingw amalgamate

PREFIX ?= /usr/local

install: native
	DESTDIR="$(DESTDIR)" cmake --install build/native --prefix "$(PREFIX)"
install-mingw: mingw
	DESTDIR="$(DESTDIR)" cmake --install build/mingw --prefix "$(PREFIX)"

amalgamate: deps
	python3 tools/amalgamate.py dist
	@echo "wrote dist/anypoll.c, dist/anypoll.h and dist/compat/poll.{c,h}"
