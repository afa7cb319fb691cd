#!/usr/bin/env bash
# Start-up of the single binary against the floor of its runtime, measured in the same run:
#   `node -e 0` (the pinned Node the binary is built from)  vs  `rootless-k8s --version` / `--help`
# printed as mean, spread and the ratio to `node -e 0`; then the binary sizes (raw and gzip -6,
# what a download would be with compression). hyperfine when installed, else a plain loop.
set -euo pipefail
# shellcheck source=test/bench/measure.sh
. "$(dirname "$0")/measure.sh"
export ROOTLESS_K8S_NO_UPDATE_CHECK=1
runs=${BENCH_RUNS:-40}
names=("node -e 0" "rootless-k8s --version" "rootless-k8s --help")
cmds=("$node -e 0" "$bin --version" "$bin --help")

mapfile -t results < <(measure 5 0 "${cmds[@]}")
floor=${results[0]%% *}
printf '%-26s %9s %8s %14s\n' "start-up ($runs runs)" "mean ms" "± ms" "× node -e 0"
for i in "${!names[@]}"; do
  read -r mean sd <<<"${results[$i]}"
  printf '%-26s %9s %8s %14s\n' "${names[$i]}" "$mean" "$sd" "$("$node" -p "($mean / $floor).toFixed(2)")"
done
echo
printf '%-28s %12s %9s %12s\n' "binary" "bytes" "MiB" "gzip -6 MiB"
for f in "$root"/dist/rootless-k8s-linux-*; do
  size=$(stat -c %s "$f")
  gz=$(gzip -6 -c "$f" | wc -c)
  printf '%-28s %12s %9s %12s\n' "$(basename "$f")" "$size" "$("$node" -p "($size / 1048576).toFixed(1)")" "$("$node" -p "($gz / 1048576).toFixed(1)")"
done
