#!/usr/bin/env bash
# Fuzzing with libFuzzer (Debian's clang): builds every target in tests/fuzz with
# ASan and UBSan into build-fuzz/, runs each on its corpus for FUZZ_SECONDS
# (default 300) and prints, per target, the executions run and whether it found
# anything. Exits non-zero when any target failed to build or found something.
#
#   bash scripts/fuzz.sh                      # long runs: 300 s per target
#   FUZZ_SECONDS=30 bash scripts/fuzz.sh      # what scripts/test.sh runs
#   FUZZ_TARGETS="fuzz_format" bash scripts/fuzz.sh -max_len=512   # extra args go to libFuzzer
#
# New corpus entries go to build-fuzz/corpus-<target>; the committed seeds in
# tests/fuzz/corpus/<target> (and the bug reproducers in tests/fuzz/repro/<target>,
# which fail until the bug is fixed) are only read. Crash files land in
# build-fuzz/artifacts/<target>/; replay one with `build-fuzz/<target> FILE`,
# shrink it with `build-fuzz/<target> -minimize_crash=1 -runs=100000 FILE`.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_packages clang libclang-rt-14-dev

seconds=${FUZZ_SECONDS:-300}
jobs=${FUZZ_JOBS:-2}          # compilations and runs at a time (one a core)
cxx=${FUZZ_CXX:-clang++}
out=build-fuzz
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -Iinclude -Wall -Wextra)
if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  targets=()
  for src in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
fi
mkdir -p "$out"

# --- build: only what is older than its sources or any header -----------------
needs_build() {  # target
  local bin="$out/$1"
  [ -x "$bin" ] || return 0
  [ -n "$(find "tests/fuzz/$1.cpp" tests/fuzz -maxdepth 1 -name '*.hpp' -newer "$bin" -print -quit)" ] && return 0
  [ -n "$(find include -newer "$bin" -print -quit)" ] && return 0
  return 1
}

declare -A build_failed=()
pids=()
names=()
for t in "${targets[@]}"; do
  if [ ! -f "tests/fuzz/$t.cpp" ]; then
    echo "fuzz: no such target tests/fuzz/$t.cpp" >&2
    build_failed[$t]=1
    continue
  fi
  needs_build "$t" || continue
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "building $out/$t"
  "$cxx" "${flags[@]}" "tests/fuzz/$t.cpp" -o "$out/$t" >"$out/$t.build.log" 2>&1 &
  pids+=($!)
  names+=("$t")
done
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    build_failed[${names[$i]}]=1
    echo "fuzz: building ${names[$i]} failed:" >&2
    head -n 30 "$out/${names[$i]}.build.log" >&2
    rm -f "$out/${names[$i]}"
  fi
done

# --- run: each target for $seconds on its corpus, $jobs at a time ----------------
# run_one TARGET: fuzzes it; its line of the summary goes to $out/TARGET.summary.
run_one() {
  local t=$1 corpus="$out/corpus-$1" artifacts="$out/artifacts/$1/" log="$out/$1.log"
  local marker="$out/.started-$1" rc execs found what f
  mkdir -p "$corpus" "$artifacts"
  local dirs=("$corpus" "tests/fuzz/corpus/$t")
  [ -d "tests/fuzz/repro/$t" ] && dirs+=("tests/fuzz/repro/$t")
  touch "$marker"
  echo "running $t for ${seconds}s (log: $log)"
  # The outer timeout only guards against a hung run; libFuzzer stops itself.
  UBSAN_OPTIONS=print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS} \
    timeout --kill-after=10 $((seconds + 120)) \
    "$out/$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$artifacts" "${fuzzer_args[@]}" "${dirs[@]}" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -n 1 | awk '{print $2}')
  # A crashed run prints no final stats: fall back on its last status line (#N).
  [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
  [ -n "$execs" ] || execs=0
  found=$(find "$artifacts" -type f -newer "$marker" | sort)
  rm -f "$marker"
  if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
    printf '%-20s %12s execs  ok: nothing found\n' "$t" "$execs" >"$out/$t.summary"
    return 0
  fi
  what=$(grep -m 1 -A 1 'INVARIANT VIOLATED' "$log" | tail -n 1 | sed 's/^ *//')
  [ -n "$what" ] || what=$(grep -m 1 -E 'SUMMARY|ERROR: libFuzzer|runtime error' "$log")
  {
    printf '%-20s %12s execs  FOUND (exit %s): %s\n' "$t" "$execs" "$rc" "${what:-see $log}"
    for f in $found; do printf '%-20s %12s        reproduce: %s %s\n' "" "" "$out/$t" "$f"; done
  } >"$out/$t.summary"
  return 1
}

fuzzer_args=("$@")
passed=0
failed=0
summary=()
run_pids=()
run_names=()
for t in "${targets[@]}"; do
  if [ -n "${build_failed[$t]:-}" ]; then
    summary+=("$(printf '%-20s %12s  FAILED: does not build (%s)' "$t" "-" "$out/$t.build.log")")
    failed=$((failed + 1))
    continue
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$t" &
  run_pids+=($!)
  run_names+=("$t")
done
for i in "${!run_pids[@]}"; do
  if wait "${run_pids[$i]}"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  while IFS= read -r line; do summary+=("$line"); done <"$out/${run_names[$i]}.summary"
done

echo
printf '%s\n' "${summary[@]}"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
