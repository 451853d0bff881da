#!/usr/bin/env bash
# The Conan recipe (conanfile.py, test_package/) tested as a Conan user would:
# `conan create .` with Conan 2 from PyPI, offline (no remote: the package has
# no dependencies). Conan lives in a virtual environment and a CONAN_HOME of
# its own under the build folder, so ~/.conan2 is never touched.
# Exit 0 when it passes, or (with a message) when PyPI cannot be reached to
# install Conan; non-zero when it fails. test_package also checks that the package
# holds the LICENSE (licenses/) and devtensorCudaTargets.cmake. The vcpkg port
# (ports/devtensor) is not tested: vcpkg cannot be installed from the package
# registries here.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh

build=${BUILD_DIR:-build}
case $build in /*) ;; *) build="$PWD/$build" ;; esac
work="$build/packaging"
venv="$work/venv"
export CONAN_HOME="$work/conan-home"
mkdir -p "$work"
log="$work/conan.log"
: >"$log"
start=$SECONDS

# Conan 2 from PyPI, in a venv (Debian's python3 refuses `pip install` system-wide)
if [ ! -x "$venv/bin/conan" ]; then
  if ! python3 -m venv "$venv" >>"$log" 2>&1; then
    ensure_packages python3-venv
    rm -rf "$venv"
    python3 -m venv "$venv" >>"$log" 2>&1
  fi
  if ! "$venv/bin/python" -m pip install --quiet --timeout 30 --retries 2 "conan>=2,<3" >>"$log" 2>&1; then
    index=$("$venv/bin/python" -m pip config get global.index-url 2>/dev/null || true)
    index=${PIP_INDEX_URL:-${index:-https://pypi.org/simple/}}
    if ! "$venv/bin/python" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=20)" \
         "$index" >/dev/null 2>&1; then
      echo "packaging: SKIPPED: Conan is not installed and the Python package index ($index) cannot be reached"
      exit 0
    fi
    cat "$log"
    echo "packaging: FAILED: pip install conan failed though $index is reachable (log: $log)"
    exit 1
  fi
fi
conan="$venv/bin/conan"

fail() {
  tail -40 "$log"
  echo "packaging: FAILED: $1 (log: $log)"
  exit 1
}
"$conan" profile detect --force >>"$log" 2>&1 || fail "conan profile detect"
# offline: no remote at all, so nothing can be fetched (there is nothing to fetch)
for remote in $("$conan" remote list --format json 2>/dev/null |
                "$venv/bin/python" -c "import json, sys; print(' '.join(r['name'] for r in json.load(sys.stdin)))"); do
  "$conan" remote remove "$remote" >>"$log" 2>&1
done
# test_package builds in its own folder: a copy, so that the source tree stays clean
rm -rf "$work/test_package"
cp -r test_package "$work/test_package"
# devtensor needs C++20; the detected profile says gnu17 for GCC 12
"$conan" create . --build=missing -s compiler.cppstd=20 --test-folder "$work/test_package" >>"$log" 2>&1 ||
  fail "conan create ."
grep -q "devtensor package: LICENSE and devtensorCudaTargets.cmake present" "$log" ||
  fail "test_package did not check the package's files"
grep -q "devtensor 0\.[0-9.]* from Conan" "$log" || fail "test_package did not run"
echo "packaging: conan create . passed ($("$conan" --version), $((SECONDS - start)) s); vcpkg port not tested (no vcpkg here)"
