#!/usr/bin/env bash
# What to run on a lent GPU machine (the device tool), in one call of at most
# 8 minutes: the CUDA build; the GPU tests (every GPU result against the CPU's)
# and the DLPack CUDA test; the tour and device_query; the GPU benchmarks and
# their report; then, in the time left, compute-sanitizer memcheck on the GPU
# test cases and racecheck on those that run the GEMM kernel (the one kernel
# with shared memory). Each step has a timeout and the whole a deadline.
#
# That machine has nvcc and CMake but no Debian packages and no network, so
# first, here:   scripts/gpu-check.sh --prepare
# which copies the test frameworks' and DLPack's headers into .deps/ (ignored
# by git); then call the device tool with carry [".deps"], timeout_s 480 and
#   bash scripts/gpu-check.sh
#
# Results under $OUT (11 files):
#   summary.txt       every step's exit status and seconds, the GPU, the tests'
#                     and sanitizers' counts, the benchmark's goals met
#   RESULTS-gpu.md    bench/report_gpu.py's tables: copy it to bench/
#   bench.txt tests.txt nccl.txt dlpack.txt tour.txt device_query.json memcheck.txt
#   racecheck.txt build.log
# Exits 0 when every step that ran passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

if [ "${1:-}" = "--prepare" ]; then
  mkdir -p .deps/include
  for dir in doctest catch2 Random123 dlpack; do
    if [ -d "/usr/include/$dir" ]; then
      cp -r "/usr/include/$dir" .deps/include/
    elif [ "$dir" = dlpack ]; then  # optional: without it the DLPack CUDA test is not built
      echo "no /usr/include/dlpack (Debian: libdlpack-dev): the DLPack CUDA test will be left out"
    else
      echo "no /usr/include/$dir: install doctest-dev, catch2 and librandom123-dev first" >&2
      exit 1
    fi
  done
  echo "prepared .deps/include ($(du -sh .deps | cut -f1)): carry .deps to the GPU machine"
  exit 0
fi

out=${OUT:-gpu-results}
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
build=${GPU_CHECK_BUILD:-build-gpu}  # GPU_CHECK_BUILD: another folder, e.g. for a dry run here
mkdir -p "$build"
summary="$out/summary.txt"
: >"$summary"
deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-440}))  # under the 8 minutes, with room to spare
failed=0
step_from=1

note() { echo "$*" | tee -a "$summary"; }

# step NAME CAP FILE COMMAND...: runs COMMAND, its output appended to FILE, for at most CAP
# seconds or what is left before the deadline; records the exit status and the time.
step() {
  local name=$1 cap=$2 file=$3
  shift 3
  local limit=$((deadline - SECONDS))
  if ((limit < 10)); then
    note "$name: skipped, no time left"
    failed=1
    return 124
  fi
  ((cap < limit)) && limit=$cap
  local start=$SECONDS rc
  step_from=$(($([ -f "$file" ] && wc -l <"$file" || echo 0) + 1))  # where this step's output starts
  timeout -k 10 "$limit" "$@" >>"$file" 2>&1
  rc=$?
  if ((rc == 124 || rc == 137)); then
    note "$name: rc=$rc (timed out after $limit s)"
  else
    note "$name: rc=$rc, $((SECONDS - start)) s"
  fi
  ((rc == 0)) || failed=1
  return "$rc"
}

# built NAME BINARY: true when BINARY exists; otherwise records the step as not run.
built() {
  [ -x "$2" ] && return 0
  note "$1: not run, $2 was not built (see build.log)"
  failed=1
  return 1
}

# The last step's doctest and sanitizer summary lines in FILE, into the summary: they also
# show that the test-case filters matched something.
counts() {
  tail -n "+$step_from" "$1" |
    grep -E '^\[doctest\] (test cases|assertions)|ERROR SUMMARY|RACECHECK SUMMARY' >>"$summary"
}

# One doctest filter pattern per DEVTENSOR_GPU_TEST_CASE in FILES: the name up to its first
# comma (commas separate filters), then '*'. Read from the sources, so new cases are included.
gpu_cases() { sed -n 's/^DEVTENSOR_GPU_TEST_CASE\(_TEMPLATE\)\{0,1\}("\([^"]*\)".*/\2/p' "$@" | sed 's/,.*//; s/$/*/'; }
joined() { paste -sd, -; }

# ---- the machine, the build ------------------------------------------------------------------
smi="$build/nvidia-smi.csv"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv >"$smi" 2>&1
  cat "$smi" >>"$summary"
else
  note "nvidia-smi: not found"
  : >"$smi"
fi

generator=()
keep_going=(-- -k)  # build the other targets when one fails
if command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
  keep_going=(-- -k 0)
fi
# Release, as scripts/test.sh builds the tests; the build type changes host code only
# (nvcc optimises device code alike). -lineinfo gives compute-sanitizer source lines. The
# test files' host side at -O1 (scripts/test.sh: -O0), since every case runs here; the test
# files in 6 unity files (scripts/test.sh: 2), so that the many cores build them side by side.
step configure 90 "$out/build.log" cmake -S . -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DDEVTENSOR_ENABLE_CUDA=ON -DCMAKE_CUDA_FLAGS=-lineinfo \
  -DDEVTENSOR_TESTS_CUDA_HOST_OPT=-O1 -DDEVTENSOR_UNITY_FILES=6 \
  -DCMAKE_INCLUDE_PATH="$PWD/.deps/include" || exit 1
targets=(devtensor_tests_cuda tour_cuda device_query_cuda devtensor_bench_gpu)
have_dlpack=0
if cmake --build "$build" --target help 2>/dev/null | grep -q devtensor_tests_dlpack_cuda; then
  targets+=(devtensor_tests_dlpack_cuda)
  have_dlpack=1
else
  note "devtensor_tests_dlpack_cuda: not configured (no dlpack/dlpack.h; run --prepare where libdlpack-dev is)"
fi
if cmake --build "$build" --target help 2>/dev/null | grep -q devtensor_tests_nccl; then
  targets+=(devtensor_tests_nccl)
else
  note "devtensor_tests_nccl: not configured (no libnccl in this CUDA toolkit)"
fi
step build 270 "$out/build.log" cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" "${keep_going[@]}"

tests="$build/tests/devtensor_tests_cuda"
nccl="$build/tests/dist/devtensor_tests_nccl"
dlpack="$build/tests/dlpack/devtensor_tests_dlpack_cuda"
bench="$build/bench/devtensor_bench_gpu"

# ---- tests, examples ---------------------------------------------------------------------
if built tests "$tests"; then
  step tests 120 "$out/tests.txt" "$tests"
  counts "$out/tests.txt"
fi
if [ -x "$tests" ]; then  # every op waits for its kernels: a fault names the kernel that made it
  step launch_blocking 30 "$out/launch_blocking.txt" env DEVTENSOR_LAUNCH_BLOCKING=1 "$tests" \
    -tc="$(gpu_cases tests/test_stream.cpp tests/test_add.cpp | joined)"
  counts "$out/launch_blocking.txt"
fi
# NCCL on the lent GPU: one-process and single-rank communicators, DDP on them, and
# all_reduce's bandwidth (nccl-tests arithmetic, printed into nccl.txt).
if [ -e "$build/tests/dist/CMakeFiles/devtensor_tests_nccl.dir" ] && built nccl "$nccl"; then
  step nccl 60 "$out/nccl.txt" "$nccl" -s
  counts "$out/nccl.txt"
  grep -E '^NCCL all_reduce' "$out/nccl.txt" >>"$summary"
fi
if ((have_dlpack)) && built dlpack "$dlpack"; then
  step dlpack 30 "$out/dlpack.txt" "$dlpack"
  counts "$out/dlpack.txt"
fi
built tour "$build/examples/tour_cuda" && step tour 30 "$out/tour.txt" "$build/examples/tour_cuda"
built device_query "$build/examples/device_query_cuda" &&
  step device_query 20 "$out/device_query.json" "$build/examples/device_query_cuda" --json

# ---- the benchmark and its report -------------------------------------------------------------
if built bench "$bench"; then
  step bench 150 "$out/bench.txt" "$bench" --durations yes
  bench_rc=$?
  awk -F'|' '$1 == "ROW" { rows++; if ($9 == "yes") met++; if ($9 == "no") missed++ }
             $1 == "FAIL" { wrong++ }
             END { printf "bench rows: %d; goals met %d, not met %d; wrong results %d\n", rows, met, missed, wrong
                   exit rows == 0 }' "$out/bench.txt" | tee -a "$summary" ||
    { note "bench: no rows, so no GPU was used (see bench.txt)"; failed=1; }
  if command -v python3 >/dev/null 2>&1; then
    step report 20 "$out/report.log" python3 bench/report_gpu.py "$out/bench.txt" --nvidia-smi "$smi" \
      --bench-rc "$bench_rc" --out "$out/RESULTS-gpu.md"
    cat "$out/report.log" >>"$out/build.log"
    rm -f "$out/report.log"
  else
    note "report: not run, no python3 here: run bench/report_gpu.py on bench.txt where there is one"
  fi
fi

# ---- compute-sanitizer, in the time left ------------------------------------------------------
sanitizer=$(command -v compute-sanitizer || true)
[ -z "$sanitizer" ] && [ -x /usr/local/cuda/compute-sanitizer/compute-sanitizer ] &&
  sanitizer=/usr/local/cuda/compute-sanitizer/compute-sanitizer
if [ -z "$sanitizer" ]; then
  note "memcheck, racecheck: not run, compute-sanitizer not found"
elif [ -x "$tests" ]; then
  all_gpu=$(gpu_cases tests/test_*.cpp)
  # The out-of-memory case fails an allocation on purpose, which memcheck reports as a CUDA API
  # error (--report-api-errors explicit, the default): it runs on its own with API errors
  # unreported; memory errors and leaks still count.
  oom=$(grep 'out of memory' <<<"$all_gpu" | joined)
  memcheck=("$sanitizer" --tool memcheck --leak-check full --error-exitcode 1)
  step memcheck 150 "$out/memcheck.txt" "${memcheck[@]}" "$tests" \
    -tc="$(grep -v 'out of memory' <<<"$all_gpu" | joined)"
  counts "$out/memcheck.txt"
  if [ -n "$oom" ]; then
    step memcheck_oom 40 "$out/memcheck.txt" "${memcheck[@]}" --report-api-errors no "$tests" -tc="$oom"
    counts "$out/memcheck.txt"
  fi
  if [ -x "$dlpack" ]; then
    step memcheck_dlpack 40 "$out/memcheck.txt" "${memcheck[@]}" "$dlpack" \
      -tc="$(gpu_cases tests/test_dlpack_cuda.cpp | joined)"
    counts "$out/memcheck.txt"
  fi
  step racecheck 150 "$out/racecheck.txt" "$sanitizer" --tool racecheck --error-exitcode 1 "$tests" \
    -tc="$(gpu_cases tests/test_matmul.cpp tests/test_linear.cpp tests/test_nn.cpp | joined)"
  counts "$out/racecheck.txt"
fi

note "gpu-check: $( ((failed)) && echo 'some step failed' || echo 'every step passed'), $SECONDS s in all"
exit "$failed"
