#!/usr/bin/env bash
# Benchmark: `rootless-k8s install --yes` to a Ready node on the host route, per phase (fetch from
# a warm cache, write, start, ready), against references measured in the same run:
#   fetch (warm cache)  vs  sha256sum + tar -x of the same cached archives (a shell installer's floor)
#   start + ready       vs  systemctl --user start rootless-k8s.target of the same units, polled to
#                           Ready with kubectl (systemd and the components, without rootless-k8s)
#   start (warm)        vs  the same reference: `rootless-k8s stop`, then `rootless-k8s start` of the
#                           installed node to Ready (issue 41); stop's own time beside it
# Each install runs after `uninstall` (data, PKI and the download cache kept), RUNS times; medians.
# Prints a table; asserts nothing. Needs root (the host route's test user), like `make e2e`
# (test/bench/lib/node-env.sh).
set -uo pipefail
# shellcheck source=test/bench/lib/node-env.sh
. "$(dirname "$0")/lib/node-env.sh"
RUNS=${BENCH_RUNS:-3}

# A clean start with a warm cache: install once (downloads), then uninstall (keeps the cache).
rk8s uninstall --purge --yes >/dev/null 2>&1
rk8s install "${FLAGS[@]}" >"$OUT/warmup.log" 2>&1 || { echo "warm-up install failed: $(tail -5 "$OUT/warmup.log")" >&2; exit 1; }

ms_of() { # ms_of LOG LABEL-PREFIX: the step's duration from "ok  <label> (<n> ms|<n.n> s)"
  sed -n "s/^ok  $2.*(\([0-9.]*\) \(ms\|s\))$/\1 \2/p" "$1" | head -1 | awk '{ printf "%d", ($2 == "s") ? $1 * 1000 : $1 }'
}
now_ms() { date +%s%3N; }
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
all_inactive() { ! as_user systemctl --user list-units --plain --no-legend --state=active,activating,deactivating 'rootless-k8s*' | grep -q .; }
# node_ready [EPOCH-S]: the node is Ready, and (given EPOCH-S) its Ready was posted then or later, so a
# Ready left in the API from before a stop does not count.
node_ready() {
  local r
  r=$(as_user "$BIN/kubectl" --kubeconfig "$KCFG" get nodes -o 'jsonpath={.items[0].status.conditions[?(@.type=="Ready")].status} {.items[0].status.conditions[?(@.type=="Ready")].lastHeartbeatTime}' 2>/dev/null)
  [ "${r%% *}" = True ] && { [ -z "${1:-}" ] || [ "$(date -u -d "${r#* }" +%s)" -ge "$1" ]; }
}

declare -A T
for i in $(seq 1 "$RUNS"); do
  rk8s uninstall --yes >/dev/null 2>&1
  t0=$(now_ms)
  rk8s install "${FLAGS[@]}" >"$OUT/install-$i.log" 2>&1 || { echo "install $i failed: $(tail -5 "$OUT/install-$i.log")" >&2; exit 1; }
  T[total]+="$(($(now_ms) - t0)) "
  T[fetch]+="$(ms_of "$OUT/install-$i.log" Fetching) "
  T[write]+="$(ms_of "$OUT/install-$i.log" Writing) "
  T[start]+="$(ms_of "$OUT/install-$i.log" Starting) "
  T[ready]+="$(ms_of "$OUT/install-$i.log" Waiting) "
  # After Ready: the add-ons, and the wait for the NetworkPolicy enforcer's first rules (0 when absent).
  after=$(($(ms_of "$OUT/install-$i.log" Applying) + $(ms_of "$OUT/install-$i.log" "Waiting for rootless-k8s-netpol")))
  T[after]+="$after "
  T[to_ready]+="$(($(now_ms) - t0 - after)) "
  T[doctor]+="$(($(now_ms) - t0 - after - $(ms_of "$OUT/install-$i.log" Fetching) - $(ms_of "$OUT/install-$i.log" Writing) - $(ms_of "$OUT/install-$i.log" Starting) - $(ms_of "$OUT/install-$i.log" Waiting))) "

  # Reference: the same units started by systemd alone, polled to a Ready posted after the start.
  as_user systemctl --user stop rootless-k8s.target
  for _ in $(seq 1 200); do all_inactive && break; sleep 0.05; done
  t0=$(now_ms)
  as_user systemctl --user start rootless-k8s.target
  for _ in $(seq 1 600); do node_ready "$((t0 / 1000))" && break; sleep 0.05; done
  T[ref_start]+="$(($(now_ms) - t0)) "

  # Day two (issue 41): `rootless-k8s stop` and a warm `rootless-k8s start` to Ready (every unit
  # active and the default ServiceAccount too), beside the reference above.
  rk8s stop >"$OUT/stop-$i.log" 2>&1 || { echo "stop $i failed: $(tail -5 "$OUT/stop-$i.log")" >&2; exit 1; }
  T[stop]+="$(sed -n 's/.* is stopped (\([0-9.]*\) s).*/\1/p' "$OUT/stop-$i.log" | awk '{ printf "%d", $1 * 1000 }') "
  t0=$(now_ms)
  rk8s start >"$OUT/start-$i.log" 2>&1 || { echo "start $i failed: $(tail -5 "$OUT/start-$i.log")" >&2; exit 1; }
  T[warm]+="$(($(now_ms) - t0)) "

  # Reference: verify and unpack the same cached archives with sha256sum and tar.
  scratch=$(mktemp -d)
  t0=$(now_ms)
  find "$H/.cache/rootless-k8s/blobs" -type f -print0 | xargs -0 sha256sum >/dev/null
  find "$H/.cache/rootless-k8s/blobs" -type f | while read -r f; do tar -xzf "$f" -C "$scratch" 2>/dev/null || cp "$f" "$scratch/"; done
  T[ref_fetch]+="$(($(now_ms) - t0)) "
  rm -rf "$scratch"
done

# The node's memory at rest (issue 33): every process of the node (test/e2e/lib/footprint.py: the
# user's and its containers' subordinate ids) per component, IDLE seconds after DNS, storage and
# metrics are available (their images loaded as the e2e loads them), and again after a workload of
# 10 pods came and went.
IDLE=${BENCH_IDLE:-60}
rk8s install "${FLAGS[@]}" >"$OUT/idle.log" 2>&1 || { echo "install for the idle measurement failed" >&2; exit 1; }
rk8s image load "$E2E_OPT"/images/*.tar >"$OUT/image-load.log" 2>&1 || { echo "image load failed: $(tail -3 "$OUT/image-load.log")" >&2; exit 1; }
available() { [ "$(kc -n "$1" get deploy "$2" -o 'jsonpath={.status.availableReplicas}' 2>/dev/null)" = "${3:-1}" ]; }
until_true() { local i; for i in $(seq 1 600); do "$@" && return 0; sleep 0.5; done; return 1; }
addons() { available kube-system coredns && available kube-system metrics-server && available local-path-storage local-path-provisioner; }
until_true addons || { echo "the add-ons did not become available" >&2; exit 1; }
sleep "$IDLE"
FP_IDLE=$(python3 "$E2E/lib/footprint.py" "$(user_uid)")
bb=$("$E2E_OPT/node" -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).find((i) => i.role === "busybox").name' "$E2E_OPT/images/images.json")
kc create namespace bench-load >/dev/null
kc -n bench-load create deployment load --image "$bb" --replicas 10 -- sleep 86400 >/dev/null # (a tagged image: IfNotPresent, it was loaded)
until_true available bench-load load 10 || echo "(the workload did not become available)" >&2
kc delete namespace bench-load --wait=true >/dev/null 2>&1
sleep "$IDLE"
FP_AFTER=$(python3 "$E2E/lib/footprint.py" "$(user_uid)")
rk8s uninstall --purge --yes >/dev/null 2>&1

m() { tr ' ' '\n' <<<"${T[$1]}" | grep . | median; }
echo "install --yes to Ready, host route (mode none), Kubernetes $V_INSTALL (real binaries), median of $RUNS runs, warm download cache"
printf '  %-36s %9s   %-44s %9s   %s\n' phase "ms" reference "ms" ratio
printf '  %-36s %9s   %-44s %9s   %s\n' "doctor + plan" "$(m doctor)" "" "" ""
printf '  %-36s %9s   %-44s %9s   %s\n' "fetch (verify cache, install binaries)" "$(m fetch)" "sha256sum + tar -x of the same archives" "$(m ref_fetch)" "$(ratio "$(m fetch)" "$(m ref_fetch)")"
printf '  %-36s %9s   %-44s %9s   %s\n' "write (render, PKI reuse, atomic)" "$(m write)" "" "" ""
printf '  %-36s %9s   %-44s %9s   %s\n' "start + ready" "$(($(m start) + $(m ready)))" "systemctl --user start, polled to Ready" "$(m ref_start)" "$(ratio "$(($(m start) + $(m ready)))" "$(m ref_start)")"
printf '  %-36s %9s\n' "install to Ready (wall clock)" "$(m to_ready)"
printf '  %-36s %9s\n' "add-ons, NetworkPolicy enforcer's rules" "$(m after)"
printf '  %-36s %9s\n' "total (wall clock)" "$(m total)"
printf '  %-36s %9s   %-44s %9s   %s\n' "rootless-k8s start (warm) to Ready" "$(m warm)" "systemctl --user start, polled to Ready" "$(m ref_start)" "$(ratio "$(m warm)" "$(m ref_start)")"
printf '  %-36s %9s\n' "rootless-k8s stop" "$(m stop)"
echo
echo "memory at rest, host route (mode none): PSS of every process of the node per component, ${IDLE}s after DNS, storage and metrics were available, and ${IDLE}s after a workload of 10 pods came and went (MiB)"
python3 "$E2E/lib/footprint.py" --table "$FP_IDLE" "$FP_AFTER"
python3 -c 'import json, sys; print("  (k3s publishes about 1600 MB for a server with a workload, 275 MB for an agent; the goal of issue 33 is 640 MiB PSS: %.2fx of it)" % (json.loads(sys.argv[1])["totalPssMiB"] / 640))' "$FP_IDLE"
