#!/usr/bin/env bash
# Fetches the handwritten-digits data set (1,797 8×8 images, last column the label)
# that Debian's python3-sklearn ships, without installing scikit-learn and its
# dependencies: the package is downloaded and unpacked, and the one file copied.
# Usage: scripts/get-digits.sh [destination] (default data/digits.csv.gz)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-data/digits.csv.gz}
[ -s "$dest" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download python3-sklearn >/dev/null 2>&1 ||
  { apt-get update >/dev/null && apt-get download python3-sklearn >/dev/null; })
dpkg-deb -x "$work"/python3-sklearn_*.deb "$work/x"
found=$(find "$work/x" -path '*sklearn/datasets/data/digits.csv.gz' | head -1)
[ -n "$found" ] || { echo "digits.csv.gz not found in python3-sklearn" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
cp "$found" "$dest"
echo "$dest"
