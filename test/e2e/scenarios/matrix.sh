# shellcheck shell=bash
# The runtime × network matrix, and CRI-O (issue 37: one file per scenario group).
# Sourced by test/e2e/scenarios.sh after lib/scenario-lib.sh; its scenarios run by name.
# shellcheck disable=SC2317,SC2034,SC2153 # functions called by name; globals shared across the files

# --- the runtime × network matrix (issue 15) -------------------------------------------------------
# Each cell is one install with one runtime and one network driver on this route's mode: the real
# kubelet, a pod, a ClusterIP Service reached from another pod, a Service name resolved through the
# dns add-on, kubectl exec, and the Service's NodePort from the host; then uninstall --purge. A cell the plan cannot run must be refused
# by `install --dry-run` (exit 3, the reason and the alternative) with nothing written. Each cell
# is a line of report.json's matrix (pass, fail or refused, with the reason).
json_string() { "$E2E_OPT/node" -e 'process.stdout.write(JSON.stringify(process.argv[1]))' "$1"; }
# cell RUNTIME NETWORK RESULT REASON
cell() { report "{\"route\":\"$ROUTE\",\"mode\":\"$MODE\",\"cell\":{\"runtime\":\"$1\",\"network\":\"$2\"},\"result\":\"$3\",\"reason\":$(json_string "$4")}"; }
both_running() { [ "$(pod_phase web) $(pod_phase client)" = "Running Running" ]; }
client_reaches() { local out; out=$(kc -n e2e exec client -- timeout 5 wget -qO- "http://$1/hostname" 2>&1) && [ "$out" = web ]; }
# runtime_evidence RUNTIME: a failed cell's runtime's own words (crio_evidence, docker_evidence), where there are some
runtime_evidence() { if declare -F "$1_evidence" >/dev/null; then "$1_evidence"; fi; }
# matrix_cell RUNTIME NETWORK INSTALL-FLAGS...: a node of that cell runs pods, Services, DNS and exec.
matrix_cell() {
  local rt=$1 net=$2 name="$1 × $2" log f0=$E2E_FAILS agn bb ip np got f published imgs=()
  shift 2
  log=$STATE/matrix-$rt-$net.log
  if ! agn=$(image_name agnhost) || ! bb=$(image_name busybox); then fail matrix "no agnhost/busybox image in $IMAGES/images.json"; return; fi
  if ! check matrix "$name: install --yes $* is Ready" install_to "$log" "${FLAGS[@]}" "$@"; then
    runtime_evidence "$rt"
    cell "$rt" "$net" fail "install: $(grep -m1 '^error' "$log" || tail -1 "$log")"
    rk8s uninstall --purge --yes >/dev/null 2>&1
    return
  fi
  got="$(receipt_value .plan.runtime.name) $(receipt_value .plan.network.driver) $(receipt_value .plan.mode.name)"
  check matrix "$name: the plan runs runtime $rt, network $net, mode $MODE ($got)" test "$got" = "$rt $net $MODE"
  got=$(kc get nodes -o 'jsonpath={.items[0].status.nodeInfo.kubeletVersion} {.items[0].status.nodeInfo.containerRuntimeVersion}')
  check matrix "$name: the Node runs the real kubelet v$V_INSTALL ($got)" grep -q "^v$V_INSTALL " <<<"$got"
  if [ "$rt" = crio ]; then crio_images "$name"; else
    for f in "$IMAGES"/*.tar; do imgs+=("$f"); done
    check matrix "$name: rootless-k8s image load (${#imgs[@]} archives)" rk8s image load "${imgs[@]}"
    [ "$rt" = docker ] && docker_sandbox "$name"
  fi
  kc create namespace e2e >/dev/null 2>&1
  wait_for 60 kc -n e2e get serviceaccount default
  check matrix "$name: kubectl apply: pod web (agnhost netexec), Service web, pod client (busybox)" apply <<YAML || { cell "$rt" "$net" fail "kubectl apply failed"; rk8s uninstall --purge --yes >/dev/null 2>&1; return; }
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: e2e, labels: {app: web}}
spec:
  hostname: web
  containers:
  - {name: web, image: $agn, imagePullPolicy: Never, args: ["netexec", "--http-port=8080"], ports: [{containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: e2e}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: e2e}
spec:
  containers:
  - {name: c, image: $bb, imagePullPolicy: Never, command: ["sleep", "86400"]}
YAML
  check matrix "$name: both pods Running" wait_for "$TIMEOUT" both_running
  ip=$(kc -n e2e get svc web -o 'jsonpath={.spec.clusterIP}')
  check matrix "$name: the client reaches the Service's ClusterIP $ip:80 (kube-proxy)" wait_for 60 client_reaches "$ip"
  if ! check matrix "$name: the client reaches it by name (web.e2e.svc, the dns add-on)" wait_for 180 client_reaches web.e2e.svc.cluster.local; then
    # What DNS rests on, for the failure's cause: CoreDNS's pod and events, the client's resolver and answer.
    { kc -n kube-system get pods -l k8s-app=kube-dns -o wide; kc -n kube-system describe pods -l k8s-app=kube-dns | tail -15
      kc -n e2e exec client -- cat /etc/resolv.conf; kc -n e2e exec client -- nslookup web.e2e.svc.cluster.local; } 2>&1 | sed 's/^/    | /'
  fi
  got=$(kc -n e2e exec client -- hostname 2>&1)
  check matrix "$name: kubectl exec runs in the container (hostname: $got)" test "$got" = client
  [ "$rt" = docker ] && docker_cell_more "$name" "$bb"
  np=$(kc -n e2e get svc web -o 'jsonpath={.spec.ports[0].nodePort}')
  published=$(receipt_value .plan.publish.enabled)
  if [ "$published" = true ]; then
    check matrix "$name: the NodePort $np answers from the host at 127.0.0.1 (the port publisher)" wait_for 30 answers "http://127.0.0.1:$np/hostname" web
  else
    # What the plan says it gives up (pasta; docker: dockerd's ports are its own): a NodePort is an iptables rule, no socket pasta could see.
    got=$(receipt_value .plan.publish.reasons)
    local why="forwards only the ports a program listens on"
    [ "$rt" = docker ] && why="dockerd's own RootlessKit"
    check matrix "$name: the plan says NodePorts are not published ($got)" grep -q "$why" <<<"$got"
    sleep 3
    check matrix "$name: and the NodePort $np is indeed closed from the host" closed "http://127.0.0.1:$np/hostname"
  fi
  local what="pod, Service, DNS, exec and the NodePort from the host work"
  [ "$published" = true ] || what="pod, Service, DNS and exec work; the NodePort is not published from the host, as the plan says"
  [ "$rt" = crio ] && what+=" (images put into CRI-O's store by the e2e's loader: image load refuses CRI-O)"
  [ "$E2E_FAILS" != "$f0" ] && runtime_evidence "$rt"
  check matrix "$name: uninstall --purge --yes leaves nothing" rk8s uninstall --purge --yes
  if [ "$E2E_FAILS" = "$f0" ]; then cell "$rt" "$net" pass "$what"; else cell "$rt" "$net" fail "$((E2E_FAILS - f0)) checks failed (see the FAIL lines of $name)"; fi
}
# matrix_refused RUNTIME NETWORK PATTERN INSTALL-FLAGS...: install --dry-run refuses the cell with
# exit 3 and a reason matching PATTERN, and writes nothing.
matrix_refused() {
  local rt=$1 net=$2 pattern=$3 name="$1 × $2" out rc f0=$E2E_FAILS
  shift 3
  out=$(rk8s install --dry-run "${FLAGS[@]}" "$@" 2>&1)
  rc=$?
  check matrix "$name: install --dry-run $* is refused with exit 3 (got $rc): $(grep -m1 . <<<"$out")" test "$rc" = 3
  check matrix "$name: the refusal gives the reason ($pattern) and the alternative" grep -q -- "$pattern" <<<"$out"
  check matrix "$name: nothing was written" test -z "$(ours_left)"
  if [ "$E2E_FAILS" = "$f0" ]; then cell "$rt" "$net" refused "$(grep -m1 . <<<"$out")"; else cell "$rt" "$net" fail "not refused as expected (exit $rc)"; fi
}
scenario_matrix() {
  check matrix "no node is installed before the matrix" test -z "$(ours_left)" || return
  matrix_cell containerd slirp4netns --network slirp4netns
  # Debian 12's own pasta (2023_03_09) forwards no port with --disable-host-loopback: refused. Debian
  # 13's, built from its source package (test/e2e/build/components.json, passt), is put first on PATH.
  if [ -x /usr/bin/pasta ]; then matrix_refused containerd "pasta (Debian 12's)" "older than 2023_12_04" --network pasta; fi
  RK8S_PATH=$E2E_OPT/mirror/tools/pasta matrix_cell containerd pasta --network pasta
  matrix_cell containerd builtin --network builtin
  # The distribution's containerd 1.x through --runtime-bin (Debian 12: 1.6): Kubernetes 1.36 needs containerd 2.
  if [ ! -x /usr/bin/containerd ]; then info matrix "no /usr/bin/containerd on this route: no --runtime-bin cell"; return; fi
  matrix_refused "containerd $(/usr/bin/containerd --version | awk '{ print $3 }') (--runtime-bin)" slirp4netns "cannot run Kubernetes" \
    --runtime-bin /usr/bin/containerd --network slirp4netns
}

# CRI-O (--runtime crio): the static bundle's layout from the mirror (crio and pinns built from
# CRI-O's module, crun, runc, Debian 12's conmon) under the real kubelet, as the matrix cell
# crio × slirp4netns. `image load` refuses CRI-O (it would need skopeo), so the images go into
# CRI-O's store with test/e2e/tools/crio-image-load ($E2E_OPT/lib) inside the node's namespaces.
crio_evidence() { # the runtime's and the kubelet's own words, into $STATE and the output
  save_logs crio "$STATE/crio-owner.log"
  save_logs kubelet "$STATE/crio-kubelet.log"
  kc get pods -A -o wide >"$STATE/crio-pods.txt" 2>&1
  kc get events -A --sort-by=.lastTimestamp >"$STATE/crio-events.txt" 2>&1
  grep -E 'level=(error|fatal)|Error|error' "$STATE/crio-owner.log" | tail -15 | sed 's/^/    | crio: /'
  grep -E 'RunPodSandbox|CreatePodSandbox|failed' "$STATE/crio-kubelet.log" | tail -6 | sed 's/^/    | kubelet: /'
  tail -8 "$STATE/crio-events.txt" | sed 's/^/    | event: /'
}
crio_conf_value() { sed -n "s/^$1 = \"\\(.*\\)\"$/\\1/p" "$CONFIG/crio/crio.conf" | head -1; }
crio_load() { # crio_load ARCHIVE NAME: into CRI-O's store, inside the node's user and mount namespaces
  local pid opt=()
  pid=$(cat "$RT/rootless-k8s/rootlesskit/child_pid")
  while read -r o; do [ -n "$o" ] && opt+=(--opt "$o"); done < <(sed -n 's/^storage_option = \[ *"\(.*\)" *\]$/\1/p' "$CONFIG/crio/crio.conf")
  # (-p too: the tool re-executes /proc/self/exe, and that /proc is the node's PID namespace's)
  as_user nsenter -U --preserve-credentials -m -p -t "$pid" "$E2E_OPT/lib/crio-image-load" \
    --root "$(crio_conf_value root)" --runroot "$(crio_conf_value runroot)" --driver "$(crio_conf_value storage_driver)" "${opt[@]}" "$1" "$2"
}
# crio_images NAME: CRI-O's own checks once its node is Ready, then every image the e2e built, put
# into CRI-O's store (the matrix cell's image step for CRI-O).
crio_images() {
  local name=$1 rc role file img sandbox out
  if [ "$MODE" = none ]; then
    check matrix "$name: mode none: crio.conf keeps every pod's infra container (drop_infra_ctr = false)" grep -q '^drop_infra_ctr = false$' "$CONFIG/crio/crio.conf"
  else
    check matrix "$name: mode $MODE: crio.conf leaves drop_infra_ctr at CRI-O's default" lacks '^drop_infra_ctr' cat "$CONFIG/crio/crio.conf"
  fi
  check matrix "$name: the Node's containerRuntimeVersion is cri-o://1.36.3 ($(kc get nodes -o 'jsonpath={.items[0].status.nodeInfo.containerRuntimeVersion}'))" \
    test "$(kc get nodes -o 'jsonpath={.items[0].status.nodeInfo.containerRuntimeVersion}')" = cri-o://1.36.3
  rk8s image load "$IMAGES/pause.tar" >"$STATE/crio-image-load.log" 2>&1
  rc=$?
  check matrix "$name: rootless-k8s image load refuses CRI-O: exit $rc, $(head -1 "$STATE/crio-image-load.log")" test "$rc" = 3
  # The product sets no pause_image: CRI-O's default names the sandbox image; the pause built here
  # (Kubernetes' pause.c) is loaded under that name too, as the registry would serve it.
  save_logs crio "$STATE/crio-owner.log"
  sandbox=$(grep -o 'pause_image = \\"[^\\]*' "$STATE/crio-owner.log" | head -1 | sed 's/.*"//')
  info matrix "CRI-O's pause_image: ${sandbox:-unknown}"
  while read -r role file; do
    for img in $(image_name "$role") $([ "$role" = pause ] && echo "$sandbox"); do
      out=$(crio_load "$file" "$img" 2>&1)
      check matrix "$name: $img into CRI-O's store (crio-image-load: $(tail -1 <<<"$out"))" grep -q '^loaded ' <<<"$out"
    done
  done < <(image_files)
}
scenario_crio() { matrix_cell crio slirp4netns --runtime crio --network slirp4netns; }

# --- upstream's conformance suite against this node (issue 10; make conformance) -----------------
# Runs the [Conformance] tests of one list (E2E_CONFORMANCE_LIST: focus, the full list; ci; network;
# multinode) with upstream's e2e.test and ginkgo (E2E_CONFORMANCE_PROCS in parallel), as the test user
# against the node a scenario before installed; on two nodes (E2E_CONFORMANCE_NODES, 2 for the
# multinode list, else 1) the second host joins as a worker first and leaves after. The suite's extra
# images are loaded with `image load`; tests whose image cannot be built here are skipped by name
# (test/conformance/skips.txt), and on one node those that need two (one-node.txt). JUnit XML and
# the summary go to conformance-ROUTE/ beside the report. E2E_CONFORMANCE_SHARD=K/N runs shard K of
# N of the list (every Nth test from the Kth): the VM route runs the full list a shard at a time. A failure of the list fails the scenario
# unless test/conformance/expected-none.txt names it (mode none only), with its "gives up" line.
CONF=$E2E_OPT/conformance
