#!/usr/bin/env bash
# Builds and runs examples/tour.cpp, the PyTorch GPU walkthrough in devtensor:
# the nvcc build where nvcc exists (so its ops run on a GPU when one is there),
# the g++ build elsewhere. Installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_packages cmake make g++

build=${BUILD_DIR:-build-tour}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDEVTENSOR_BUILD_TESTS=OFF \
  -DDEVTENSOR_BUILD_BENCHMARKS=OFF $(cuda_flag) >/dev/null
if command -v nvcc >/dev/null 2>&1; then target=tour_cuda; else target=tour; fi
cmake --build "$build" --target "$target" -j "$(nproc)" >/dev/null
"$build/examples/$target"
