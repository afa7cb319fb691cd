#!/usr/bin/env bash
# Benchmark (issue 12): TCP throughput from the host to a pod through a published port, for each
# network driver the host route can run and its port driver, as a ratio to the same transfer over
# the pod's own loopback in the same run. iperf3 from Debian on both ends: the host's (Debian's
# iperf3, installed when missing) and the image test/bench/lib/iperf3-image.mjs builds offline.
#   slirp4netns, builtin (gvisor-tap-vsock)  RootlessKit's builtin port driver: a pod hostPort,
#                                            published by rootless-k8s-ports.service
#   pasta                                    its implicit port driver forwards listening sockets
#                                            only: a hostNetwork pod (the e2e's pasta build)
# Beside RootlessKit's published figures for its port drivers (docs/port.md, its CI hardware):
# builtin 29.3 Gbps, slirp4netns 7.56, pasta 39.9. Prints a table; asserts nothing. Needs root, like `make e2e`.
set -uo pipefail
# shellcheck source=test/bench/lib/node-env.sh
. "$(dirname "$0")/lib/node-env.sh"
T=${BENCH_IPERF_SECONDS:-5}
NETWORKS=${BENCH_NETWORKS:-slirp4netns builtin pasta}

if ! command -v iperf3 >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q iperf3 >/dev/null 2>&1 || { echo "error: iperf3 is missing; fix: apt-get install iperf3" >&2; exit 1; }
fi
IMAGE=$("$REPO/node_modules/.bin/node" "$HERE/lib/iperf3-image.mjs" --debs "$E2E_CACHE/debs-images" --out "$OUT/iperf3.tar") || { echo "the iperf3 image could not be built" >&2; exit 1; }
chmod 644 "$OUT/iperf3.tar"

gbps() { # gbps FILE: the receiver's rate of an iperf3 -J report, in Gbit/s
  "$E2E_OPT/node" -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); if (r.error) { console.error(r.error); process.exit(1); } console.log((r.end.sum_received.bits_per_second / 1e9).toFixed(2))' "$1"
}
connects() { as_user timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

declare -A PUB REF NOTE
cell() { # cell NETWORK: a node with that network driver, the iperf3 pod, both transfers
  local net=$1 port hn=false ports="ports: [{containerPort: 5201, hostPort: 15201}]" log=$OUT/ports-$1.log
  local path=""
  [ "$net" = pasta ] && { path=$E2E_OPT/mirror/tools/pasta; hn=true; ports=""; }
  port=$([ "$net" = pasta ] && echo 5201 || echo 15201)
  rk8s uninstall --purge --yes >/dev/null 2>&1
  if ! RK8S_PATH=$path rk8s install "${FLAGS[@]}" --network "$net" >"$log" 2>&1; then NOTE[$net]="install failed: $(tail -1 "$log")"; return; fi
  # The sandbox image (no registry here: the e2e's own build of Kubernetes' pause), then iperf3.
  rk8s image load "$E2E_OPT/images/pause.tar" "$OUT/iperf3.tar" >>"$log" 2>&1 || { NOTE[$net]="image load failed"; return; }
  kc apply -f - >>"$log" 2>&1 <<YAML
apiVersion: v1
kind: Pod
metadata: {name: iperf3, namespace: default}
spec:
  hostNetwork: $hn
  containers:
  - name: iperf3
    image: $IMAGE
    imagePullPolicy: Never
    args: ["-s", "-p", "5201"]
    $ports
YAML
  if ! kc wait --for=condition=Ready pod/iperf3 --timeout=120s >>"$log" 2>&1; then
    kc describe pod iperf3 >>"$log" 2>&1
    NOTE[$net]="the iperf3 pod did not become Ready (kubectl describe: $log)"
    return
  fi
  wait_for 30 connects "$port" || { NOTE[$net]="127.0.0.1:$port never answered on the host"; return; }
  kc exec iperf3 -- iperf3 -c 127.0.0.1 -p 5201 -t "$T" -J >"$OUT/ref-$net.json" 2>>"$log"
  REF[$net]=$(gbps "$OUT/ref-$net.json") || NOTE[$net]="loopback transfer failed"
  as_user iperf3 -c 127.0.0.1 -p "$port" -t "$T" -J >"$OUT/pub-$net.json" 2>>"$log"
  PUB[$net]=$(gbps "$OUT/pub-$net.json") || NOTE[$net]="published transfer failed"
}

for net in $NETWORKS; do cell "$net"; done
rk8s uninstall --purge --yes >/dev/null 2>&1

# RootlessKit's figure for the port driver each cell uses (its slirp4netns port driver, 7.56, is one
# rootless-k8s never uses); measured there to a process in the namespace, here on to a pod.
declare -A RK=([slirp4netns]="29.3 (builtin)" [builtin]="29.3 (builtin)" [pasta]="39.9 (implicit)")
echo "published port throughput, host route (mode none): iperf3 TCP for ${T}s, host -> pod through the published port, vs the pod's own loopback"
printf '  %-34s %14s %14s %9s   %s\n' "network (port driver)" "published Gb/s" "loopback Gb/s" ratio "RootlessKit's CI, Gb/s"
for net in $NETWORKS; do
  drv=$([ "$net" = pasta ] && echo "implicit, hostNetwork pod" || echo "builtin, hostPort")
  if [ -n "${NOTE[$net]:-}" ]; then printf '  %-34s %s\n' "$net ($drv)" "${NOTE[$net]}"; continue; fi
  printf '  %-34s %14s %14s %9s   %s\n' "$net ($drv)" "${PUB[$net]}" "${REF[$net]}" "$(ratio "${PUB[$net]}" "${REF[$net]}")" "${RK[$net]}"
done
