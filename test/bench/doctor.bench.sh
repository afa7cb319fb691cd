#!/usr/bin/env bash
# Wall time of `rootless-k8s doctor --json` on this machine, against references measured in the same
# run: `true` (the cost of starting any process) and `node -e 0` (the floor of the binary's runtime).
# Prints mean, spread and ratios; never asserts. Doctor exits 1 when a check fails, so exit codes are
# ignored. As root it also runs doctor as `nobody` (setpriv), the path of an ordinary user (the user
# namespace test and `systemctl --user` run only for a non-root user). The aim: under 150 ms here.
set -euo pipefail
# shellcheck source=test/bench/measure.sh
. "$(dirname "$0")/measure.sh"
export ROOTLESS_K8S_NO_UPDATE_CHECK=1 NO_COLOR=1
runs=${BENCH_RUNS:-30}
names=("true" "node -e 0" "doctor --json")
cmds=("true" "$node -e 0" "$bin doctor --json")
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  names+=("doctor --json (as nobody)")
  cmds+=("setpriv --reuid=nobody --regid=nogroup --clear-groups $bin doctor --json")
fi

mapfile -t results < <(measure 3 1 "${cmds[@]}")
t_true=${results[0]%% *}
t_node=${results[1]%% *}
printf '%-28s %9s %8s %10s %14s\n' "doctor ($runs runs)" "mean ms" "± ms" "× true" "× node -e 0"
for i in "${!names[@]}"; do
  read -r mean sd <<<"${results[$i]}"
  printf '%-28s %9s %8s %10s %14s\n' "${names[$i]}" "$mean" "$sd" "$("$node" -p "($mean / $t_true).toFixed(1)")" "$("$node" -p "($mean / $t_node).toFixed(2)")"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (other work on the machine skews every figure alike)"
