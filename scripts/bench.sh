#!/usr/bin/env bash
# The CPU benchmarks: builds devtensor_bench in Release (build-bench/), runs it at
# 1 thread and at all threads, and writes bench/RESULTS.md and bench/results.png; then
# devtensor_bench_mpi under mpirun on 2 and 4 ranks, for bench/RESULTS-mpi.md.
#
# Usage: scripts/bench.sh [Catch2 test spec...]   e.g. scripts/bench.sh "[gemm]"
#   BENCH_QUICK=1       5 samples per benchmark instead of 15 (for development)
#   BENCH_BUILD_DIR=dir build somewhere else than build-bench
# A filtered or quick run writes its report next to its results, in
# build-bench/results/, and leaves bench/RESULTS.md to full runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_packages cmake make g++ catch2 librandom123-dev libtorch-dev libopenblas-dev libdnnl-dev libblis-dev \
  python3-matplotlib openmpi-bin libopenmpi-dev

start=$SECONDS
build=${BENCH_BUILD_DIR:-build-bench}
samples=15
[ "${BENCH_QUICK:-0}" = 1 ] && samples=5

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDEVTENSOR_BUILD_TESTS=OFF \
  -DDEVTENSOR_BUILD_EXAMPLES=OFF -DDEVTENSOR_ENABLE_CUDA=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target devtensor_bench

results="$build/results"
rm -rf "$results"
mkdir -p "$results"
# Other processes on these cores distort the figures, most at all threads: record the load.
load() { cut -d' ' -f1-3 /proc/loadavg; }
# OpenBLAS 0.3.21 does not know every new CPU model and then falls back to its generic
# Prescott (SSE) kernels, a third of its speed here: where that happens on a CPU with
# AVX-512 (or AVX2), it gets the kernels it would have picked had it known the model,
# so that the OpenBLAS and libtorch rows compare with the peer at its best.
openblas_core=$(python3 -c 'import ctypes; l = ctypes.CDLL("libopenblas.so.0"); l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())' 2>/dev/null || true)
openblas_coretype=
if [ "$openblas_core" = Prescott ]; then
  if grep -qw avx512f /proc/cpuinfo; then openblas_coretype=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then openblas_coretype=Haswell; fi
  [ -z "$openblas_coretype" ] || echo "OpenBLAS picked its Prescott kernels on this CPU: OPENBLAS_CORETYPE=$openblas_coretype"
fi
for threads in $(printf '%s\n' 1 "$(nproc)" | sort -nu); do
  echo "== $threads thread(s)"
  before=$(load)
  # OpenBLAS and oneDNN pick their kernels themselves: nothing in the environment may steer
  # them, but for OpenBLAS's fallback above. BLIS too, but for the one case where it cannot
  # tell (see bench/bench_blis.cpp).
  # libgomp workers spin ~0.1 ms (not ~10 ms) before sleeping: enough to stay hot
  # between back-to-back calls, short enough not to take the cores from OpenBLAS's
  # own threads inside torch's nn::Linear (Debian's torch is OpenMP, its OpenBLAS pthreads).
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE -u DNNL_MAX_CPU_ISA -u BLIS_ARCH_TYPE \
    ${openblas_coretype:+OPENBLAS_CORETYPE=$openblas_coretype} \
    GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-2000}" \
    DEVTENSOR_BENCH_THREADS="$threads" \
    DEVTENSOR_BENCH_INFO="$results/info-$threads.txt" \
    DEVTENSOR_BENCH_SAMPLES="$results/samples-$threads.tsv" \
    "$build/bench/devtensor_bench" "$@" --benchmark-samples "$samples" \
      -r xml -o "$results/bench-$threads.xml"
  printf 'samples: %s\nload average before / after: %s / %s\n' "$samples" "$before" "$(load)" \
    >>"$results/info-$threads.txt"
  cat "$results/info-$threads.txt"
done

report_dir=bench
[ $# -gt 0 ] || [ "${BENCH_QUICK:-0}" = 1 ] && report_dir=$results
# Debian's python3, which has matplotlib (a pyenv python3 on PATH may not)
/usr/bin/python3 bench/report.py --out-dir "$report_dir" --elapsed "$((SECONDS - start)) s" "$results"/bench-*.xml

# dist::communicator against bare MPI, under mpirun on 2 and 4 ranks of this machine (bench/bench_mpi.cpp);
# not in a filtered run. As root mpirun needs the two OMPI_ALLOW_RUN_AS_ROOT variables.
if [ $# -gt 0 ]; then
  echo "== MPI: skipped in a filtered run"
elif ! command -v mpirun >/dev/null 2>&1 || ! cmake --build "$build" --target help | grep devtensor_bench_mpi >/dev/null; then
  echo "== MPI: skipped, MPI not found (Debian: openmpi-bin libopenmpi-dev)"
else
  cmake --build "$build" -j "$(nproc)" --target devtensor_bench_mpi
  mpi_start=$SECONDS
  for ranks in 2 4; do
    echo "== MPI, $ranks ranks"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
      mpirun --oversubscribe -np "$ranks" "$build/bench/devtensor_bench_mpi" | tee "$results/mpi-$ranks.txt"
  done
  /usr/bin/python3 bench/report_mpi.py --out "$report_dir/RESULTS-mpi.md" --elapsed "$((SECONDS - mpi_start)) s" \
    "$results"/mpi-2.txt "$results"/mpi-4.txt
fi
