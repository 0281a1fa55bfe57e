# SPDX-License-Identifier: MIT
# The two commands of the README, and a few more. Every target sets up what
# it needs first (scripts/setup-deps does nothing when all is present).
.PHONY: all deps native mingw sanitize tsan fuzz check check-native \
        check-mingw check-sanitize check-tsan check-fuzz demo bench bench-anchors bench-git \
        stress clean

all: native mingw

deps:
	@scripts/setup-deps

# Configured again when the presets change (a new cache variable in them
# would otherwise never reach an existing build folder).
build/%/CMakeCache.txt: CMakePresets.json | deps
	cmake --preset $* >/dev/null

native: deps build/native/CMakeCache.txt
	cmake --build --preset native
mingw: deps build/mingw/CMakeCache.txt
	cmake --build --preset mingw
sanitize: deps build/sanitize/CMakeCache.txt
	cmake --build --preset sanitize
tsan: deps build/tsan/CMakeCache.txt
	cmake --build --preset tsan
fuzz: deps build/fuzz/CMakeCache.txt
	cmake --build --preset fuzz

check-native: native
	ctest --preset native
check-sanitize: sanitize
	ctest --preset sanitize
# One wineserver for the whole suite (tools/wine-run --keep), stopped after.
check-mingw: mingw
	@tools/wine-run --keep $(CURDIR)/build/mingw/wineprefix
	@status=0; ctest --preset mingw || status=$$?; \
	tools/wine-run --stop $(CURDIR)/build/mingw/wineprefix; exit $$status
check-tsan: tsan
	ctest --preset tsan
# A 20 s libFuzzer run (tests/fuzz/); its corpus stays in build/fuzz.
check-fuzz: fuzz
	ctest --preset fuzz

# Every suite runs even when an earlier one fails; the exit status says
# whether all passed.
check: deps
	@status=0; \
	for s in native sanitize tsan mingw fuzz; do \
	  echo "=== $$s ==="; \
	  $(MAKE) --no-print-directory check-$$s || status=1; \
	done; \
	exit $$status

# A first look (one wake-up), then a short version of benchmark scenarios
# 1, 3 and 4 with a table. The full benchmarks: make bench. It builds only
# the programs it runs (the library, tools/demo.c and three benchmarks),
# not the test suites.
DEMO_TARGETS = anypoll_demo anypoll_bench_relay anypoll_bench_idle \
               anypoll_bench_pingpong
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
demo: deps build/native/CMakeCache.txt build/mingw/CMakeCache.txt
	@echo "=== building the demo programs for Linux and Windows ==="
	@cmake --build --preset native --parallel $(JOBS) --target $(DEMO_TARGETS) >/dev/null
	@cmake --build --preset mingw --parallel $(JOBS) --target $(DEMO_TARGETS) >/dev/null
	@echo "=== Linux ==="
	@build/native/demo
	@echo "=== Windows (under Wine) ==="
	@# In bench/run's prefix: one Wine prefix to create on a fresh machine,
	@# not two (bench/run stops this wineserver before it starts its own).
	@tools/wine-run $(CURDIR)/build/bench/wineprefix build/mingw/demo.exe
	@bench/run --demo

# Every scenario natively and under Wine (a few minutes): CSV and PNG plots
# in build/bench/, see docs/performance.md. Not part of check: benchmarks
# measure, tests assert.
bench: native mingw
	@bench/run

# anypoll beside libuv and wepoll, natively and under Wine, on the same
# ping-pong (bench/anchors/run): their source trees are given, never part
# of anypoll, e.g. make bench-anchors LIBUV=../libuv WEPOLL=../wepoll.
# Without them only anypoll's rows run. ANCHORS_ARGS: e.g. --reps 9.
bench-anchors: deps
	@bench/anchors/run $(if $(LIBUV),LIBUV=$(LIBUV)) $(if $(WEPOLL),WEPOLL=$(WEPOLL)) $(ANCHORS_ARGS)

# git.exe built twice from Debian's git source, with git's compat/poll and
# with dist/compat, cloning under Wine (bench/git/run; docs/performance.md).
# Not part of check: it downloads git's source and builds git twice.
bench-git: deps
	@bench/git/run

# The long form of the reliability tests (100 times make check's work; set
# ANYPOLL_STRESS_SCALE for another factor); see docs/reliability.md.
stress: native mingw
	@tools/stress

clean:
	rm -rf build

include mk/packaging.mk
