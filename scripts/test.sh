#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine; installs what is missing.
# Build types: the main build is Release (what users ship), the ASan build Debug,
# the TSan build RelWithDebInfo; MinSizeRel is checked by hand (README).
#  1. the main build (Release) through CTest: the CPU build (g++) and, where nvcc exists,
#     the CUDA build (nvcc, sm_90 + PTX) of the test suite, the libtorch
#     reference and DLPack tests, detail/math.hpp against MPFR, compile-fail
#     tests, self-contained headers, consumer projects (find_package,
#     add_subdirectory, FetchContent, CUDA, pkg-config), the headers under
#     strict warnings with g++ and clang++, and device_query --json; the MPI
#     tests (Open MPI, 2 and 4 ranks; a rank that dies; libtorch's ProcessGroupGloo
#     as the reference, with libgloo-dev; the data_parallel example on 1 and 4
#     processes) and the NCCL tests' nvcc build. The CUDA build (its test files' and
#     the examples' host side at -O0) links nvcc and g++ files passing tensors, layers and
#     generators across. GPU cases skip without a GPU. The benchmarks are built
#     at -O0 (DEVTENSOR_BENCH_BUILD_ONLY) to show that they build; none runs.
#  2. the CPU suite under AddressSanitizer + UndefinedBehaviorSanitizer, at -O0;
#  3. the threaded part of the CPU suite (the pool and the parallel engines) under
#     ThreadSanitizer, multi-threaded on devtensor's own pool;
#  3b. the CPU suite built with -march=native (FMA contraction allowed);
#  4. valgrind memcheck on the tour and device_query;
#  4b. the CUDA kernels without a GPU: ptxas registers/spills (bench/KERNELS.md)
#     and sm_90 SASS in the CUDA test binary (cuobjdump, from PyPI where the
#     toolkit lacks it);
#  5. libFuzzer, 30 s per target (scripts/fuzz.sh);
#  6. the Conan recipe (scripts/test-packaging.sh).
# Every step runs; the last line counts the steps that passed and failed.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_packages cmake make g++ doctest-dev catch2 librandom123-dev libtorch-dev libopenblas-dev \
  libdlpack-dev libmpfr-dev pkg-config python3 python3-venv valgrind clang libclang-rt-14-dev zlib1g-dev \
  openmpi-bin libopenmpi-dev libgloo-dev
# the handwritten digits that examples/train_digits.cpp trains on (from Debian's python3-sklearn)
scripts/get-digits.sh >/dev/null || echo "warning: no digits data set; the train_digits test is skipped"

build=${BUILD_DIR:-build}
jobs=$(nproc)
passed=0
failed=()
step() {  # step NAME COMMAND...: runs it, records the outcome
  local name=$1
  shift
  echo
  echo "== $name"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "== $name: passed ($((SECONDS - start)) s)"
  else
    failed+=("$name")
    echo "== $name: FAILED ($((SECONDS - start)) s)"
  fi
}

# A venv with the Python safetensors package, for the interop test (tests/safetensors_check.py):
# prints the cmake flag that turns the test on, nothing where PyPI cannot be reached.
safetensors_flag() {
  local venv="$build/safetensors-venv"
  { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; } >/dev/null 2>&1 &&
    { "$venv/bin/python" -c "import safetensors, numpy" 2>/dev/null ||
      "$venv/bin/pip" install --quiet --timeout 30 safetensors numpy >/dev/null 2>&1; } &&
    echo "-DDEVTENSOR_SAFETENSORS_PYTHON=$venv/bin/python" ||
    echo "safetensors could not be installed: the safetensors interop test is not run" >&2
}

main_build() {
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDEVTENSOR_BENCH_BUILD_ONLY=ON $(cuda_flag) \
    -DDEVTENSOR_EXAMPLES_CUDA_HOST_OPT=-O0 \
    $(safetensors_flag) >/dev/null &&
    cmake --build "$build" -j "$jobs" >"$build/build.log" 2>&1 || { tail -50 "$build/build.log"; return 1; }
  ctest --test-dir "$build" -j "$jobs" --output-on-failure -V >"$build/ctest.log" 2>&1
  local status=$?
  grep -E "^[0-9]+: (\[doctest\] (test cases|assertions)|-- fails as expected)|tests passed|tests failed|Failed|FAILED|\*\*\*" \
    "$build/ctest.log"
  return $status
}

# The sanitizers run the CPU suite less its slowest bit-comparison sweeps (the same
# kernels run under them in the smaller micro-kernel, emulator and threading cases).
# (doctest splits the list at commas: a comma inside a name is written \,)
sanitizer_skips='*the CUDA kernels (emulated) give the bits*,*every CPU ISA path\, called directly*'
sanitizer_skips+=',*a split GEMM gives the same bits*'
# and the outputs past 8 MiB (the streaming paths run in the main build; at -O0 under ASan they take minutes)
sanitizer_skips+=',*transpose of large outputs*,*large outputs (streaming stores)*,*large elementwise ops agree*'
# and the large bit sweeps of the ops added since (their loops run under the sanitizers in smaller cases)
sanitizer_skips+=',*across-columns GEMV kernels*,*conversions give the same bits on 1*'
sanitizer_skips+=',*elementwise math gives the same bits*,*sum is accurate on a long row*'

# build_cpu_suite DIR BUILD_TYPE CMAKE_ARGS...: the CPU test suite alone, built in DIR
build_cpu_suite() {
  local dir=$1 type=$2
  shift 2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DDEVTENSOR_ENABLE_CUDA=OFF \
    -DDEVTENSOR_BUILD_EXAMPLES=OFF -DDEVTENSOR_BUILD_BENCHMARKS=OFF "$@" >/dev/null &&
    cmake --build "$dir" -j "$jobs" --target devtensor_tests >"$dir/build.log" 2>&1 || { tail -50 "$dir/build.log"; return 1; }
}

# sanitized NAME BUILD_TYPE CMAKE_ARGS...: the CPU test suite alone, built and run under a sanitizer
sanitized() {
  local dir="$build-$1" type=$2
  shift 2
  build_cpu_suite "$dir" "$type" "$@" || return 1
  # Huge allocations must come back as nullptr (out_of_memory), not abort the run.
  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    TSAN_OPTIONS=allocator_may_return_null=1:halt_on_error=1 \
    "$dir/tests/devtensor_tests" --test-case-exclude="$sanitizer_skips" >"$dir/run.log" 2>&1
  local status=$?
  # (less ASan's warnings for the huge allocations the tests expect to fail)
  grep -E "\[doctest\] (test cases|assertions)|Sanitizer|runtime error" "$dir/run.log" |
    grep -v "AddressSanitizer failed to allocate" | head -20
  return $status
}

# The CPU suite as a user's -march=native build compiles it: FMA instructions allowed,
# so any product left to the compiler may become an fma (GCC contracts at -O2 and up).
# Every bit-identity test then checks that the library's own rounding (detail::mul,
# detail::fma) holds, not the build's flags (a review found one contraction this way).
native_build() {
  local dir="$build-native"
  build_cpu_suite "$dir" Release -DCMAKE_CXX_FLAGS=-march=native || return 1
  "$dir/tests/devtensor_tests" >"$dir/run.log" 2>&1
  local status=$?
  grep -E "\[doctest\] (test cases|assertions)|ERROR" "$dir/run.log" | head -20
  return $status
}

memcheck() {
  local example
  for example in tour device_query; do
    valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite -q \
      "$build/examples/$example" >"$build/valgrind-$example.log" 2>&1 || { tail -30 "$build/valgrind-$example.log"; return 1; }
    echo "$example: 0 errors, 0 bytes definitely lost"
  done
}

# The kernels as ptxas and cuobjdump see them (where nvcc exists).
kernels() {
  if ! command -v nvcc >/dev/null 2>&1; then echo "no nvcc: skipped"; return 0; fi
  local tool venv="$build/tools-venv"
  tool=$(command -v cuobjdump || true)
  if [ -z "$tool" ]; then
    [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" >/dev/null
    "$venv/bin/pip" install --quiet --timeout 30 nvidia-cuda-cuobjdump >/dev/null 2>&1 || true
    tool=$(ls "$venv"/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump 2>/dev/null | head -1)
  fi
  if [ -z "$tool" ]; then
    echo "cuobjdump is not in the toolkit and PyPI could not be reached: the SASS check is skipped"
    python3 scripts/kernel-report.py
  else
    CUOBJDUMP=$tool python3 scripts/kernel-report.py --binary "$build/tests/devtensor_tests_cuda"
  fi
}

step "main build (CTest)" main_build
# ASan at -O0 (Debug) also covers code the optimiser would inline away, such as
# the ISA kernels' calls to their vector helpers.
step "AddressSanitizer + UndefinedBehaviorSanitizer, -O0" sanitized asan Debug -DDEVTENSOR_SANITIZE=address,undefined
step "ThreadSanitizer (devtensor's own threads)" sanitized tsan RelWithDebInfo -DDEVTENSOR_SANITIZE=thread \
  -DDEVTENSOR_TESTS_OPENMP=OFF
step "CPU suite with -march=native (FMA contraction on)" native_build
step "valgrind memcheck" memcheck
step "CUDA kernels: ptxas spills, sm_90 SASS" kernels
step "libFuzzer, 30 s per target" env FUZZ_SECONDS=30 bash scripts/fuzz.sh
step "Conan package" env BUILD_DIR="$build" bash scripts/test-packaging.sh

echo
[ ${#failed[@]} -eq 0 ] || printf 'failed step: %s\n' "${failed[@]}"
echo "test.sh: $passed passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
