#!/usr/bin/env bash
# `make bench`: runs every test/bench/*.bench.sh in turn. Each prints its own table of ratios
# against a reference tool measured in the same run; none asserts on time.
set -euo pipefail
cd "$(dirname "$0")/../.."
shopt -s nullglob
for b in test/bench/*.bench.sh; do
  echo "== $(basename "$b" .bench.sh)"
  bash "$b"
  echo
done
