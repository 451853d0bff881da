#!/usr/bin/env bash
# What to run on a lent GPU machine (the device tool), in one call of under 8
# minutes: the CUDA build, the GPU tests (every GPU result against the CPU's),
# compute-sanitizer memcheck and racecheck on them, the examples, and the GPU
# benchmarks; results under $OUT (at most 8 files).
#
# That machine has nvcc and CMake but no Debian packages and no network, so
# first, here:   scripts/gpu-check.sh --prepare
# which copies the test frameworks' headers into .deps/ (ignored by git);
# then call the device tool with carry [".deps"] and the command
#   bash scripts/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--prepare" ]; then
  mkdir -p .deps/include
  cp -r /usr/include/doctest /usr/include/catch2 /usr/include/Random123 .deps/include/
  echo "prepared .deps/include: carry .deps to the GPU machine"
  exit 0
fi

out=${OUT:-gpu-results}
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
build=build-gpu
summary="$out/summary.txt"
: >"$summary"
step() {  # step NAME LIMIT_SECONDS OUTPUT_FILE COMMAND...: runs and records pass/fail and time
  local name=$1 limit=$2 file=$3; shift 3
  local start=$SECONDS
  timeout "$limit" "$@" >"$file" 2>&1
  local rc=$?
  echo "$name: rc=$rc, $((SECONDS - start)) s" | tee -a "$summary"
  return $rc
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv >>"$summary" 2>&1
generator=""
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
step configure 120 "$out/build.log" cmake -S . -B "$build" $generator -DCMAKE_BUILD_TYPE=Release \
  -DDEVTENSOR_ENABLE_CUDA=ON -DCMAKE_INCLUDE_PATH="$PWD/.deps/include" || { cat "$out/build.log"; exit 1; }
step build 240 "$out/build-output.log" cmake --build "$build" -j "$(nproc)" --target devtensor_tests_cuda \
  tour_cuda device_query_cuda devtensor_bench_gpu
cat "$out/build-output.log" >>"$out/build.log"; rm -f "$out/build-output.log"

step tests 120 "$out/tests.txt" "$build/tests/devtensor_tests_cuda"
tail -3 "$out/tests.txt" >>"$summary"
# the GPU cases only, under the sanitizers (they are slow)
gpu_cases='*gpu*,*GPU*'
step memcheck 150 "$out/memcheck.txt" compute-sanitizer --tool memcheck --error-exitcode 1 \
  "$build/tests/devtensor_tests_cuda" -tc="$gpu_cases"
tail -2 "$out/memcheck.txt" >>"$summary"
step racecheck 150 "$out/racecheck.txt" compute-sanitizer --tool racecheck --error-exitcode 1 \
  "$build/tests/devtensor_tests_cuda" -tc="*matmul*,*linear*"
tail -2 "$out/racecheck.txt" >>"$summary"
step tour 60 "$out/tour.txt" "$build/examples/tour_cuda"
step device_query 30 "$out/device_query.json" "$build/examples/device_query_cuda" --json
step bench 120 "$out/bench.txt" "$build/bench/devtensor_bench_gpu"
grep -E "ratio to reference" "$out/bench.txt" >>"$summary"
cat "$summary"
