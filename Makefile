# The two entry points: `make demo` runs the demo job, `make test` runs the suite.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)

.PHONY: deps configure build demo test bench check-locks clean

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)/weir

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

bench: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target weir_bench weir_micro_bench
	@BENCH=$(BUILD_DIR)/bench/weir_bench bash bench/run.sh

# Builds the engine with clang to check the lock annotations.
check-locks: deps
	@CXX=clang++ cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build build-clang -j $(JOBS) --target weir_core weir_unit_test

clean:
	@rm -rf $(BUILD_DIR)
