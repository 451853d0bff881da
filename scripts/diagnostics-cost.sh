#!/usr/bin/env bash
# The cost of the diagnostics (creation sites, transfer guard, allocation registry)
# when nothing goes wrong, in instructions counted by valgrind's callgrind (which
# do not vary with the machine's load): bench/diagnostics_cost.cpp built with
# DEVTENSOR_DIAGNOSTICS=1 and =0 at -O2, each workload run under callgrind, and
# the ratio of the totals. Writes bench/DIAGNOSTICS-COST.md. The goal (issue):
# at most 2% more instructions.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_packages g++ valgrind

work=${BUILD_DIR:-build}/diagnostics-cost
mkdir -p "$work"
for on in 1 0; do
  g++ -std=c++20 -O2 -DNDEBUG -DDEVTENSOR_DIAGNOSTICS=$on -Iinclude bench/diagnostics_cost.cpp \
    -o "$work/cost-$on" -pthread
done
instructions() {  # instructions WORKLOAD ON: the program's total Ir under callgrind
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.$1.$2" "$work/cost-$2" "$1" >/dev/null 2>&1
  sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$work/callgrind.$1.$2"
}
report=bench/DIAGNOSTICS-COST.md
{
  echo "# What the diagnostics cost (DEVTENSOR_DIAGNOSTICS=1 against =0)"
  echo
  echo "Instructions counted by valgrind's callgrind for \`bench/diagnostics_cost.cpp\`,"
  echo "g++ $(g++ -dumpfullversion) -O2, one thread; written by \`scripts/diagnostics-cost.sh\` on $(date -u +%Y-%m-%d)."
  echo "Goal: at most 1.02x."
  echo
  echo "| workload | instructions, diagnostics on | off | ratio |"
  echo "|---|---:|---:|---:|"
  for workload in small add; do
    on=$(instructions "$workload" 1)
    off=$(instructions "$workload" 0)
    ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.4f", a / b }')
    echo "| $workload | $on | $off | ${ratio}x |"
  done
} >"$report"
cat "$report"
