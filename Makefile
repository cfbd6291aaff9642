# The two commands (each first checks what the build needs and installs only what is missing, see
# scripts/install-deps.sh; GKNN_SKIP_DEPS=1 skips that; then configures and builds with CMake):
#   make run       Release build in build/, then the main job (see scripts/run-default.sh)
#   make test      build everything in build/ and run the whole CTest suite
# and for developers:
#   make sanitize  ASan+UBSan build of the CPU code in build-asan/, CPU tests only
#   make fuzz      libFuzzer harnesses (clang) in build-fuzz/, each run FUZZ_SECONDS (default 60) s
#   make tsan      ThreadSanitizer build in build-tsan/, the concurrent-Index test
#   make clean     remove the build directories
# CUDA is used when nvcc is found (PATH or /usr/local/cuda/bin); GPU tests report "skipped" without a GPU.

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
TSAN_BUILD ?= build-tsan
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: run test sanitize fuzz tsan deps configure build clean

deps:
	scripts/install-deps.sh $(CMAKE_ARGS)

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: configure
	cmake --build $(BUILD) -j $(JOBS) --target gknn_cli
	scripts/run-default.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

sanitize: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGKNN_SANITIZE=ON -DGKNN_CUDA=OFF \
	      -DGKNN_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L cpu $(CTEST_ARGS)

fuzz: deps
	JOBS=$(JOBS) scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# OpenMP's libgomp is not instrumented: the test runs each search on an OpenMP team of one under TSan
# (see tests/index_threads_test.cpp); TSAN_OPTIONS makes any report fail the test.
tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGKNN_TSAN=ON -DGKNN_CUDA=OFF \
	      -DGKNN_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target index_threads_test
	cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --output-on-failure -R '^index_threads_test$$'

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(TSAN_BUILD)
