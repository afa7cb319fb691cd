#!/usr/bin/env bash
# Smoke test of the built binaries, run from a folder outside the repo (no node_modules beside them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
check() { if [ "$1" = "$2" ]; then pass=$((pass + 1)); else echo "FAIL $3: got '$1', want '$2'"; fail=$((fail + 1)); fi; }
want=$(node -p 'require(process.argv[1]).version' "$root/package.json")
for bin in "$root"/dist/rootless-k8s-linux-*; do
  run=("$bin")
  case "$bin" in
    *arm64) if [ "$(uname -m)" != aarch64 ]; then
              if ! command -v qemu-aarch64-static >/dev/null; then echo "skip $(basename "$bin"): qemu-aarch64-static is not installed"; continue; fi
              run=(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$bin")
            fi ;;
  esac
  cd "$tmp"
  check "$("${run[@]}" --version)" "rootless-k8s $want" "$(basename "$bin") --version"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
