#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: installs what is missing,
# builds the CPU build (g++) and, where nvcc exists, the CUDA build (nvcc,
# sm_90 + PTX), and runs everything through CTest. GPU cases skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_packages cmake make g++ doctest-dev catch2 librandom123-dev libtorch-dev libopenblas-dev

build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo $(cuda_flag)
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure -V 2>&1 | tee "$build/ctest.log" \
  | grep -E "^[0-9]+: (\[doctest\] (test cases|assertions)|-- fails as expected)|tests passed|tests failed|Failed|FAILED|ERROR|Error" || true
grep -q "100% tests passed" "$build/ctest.log"
