# shellcheck shell=bash
# The scenarios' shared helpers (issue 37): the test user's paths, the mirror, running rootless-k8s
# and kubectl as the user, checks on units, files, the receipt and pods. Sourced by
# test/e2e/scenarios.sh after lib/common.sh, with ROUTE, MODE, STATE, U, H and RT set.
# shellcheck disable=SC2317,SC2034 # helpers called from the scenario files; globals shared with them

SHARE=$H/.local/share/rootless-k8s
CONFIG=$H/.config/rootless-k8s
RECEIPT=$SHARE/receipt.json
SOCK=$RT/rootless-k8s/containerd/containerd.sock
MANIFESTS=$E2E_OPT/mirror/manifests
# The version sets the mirror serves (test/e2e/mirror/build-mirror.mjs): install, upgrade target,
# broken release, skew.
vset() { "$E2E_OPT/node" -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]])' "$E2E_OPT/mirror/versions.json" "$1"; }
V_INSTALL=$(vset install)
V_UPGRADE=$(vset upgrade)
V_BROKEN=$(vset broken)
V_SKEW=$(vset skew)
# The images the pods run, built locally (test/e2e/images) and loaded with `rootless-k8s image load`.
IMAGES=$E2E_OPT/images
image_name() { "$E2E_OPT/node" -e 'const l=JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); const i=l.find((x)=>x.role===process.argv[2]); if(!i) process.exit(1); process.stdout.write(i.name)' "$IMAGES/images.json" "$1"; }
# image_files: "role file" of every image built here, a line each
image_files() { "$E2E_OPT/node" -e 'for (const i of JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))) console.log(i.role, i.file)' "$IMAGES/images.json"; }
# Results for test/e2e/out/report.json: one JSON object per line (scenario timings, node info).
REPORT=${E2E_REPORT:-$STATE/report.jsonl}
: >"$REPORT"
chmod 644 "$REPORT"
report() { printf '%s\n' "$1" >>"$REPORT"; }
UNITS=(rootless-k8s.target rootless-k8s-rootlesskit.service rootless-k8s-etcd.service rootless-k8s-kube-apiserver.service
  rootless-k8s-kube-controller-manager.service rootless-k8s-kube-scheduler.service rootless-k8s-kubelet.service rootless-k8s-kube-proxy.service
  rootless-k8s-ports.service)
SCRATCH=/tmp/rk8s-e2e-$U
install -d -m 0700 -o "$E2E_USER" -g "$E2E_USER" "$SCRATCH"

# (RK8S_PATH: folders put before the PATH rootless-k8s sees, for a host tool of one matrix cell;
# RK8S_ENV: one VAR=VALUE more in its environment, as DOCKER_HOST for the Docker cell)
rk8s() {
  as_user env ${RK8S_ENV:+"$RK8S_ENV"} ${RK8S_PATH:+PATH="$RK8S_PATH:$E2E_OPT/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"} \
    "$E2E_OPT/bin/rootless-k8s" "$@"
}
# has PATTERN CMD...: CMD's output matches PATTERN. The output is read whole first: `CMD | grep -q`
# closes the pipe at the first match, and under pipefail the writer's SIGPIPE (exit 141) decided
# the check (seen on the slow VM: kubectl logs, status --json, doctor --json).
has() {
  local pattern=$1 o
  shift
  o=$("$@")
  grep -q -- "$pattern" <<<"$o"
}
# same_text A B: A and B are equal; else the difference is the output (for check's FAIL lines).
same_text() { diff <(printf '%s\n' "$1") <(printf '%s\n' "$2"); }
# lacks PATTERN CMD...: CMD's output does not match PATTERN.
lacks() { ! has "$@"; }
tool() { as_user "$E2E_OPT/node" "$E2E_OPT/lib/e2e-tool.mjs" "$@"; }
mirror_get() { "$E2E_OPT/node" -e 'fetch(process.argv[1]).then((r) => r.text()).then((t) => process.stdout.write(t))' "http://127.0.0.1:$MIRROR_PORT$1"; }
mirror_stat() { mirror_get /__e2e/stats | "$E2E_OPT/node" "$E2E_OPT/lib/e2e-tool.mjs" json - ".$1"; }
SOURCE=()
# set_version V: FLAGS = the install flags for Kubernetes V's minor, resolved as a user's would be
# (--kubernetes-version X.Y: the mirror's stable-X.Y.txt, each binary against its .sha256, the
# companions of assets/releases.json against their checksum files)
set_version() { FLAGS=(--yes --kubernetes-version "${1%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}"); }

start_mirror() {
  rm -f "$STATE/mirror.port"
  setsid "$E2E_OPT/node" "$E2E_OPT/lib/serve-mirror.mjs" --dir "$E2E_OPT/mirror" --port-file "$STATE/mirror.port" --log "$STATE/mirror.log" >"$STATE/mirror.out" 2>&1 </dev/null &
  MIRROR_PID=$!
  for _ in $(seq 1 100); do [ -s "$STATE/mirror.port" ] && break; sleep 0.1; done
  MIRROR_PORT=$(cat "$STATE/mirror.port")
  SOURCE=(--mirror "http://127.0.0.1:$MIRROR_PORT")
  info mirror "serving $E2E_OPT/mirror on 127.0.0.1:$MIRROR_PORT (pid $MIRROR_PID)"
}
stop_mirror() { [ -n "${MIRROR_PID:-}" ] && kill "$MIRROR_PID" 2>/dev/null; wait "${MIRROR_PID:-}" 2>/dev/null; }
trap 'stop_mirror; stop_b_mirror; second_host_down' EXIT

# run_bg LOG ARGS...: rootless-k8s ARGS as the test user in the background; PIDFILE gets its pid.
PIDFILE=$SCRATCH/rootless-k8s.pid
run_bg() {
  local log=$1
  shift
  rm -f "$PIDFILE"
  # shellcheck disable=SC2016 # $$ and $@ are the inner shell's
  as_user sh -c 'echo $$ > "$0"; exec "$@"' "$PIDFILE" "$E2E_OPT/bin/rootless-k8s" "$@" >"$log" 2>&1 &
  BG=$!
  for _ in $(seq 1 100); do [ -s "$PIDFILE" ] && break; sleep 0.05; done
}

units_active() { local u; for u in "${UNITS[@]}"; do [ "$(as_user systemctl --user is-active "$u")" = active ] || { echo "$u: $(as_user systemctl --user is-active "$u")"; return 1; }; done; }
# units_not_running UNIT...: "unit ActiveState SubState Result NRestarts" for each one not active (for a failed check)
units_not_running() {
  local u
  for u in "$@"; do
    [ "$(as_user systemctl --user is-active "$u")" = active ] || echo "$u $(as_user systemctl --user show -p ActiveState,SubState,Result,NRestarts --value "$u" | xargs)"
  done
}
units_gone() { ! has . as_user systemctl --user list-units --all --plain --no-legend 'rootless-k8s*'; }
# pid and start time of every unit: equal before and after means nothing was restarted
unit_stamps() { local u; for u in "${UNITS[@]:1}"; do echo "$u $(as_user systemctl --user show -p MainPID -p ExecMainStartTimestampMonotonic --value "$u" | tr '\n' ' ')"; done; }
receipt_files_stamp() { tool json "$RECEIPT" .files | "$E2E_OPT/node" -e 'const fs=require("fs");for(const f of JSON.parse(fs.readFileSync(0,"utf8"))){const s=fs.statSync(f.path);console.log(f.path,s.ino,s.mtimeMs)}'; }
receipt_value() { tool json "$RECEIPT" "$1"; }
printed_kubectl() { sed -n 's/^  try: *//p' "$1" | head -1; }
sub_uid_files() { # files below DIR owned by one of the test user's subordinate ids
  local start count
  IFS=: read -r _ start count < <(grep "^$E2E_USER:" /etc/subuid | head -1)
  find "$1" \( -uid +$((start - 1)) -a -uid -$((start + count)) \) 2>/dev/null | wc -l
}
ours_left() { # our paths that still exist in HOME and XDG_RUNTIME_DIR
  local p
  for p in "$SHARE" "$CONFIG" "$H/.cache/rootless-k8s" "$H/.local/state/rootless-k8s" "$RT/rootless-k8s" "$H"/.config/systemd/user/rootless-k8s*; do
    [ -e "$p" ] && echo "$p"
  done
}

# unreached CMD...: CMD (a kubectl), tried again, up to 3 times 2 s apart, when it failed before the
# API server had the request: its TLS handshake timed out, or the connection was refused (seen on
# the VM route beside a busy host: 2026-12-07). Its output is the last try's. A manifest on stdin
# (an argument "-") is kept for the next try.
unreached() {
  local tries=3 rc in="" out err
  out=$(mktemp "$STATE/kc-out.XXXXXX") err=$(mktemp "$STATE/kc-err.XXXXXX")
  if printf '%s\n' "$@" | grep -qx -- -; then in=$(mktemp "$STATE/kc-in.XXXXXX"); cat >"$in"; fi
  while :; do
    if [ -n "$in" ]; then "$@" <"$in" >"$out" 2>"$err"; else "$@" >"$out" 2>"$err"; fi
    rc=$?
    tries=$((tries - 1))
    if [ "$rc" = 0 ] || [ "$tries" = 0 ] || ! grep -qE 'TLS handshake timeout|connect: connection refused' "$err"; then break; fi
    echo "INFO (kubectl) not reached, tried again: $(tail -1 "$err")" >&2
    sleep 2
  done
  cat "$out"
  cat "$err" >&2
  rm -f "$out" "$err" ${in:+"$in"}
  return "$rc"
}
kc() { unreached as_user "$SHARE/versions/current/bin/kubectl" --kubeconfig "$CONFIG/admin.kubeconfig" "$@"; }
merged_context_works() { has ' Ready ' as_user "$SHARE/versions/current/bin/kubectl" --context rootless-k8s get nodes; }
no_merged_context() { ! as_user grep -qs 'name: rootless-k8s' "$H/.kube/config"; }
printed_line_works() { has ' Ready ' as_user sh -c "$(printed_kubectl "$1")"; }
run_to() { local log=$1; shift; "$@" >"$log" 2>&1; } # run_to LOG CMD...: CMD's output into LOG
# rk8s_to LOG ARGS...: rootless-k8s ARGS with its output in LOG.
rk8s_to() {
  local f=$1
  shift
  rk8s "$@" >"$f" 2>&1
}
# rk8s_shown LOG ARGS...: rk8s_to, and on failure the log's end on stdout (which check shows)
rk8s_shown() { local log=$1; shift; rk8s_to "$log" "$@" || { tail -30 "$log" | sed 's/^/    | /'; return 1; }; }
install_to() { local log=$1; shift; rk8s_shown "$log" install "$@"; }
status_json_healthy() { has '"healthy": true' rk8s status --json; }
# stats: "median max" of numbers, one per line
stats() { sort -n | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s %s", m, v[NR] }'; }
# pss_mib_of UID: the PSS of every process of UID and of its containers' subordinate ids, in whole
# MiB (lib/footprint.py, which the footprint scenario reports per component).
pss_mib_of() { python3 "$HERE/lib/footprint.py" "$1" | python3 -c 'import json, sys; print(round(json.load(sys.stdin)["totalPssMiB"]))'; }
# save_logs COMPONENT FILE [LINES]: the component's last LINES (default 100000) log lines into FILE.
save_logs() { rk8s logs "$1" -n "${3:-100000}" >"$2" 2>&1; }
# show_runtime_log FILE: the runtime's last 400 log lines (containerd and RootlessKit) kept in FILE,
# and its last 15 printed, for a failed check: what CI's output keeps.
show_runtime_log() { save_logs runtime "$1" 400; tail -15 "$1" | sed 's/^/    | runtime: /'; }
# The kubelet's eviction manager giving up its cycle: it cannot read the file systems (kubernetes#141119).
# (Not "failed to get summary stats ... node not found": the manager's first cycle may come before the
# kubelet registered its Node, once per start.)
eviction_manager_errors() { rk8s logs kubelet -n 10000000 2>/dev/null | grep -cE 'failed to synchronize|cannot find filesystem info|failed to get HasDedicatedImageFs'; }
# (the whole log: on a slow VM the kubelet writes thousands of lines after registering)
kubelet_logs_registered() { has 'Successfully registered node' rk8s logs kubelet -n 100000; }
mirror_bytes_over() { [ "$(mirror_stat bytes)" -gt "$1" ]; }
# The on-demand units (#33): the overlay agent and the CSR approver, which a single node does without.
ON_DEMAND=(rootless-k8s-overlay.service rootless-k8s-csr-approver.service)
# on_demand_skipped: each is inactive, skipped by its ConditionPathExists (not failed).
on_demand_skipped() {
  local u
  for u in "${ON_DEMAND[@]}"; do
    [ "$(as_user systemctl --user show -p ActiveState,ConditionResult --value "$u" | xargs)" = "inactive no" ] || { echo "$u: $(as_user systemctl --user show -p ActiveState,ConditionResult "$u" | xargs)"; return 1; }
  done
}
on_demand_active() { local u; for u in "${ON_DEMAND[@]}"; do [ "$(as_user systemctl --user is-active "$u")" = active ] || { echo "$u: $(as_user systemctl --user is-active "$u")"; return 1; }; done; }
target_inactive() { [ "$(as_user systemctl --user is-active rootless-k8s.target)" != active ]; }
no_unit_files() { ! ls "$H"/.config/systemd/user/rootless-k8s* >/dev/null 2>&1; }
partial_kept() { has . find "$H/.cache/rootless-k8s" -path '*partial*' -type f -size +0; }
current_is_kubernetes() { # the current link points at the set the receipt calls current, of this Kubernetes version
  [ "$(as_user readlink "$SHARE/versions/current")" = "$(receipt_value .current)" ] && [ "$(receipt_value .plan.versions.components.kubernetes)" = "$1" ] &&
    [ "$(as_user "$SHARE/versions/current/bin/kubelet" --version)" = "Kubernetes v$1" ]
}

# --- the node as a fresh install leaves it --------------------------------------------------------
assert_running_node() { # assert_running_node SCOPE K8S_VERSION OUTPUT_FILE
  local scope=$1 version=$2 out=$3 line
  check "$scope" "every unit is active (systemctl --user is-active: ${#UNITS[@]} units)" units_active
  check "$scope" "every file and binary matches its hash and mode in the receipt" tool receipt-check "$RECEIPT"
  check "$scope" "mode is $MODE (receipt plan)" test "$(receipt_value .plan.mode.name)" = "$MODE"
  line=$(printed_kubectl "$out")
  if [ -n "$line" ] && as_user sh -c "$line" >"$STATE/kubectl.out" 2>&1 && grep -q " Ready .*v$version" "$STATE/kubectl.out"; then
    pass "$scope" "the printed line works: $(tr -s ' ' <"$STATE/kubectl.out" | tail -1) (real kubectl: $line)"
  else fail "$scope" "the printed kubectl line ($line): $(tail -3 "$STATE/kubectl.out" 2>/dev/null | tr '\n' ' ')"; fi
  check "$scope" "rootless-k8s status exits 0 (healthy)" rk8s status
  check "$scope" "rootless-k8s status --json says healthy" status_json_healthy
  check "$scope" "doctor --node passes (units, readiness, cgroup, snapshotter, ports)" rk8s doctor --node
  check "$scope" "containerd answers CRI inside the namespace (RuntimeReady, NetworkReady): $(tool cri-status "$SOCK" 2>&1)" tool cri-status "$SOCK"
  check "$scope" "rootless-k8s logs kubelet shows the kubelet's registration" kubelet_logs_registered
}

# The Node object as the real API server returns it: the real kubelet's version, the runtime's,
# and the labels rootless-k8s keeps under rootless-k8s.io/.
assert_node_object() { # assert_node_object SCOPE K8S_VERSION
  local scope=$1 version=$2 node info labels
  node=$(receipt_value .plan.node.name)
  kc get node "$node" -o json >"$STATE/node.json" 2>&1 || { fail "$scope" "kubectl get node $node -o json: $(tail -2 "$STATE/node.json")"; return; }
  info=$(tool json "$STATE/node.json" .status.nodeInfo)
  labels=$(tool json "$STATE/node.json" .metadata.labels)
  report "{\"route\":\"$ROUTE\",\"nodeInfo\":$info,\"labels\":$labels}"
  check "$scope" "the Node's kubeletVersion is v$version ($(tool json "$STATE/node.json" .status.nodeInfo.kubeletVersion))" \
    test "$(tool json "$STATE/node.json" .status.nodeInfo.kubeletVersion)" = "v$version"
  check "$scope" "the Node's containerRuntimeVersion is the bundled runtime's ($(tool json "$STATE/node.json" .status.nodeInfo.containerRuntimeVersion))" \
    grep -qE '^containerd://2\.' <<<"$(tool json "$STATE/node.json" .status.nodeInfo.containerRuntimeVersion)"
  local mode_label
  mode_label=$(kc get node "$node" -o 'jsonpath={.metadata.labels.rootless-k8s\.io/mode}' 2>&1)
  check "$scope" "the Node carries rootless-k8s.io/mode=$mode_label" test "$mode_label" = "$MODE"
}

# The images the pods run, loaded with `rootless-k8s image load` (no registry is reachable), then
# a pod sandbox through the CRI as a probe of the runtime and the CNI bridge.
assert_images_and_sandbox() {
  local scope=$1 pods r rc f list=()
  for f in "$IMAGES"/*.tar; do list+=("$f"); done
  check "$scope" "rootless-k8s image load: ${#list[@]} image archives built locally ($IMAGES)" \
    rk8s_shown "$STATE/image-load.log" image load "${list[@]}"
  check "$scope" "each add-on image loaded is the digest its pod names (no 'cannot start' note)" lacks "cannot start" cat "$STATE/image-load.log"
  pods=$(receipt_value .plan.cidrs.pods)
  # The probe's first line is RunPodSandbox's result; the lines after it are failed tries of
  # StopPodSandbox (shown; the kubelet too tries again), and a last error fails the second check:
  # the sandbox would be left behind.
  r=$(tool pod "$SOCK" "$([ "$MODE" = delegated ] && echo /kubepods)" 2>&1) && rc=0 || rc=$?
  if [[ ${r%%$'\n'*} == "ready "${pods%%.*}.* ]]; then pass "$scope" "RunPodSandbox: pause container ready with bridge IP $(head -1 <<<"${r#ready }") (pods $pods)"
  else fail "$scope" "RunPodSandbox: $r"; return; fi
  check "$scope" "StopPodSandbox and RemovePodSandbox: the probe's sandbox is gone (exit $rc)$(tail -n +2 <<<"$r" | tr '\n' ' ' | sed 's/^./: &/')" test "$rc" = 0
}

# apply_sleepers NAMESPACE NAME REPLICAS IMAGE: a Deployment of REPLICAS pods of IMAGE (busybox,
# loaded) that sleep, ending at once when deleted: the load of the scale and footprint scenarios.
apply_sleepers() {
  apply <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $2, namespace: $1}
spec:
  replicas: $3
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: c
        image: $4
        imagePullPolicy: Never
        command: ["sleep", "86400"]
YAML
}
# kubectl apply of a manifest on stdin, as the test user
apply() { kc apply -f - >"$STATE/apply.out" 2>&1 || { cat "$STATE/apply.out"; return 1; }; }
logs_show_netexec() { has 'Started HTTP server' kc -n e2e logs deploy/web; }
hog_done() { case "$(kc -n e2e get pod hog -o 'jsonpath={.status.phase}' 2>/dev/null)" in Succeeded | Failed) return 0 ;; esac; return 1; }
no_number() { [ "$1" = max ] || ! grep -q '^[0-9]' <<<"$1"; }
# doctor_gives_up PATTERN: doctor's list of what the mode gives up has a line matching PATTERN
doctor_gives_up() { has "$1" rk8s doctor --json; }
# The kubelet's QoS cgroups anywhere in the machine's cgroup tree (kubepods and the tiers in it, in
# the names of either cgroup driver), a path a line: none in mode none, whose kubelet has
# cgroupsPerQOS false.
qos_cgroups() { find /sys/fs/cgroup -type d \( -name kubepods -o -name 'kubepods*.slice' -o -path '*/kubepods/burstable' -o -path '*/kubepods/besteffort' \) 2>/dev/null; }
# qos_tier TIER DIRS: DIRS (qos_cgroups' lines) hold the kubelet's QoS cgroup for TIER (burstable, besteffort)
qos_tier() { grep -Eq "/kubepods/$1\$|/kubepods-$1\.slice\$" <<<"$2"; }
# pod_cgroup_parent UID: the name of the cgroup that holds the pod's own (pod<uid>, or the systemd
# driver's kubepods…-pod<uid_>.slice), or nothing when the pod has none
pod_cgroup_parent() {
  local d
  d=$(find /sys/fs/cgroup -type d \( -name "pod$1" -o -name "kubepods*-pod${1//-/_}.slice" \) 2>/dev/null | head -1)
  [ -n "$d" ] && basename "$(dirname "$d")"
}
# name, uid, container id and restart count of the e2e pods that run (to compare across an upgrade)
POD_LINES='jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount} {.status.phase}{"\n"}{end}'
workload_pods() { kc -n e2e get pods -o "$POD_LINES" 2>&1 | grep -v '^hog ' | sort; }
# The add-ons' pods (every namespace), in the same shape.
addon_pods() { kc get pods -A -l rootless-k8s.io/addon -o "$POD_LINES" 2>&1 | grep -v '^helper-pod-' | sort; }
# Every add-on Deployment has finished rolling out: no pod of an older template left (a changed
# plan, such as --taint-none, changes their tolerations and so starts a rollout).
# The controller must also have seen the latest template (observedGeneration), and no pod of the old
# one may still be terminating: a Deployment counts it out of its replicas while the pod still shows
# Running until the kubelet stops it, so a snapshot taken then lists one pod too many.
addons_rolled_out() {
  local o
  o=$(kc get deploy -A -l rootless-k8s.io/addon -o 'jsonpath={range .items[*]}{.spec.replicas} {.status.replicas} {.status.updatedReplicas} {.status.availableReplicas} {.metadata.generation} {.status.observedGeneration}{"\n"}{end}') || return 1
  awk '{ if (!($1 == $2 && $1 == $3 && $1 == $4 && $5 == $6)) bad = 1 } END { exit bad }' <<<"$o" || return 1
  o=$(kc get pods -A -l rootless-k8s.io/addon -o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}') || return 1
  ! awk 'NF > 1' <<<"$o" | grep -q .
}
# all_running LINES: every pod line (as workload_pods prints them) ends in Running.
all_running() { ! grep -v ' Running$' <<<"$1" | grep -q .; }
# The pods have settled: each runs, and the container the API reports is one the runtime runs. After
# the namespace owner restarts (interrupt-start), the API still shows the dead containers as Running
# until the kubelet's next sync recreates them; a snapshot taken then compares stale ids.
pods_settled() {
  local o running id
  o=$(workload_pods; addon_pods)
  all_running "$o" || return 1
  addons_rolled_out || return 1
  running=$(tool running "$SOCK") || return 1
  while read -r _ _ id _; do grep -qx "${id#*://}" <<<"$running" || return 1; done <<<"$o"
}
pod_phase() { kc -n e2e get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
# phase_is POD PHASE: for wait_for, which re-runs it (a $(pod_phase) argument would be read once)
phase_is() { [ "$(pod_phase "$1")" = "$2" ]; }
addons_available() { coredns_available && provisioner_available && metrics_server_available; }
offline_log_ok() { has '^offline ok$' kc -n e2e logs offline; }
