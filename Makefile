# The two entry points: `make demo` runs the demo job, `make test` runs the suite.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
# Tests at a time: twice the cores, since a test spends part of its time
# waiting on the processes, sockets and servers it starts.
TEST_JOBS ?= $(shell echo $$(( 2 * $$(nproc) )))

FUZZ_SECONDS ?= 10
FUZZ_TARGETS := metadata state_file records data_plane json_body config running_sum_line formats result_file sql sql_dialect sql_io cluster_messages sql_values

.PHONY: deps build-deps configure build demo package test test-long bench soak check-locks asan-configure asan tsan fuzz clean

# Every package the build and the tests need; build-deps: the build's only.
deps:
	@bash scripts/install-deps.sh

build-deps:
	@bash scripts/install-deps.sh --build-only

# UNIT_TESTS=OFF: this tree leaves out weir_unit_test (CI runs the unit
# tests under the sanitizers, make asan, and the rest with make test).
UNIT_TESTS ?= ON
CONFIGURE = cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DWEIR_UNIT_TESTS=$(UNIT_TESTS) >/dev/null

configure: deps
	@$(CONFIGURE)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo needs the weir executable alone. Its files go to DEMO_DIR, a new
# directory under $$TMPDIR unless named (make demo DEMO_DIR=path).
DEMO_DIR ?=
demo: build-deps
	@$(CONFIGURE)
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target weir
	@bash scripts/demo.sh $(BUILD_DIR)/weir $(DEMO_DIR)

# The Debian package (weir_<version>_<arch>.deb) and its debug symbols
# (weir-dbgsym_...ddeb) in $(BUILD_DIR); see cmake/packaging.cmake.
package: build-deps
	@$(CONFIGURE)
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target weir weir_man
	@cd $(BUILD_DIR) && cpack -G DEB
	@ls -1 $(BUILD_DIR)/weir_*.deb $(BUILD_DIR)/weir-dbgsym_*.ddeb

# make test: every test but those labelled long (the cluster tests again
# over TLS, high availability on ZooKeeper, the short chaos soak);
# make test-long: those; make test LONG=1: both in one run (CI), so the
# long ones fill the cores the others leave idle at the end.
LONG ?=
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 600 $(if $(LONG),,-LE long)

test-long: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 600 -L long

bench: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target weir_bench weir_micro_bench
	@BENCH=$(BUILD_DIR)/bench/weir_bench bash bench/run.sh

# The chaos soak (tests/chaos_soak.cc) for SOAK_DURATION, with a fresh
# seed unless SOAK_SEED is given; `make test-long` runs a one-minute one.
SOAK_DURATION ?= 60m
SOAK_SEED ?=
soak: build
	@WEIR_BIN=$(BUILD_DIR)/weir $(BUILD_DIR)/weir_chaos --duration $(SOAK_DURATION) $(if $(SOAK_SEED),--seed $(SOAK_SEED))

# Builds the engine with clang to check the lock annotations.
check-locks: deps
	@CXX=clang++ cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build build-clang -j $(JOBS) --target weir_cli weir_unit_test

# The unit tests built with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer (any report fails the run). The same build
# holds the fuzz targets.
# ASAN_OPTIMIZE: -O1 as the sanitizers advise for speed; CI takes -O0,
# which compiles in about half the time and runs the tests slower (nothing
# is optimized away from the checks there). The unit tests run as JOBS
# shards at once (scripts/gtest_shards.sh).
ASAN_OPTIMIZE ?= -O1
asan-configure: deps
	@CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEIR_OPTIMIZE=$(ASAN_OPTIMIZE) \
	  -DWEIR_SANITIZE=address,undefined -DWEIR_FUZZ=ON >/dev/null

asan: asan-configure
	@cmake --build build-asan -j $(JOBS) --target weir_unit_test
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 bash scripts/gtest_shards.sh $(JOBS) build-asan/weir_unit_test

# The same under ThreadSanitizer (Debian's Abseil is not built with TSan;
# src/testing/tsan_absl_sync.cc tells TSan what its mutexes order). The whole
# suite: cd build-tsan && ctest. Not run in CI.
tsan: deps
	@CXX=clang++ cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEIR_SANITIZE=thread >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target weir_unit_test
	@TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/src/testing/tsan_suppressions.txt" build-tsan/weir_unit_test --gtest_brief=1

# Each fuzz target for FUZZ_SECONDS (make fuzz FUZZ_SECONDS=600 for a long
# run), JOBS at a time, from its corpus in fuzz/corpus/; new inputs it finds
# go to build-asan/corpus/, a crash to build-asan/crash-* (then add it to the
# corpus and a regression test). See scripts/fuzz.sh.
fuzz: asan-configure
	@cmake --build build-asan -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@bash scripts/fuzz.sh $(FUZZ_SECONDS) $(JOBS) $(FUZZ_TARGETS)

clean:
	@rm -rf $(BUILD_DIR) build-asan build-tsan build-fuzz
