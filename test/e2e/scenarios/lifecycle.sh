# shellcheck shell=bash
# The life after install: reinstall, a changed plan, restart, an interrupted start, upgrade, rollback, skew, eviction, logs, uninstall, purge, a taken port, the offline bundle (issue 37: one file per scenario group).
# Sourced by test/e2e/scenarios.sh after lib/scenario-lib.sh; its scenarios run by name.
# shellcheck disable=SC2317,SC2034,SC2153 # functions called by name; globals shared across the files

# What an apply of the CoreDNS Deployment changes, and nothing else does: its generation (the spec)
# and the time of rootless-k8s's last apply in managedFields. Not the resourceVersion: the
# Deployment's status moves it whenever its pod's readiness does (after the worker scenario's
# reinstall of this node, say), with no apply at all.
addon_stamp() {
  kc -n kube-system get deploy coredns --show-managed-fields -o 'jsonpath={.metadata.generation} {.metadata.managedFields[?(@.manager=="rootless-k8s")].time}'
}

# stamp_unchanged BEFORE: the stamp names a generation and an apply time, and is still BEFORE
stamp_unchanged() { [[ $1 =~ ^[0-9]+\ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]+Z$ ]] && [ "$(addon_stamp)" = "$1" ]; }

scenario_reinstall() {
  local before after files_before files_after log=$STATE/reinstall.log
  before=$(unit_stamps)
  files_before=$(receipt_files_stamp)
  local receipt_before dns_before
  receipt_before=$(stat -c '%i %Y' "$RECEIPT")
  dns_before=$(addon_stamp)
  mirror_get /__e2e/reset >/dev/null
  check reinstall "install again with the same plan exits 0" install_to "$log" "${FLAGS[@]}" || return
  after=$(unit_stamps)
  files_after=$(receipt_files_stamp)
  check reinstall "it says nothing changed" grep -q "nothing changed" "$log"
  check reinstall "no unit restarted (same main pids and start times)" test "$before" = "$after"
  check reinstall "no file was rewritten (same inodes and mtimes, receipt included)" test "$files_before|$receipt_before" = "$files_after|$(stat -c '%i %Y' "$RECEIPT")"
  check reinstall "the add-ons were not rewritten (CoreDNS Deployment: generation and rootless-k8s's apply time $dns_before)" \
    stamp_unchanged "$dns_before"
  # --kubernetes-version reads the channel file and the checksum files again (the minor's newest
  # patch may have moved); no artifact is downloaded.
  check reinstall "no artifact downloaded: only the channel and checksum files were read ($(mirror_stat requests) requests, $(mirror_stat bytes) bytes)" \
    test "$(mirror_stat artifacts)" = 0
}

# A changed plan rewrites and restarts only what it touches. Mode none: --taint-none changes the
# kubelet's config alone. Delegated (no none taint there): another API port changes the namespace
# owner (RootlessKit publishes the port), and with it everything bound to it.
scenario_changed_plan() {
  local before after changed log=$STATE/changed-plan.log flag expect node
  if [ "$MODE" = none ]; then flag=(--taint-none); expect="rootless-k8s-kubelet.service "
  else flag=(--api-port 6444); expect="${UNITS[*]:1} "; fi
  node=$(receipt_value .plan.node.name)
  before=$(unit_stamps)
  check changed-plan "install ${flag[*]} exits 0" install_to "$log" "${FLAGS[@]}" "${flag[@]}" || return
  after=$(unit_stamps)
  changed=$(diff <(echo "$before") <(echo "$after") | sed -n 's/^> \([^ ]*\) .*/\1/p' | tr '\n' ' ')
  check changed-plan "a changed plan (${flag[*]}) restarted only what it touches (restarted: ${changed:-none})" test "$changed" = "$expect"
  if [ "$MODE" = none ]; then
    local taints
    taints=$(as_user "$SHARE/versions/current/bin/kubectl" --kubeconfig "$CONFIG/admin.kubeconfig" get node "$node" -o 'jsonpath={.spec.taints[*].key}' 2>&1)
    check changed-plan "the node carries the taint (taints: $taints)" grep -q "resource-isolation" <<<"$taints"
  else
    check changed-plan "the admin kubeconfig now points at port 6444" grep -q "server: https://127.0.0.1:6444" "$CONFIG/admin.kubeconfig"
    check changed-plan "the printed kubectl line works on the new port" printed_line_works "$log"
  fi
  before=$(unit_stamps)
  local back=()
  [ "$MODE" = none ] || back=(--api-port 6443)
  check changed-plan "install as before exits 0" install_to "$log" "${FLAGS[@]}" "${back[@]}"
  after=$(unit_stamps)
  changed=$(diff <(echo "$before") <(echo "$after") | sed -n 's/^> \([^ ]*\) .*/\1/p' | tr '\n' ' ')
  check changed-plan "and back: again only those restarted (restarted: ${changed:-none})" test "$changed" = "$expect"
}

# Day two (issue 41): 10 cycles of `stop` then `start`, then 10 of `restart`, back to back. Every
# start ends Ready with every unit active and the workloads running; stop leaves no unit running and
# `status` says stopped (exit 7); no component logs "command failed" meanwhile and systemd restarts
# no unit (NRestarts). Each start→Ready and stop time goes to report.json, with their median and max.
n_restarts() { local u n=0; for u in "${UNITS[@]:1}"; do n=$((n + $(as_user systemctl --user show -p NRestarts --value "$u"))); done; echo "$n"; }
command_failed_lines() {
  local c n=0
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
    n=$((n + $(rk8s logs "$c" -n 1000000 2>/dev/null | grep -c 'command failed')))
  done
  echo "$n"
}
units_inactive() { local u; for u in "${UNITS[@]}"; do [ "$(as_user systemctl --user is-active "$u")" = inactive ] || { echo "$u: $(as_user systemctl --user is-active "$u")"; return 1; }; done; }
# unit_started_us UNIT: when its main process started (after its ExecStartPre= gate), monotonic µs.
unit_started_us() { as_user systemctl --user show -p ExecMainStartTimestampMonotonic --value "rootless-k8s-$1.service"; }
# start_phases: where a start's time went, from the namespace owner's start: "etcd api kubelet"
# (seconds after RootlessKit's main process started, when each unit's main process started: the
# API server's after its etcd gate, the kubelet's after its /readyz gate), for issue 41.
start_phases() {
  local t0 u out=""
  t0=$(unit_started_us rootlesskit)
  for u in etcd kube-apiserver kubelet; do out+=" $(awk -v a="$t0" -v b="$(unit_started_us "$u")" 'BEGIN { printf "%.2f", (b - a) / 1e6 }')"; done
  echo "${out# }"
}

# unit_stop_seconds: "unit=seconds ..." for every unit of the node, the time from leaving active to
# entering inactive in its last stop (systemd's monotonic timestamps), longest first (#41).
unit_stop_seconds() {
  local u
  for u in $(as_user systemctl --user list-units --all --plain --no-legend 'rootless-k8s*' | awk '{ print $1 }'); do
    as_user systemctl --user show -p ActiveExitTimestampMonotonic,InactiveEnterTimestampMonotonic --value "$u" | xargs |
      awk -v u="${u#rootless-k8s-}" '{ if ($1 > 0 && $2 >= $1) printf "%s %.1f\n", u, ($2 - $1) / 1e6 }'
  done | sort -k2 -rn | awk '{ printf "%s%s=%s", (NR > 1 ? " " : ""), $1, $2 }'
}

# last_gate_path UNIT-COMPONENT: the readiness path its start gate waited for in its last start
# (the gate's line in the unit's log: "the API server is ready (PATH ok at URL) after N s").
last_gate_path() { rk8s logs "$1" -n 1000000 2>/dev/null | sed -n 's/.*the API server is ready (\([^ ]*\) ok at .*/\1/p' | tail -1; }
# marker_says VERSION: the bootstrap marker beside etcd's data records VERSION for the etcd data there
# now: "VERSION INODE PATH" of data/etcd/member (cli/readiness/bootstrap.ts).
marker_says() {
  local v ino p
  read -r v ino p < <(as_user cat "$SHARE/data/bootstrapped" 2>/dev/null) || return 1
  [ "$v" = "$1" ] && [ "$p" = "$SHARE/data/etcd/member" ] && [ "$(stat -c %i "$p")" = "$ino" ]
}

start_told() { rk8s start 2>&1; } # what start says, its steps' lines (stderr) with the rest
scenario_restart() {
  local i n rc log=$STATE/restart.log starts=() stops=() failed0 restarts=0 bad=0 st phases=()
  failed0=$(command_failed_lines)
  # E2E_RESTART_CYCLES of each kind (10; the VM route's guest job sets fewer: a cycle takes about
  # 2.5 min under software emulation).
  local per=${E2E_RESTART_CYCLES:-10}
  for i in $(seq 1 $((2 * per))); do
    if [ "$i" -le "$per" ]; then
      rk8s stop >"$log" 2>&1 || { bad=$((bad + 1)); fail restart "cycle $i: stop exited non-zero"; tail -20 "$log" | sed 's/^/    | /'; }
      stops+=("$(sed -n 's/.* is stopped (\([0-9.]*\) s).*/\1/p' "$log")")
      # A slow stop (#41: one in 20 took 61 s, the owner's TimeoutStopSec): which unit, how it ended, and its log kept.
      if awk -v s="${stops[-1]:-0}" 'BEGIN { exit !(s >= 20) }'; then
        info restart "cycle $i: stop took ${stops[-1]} s: $(grep -m1 -E 'stopped;|units stopped' "$log" | sed 's/^ *//'); the runtime's and the API server's logs: $STATE/restart-slow-stop-$i.log, $STATE/restart-slow-stop-$i-apiserver.log"
        save_logs runtime "$STATE/restart-slow-stop-$i.log" 400
        # The one seen so far was kube-apiserver's drain, 60.1 s: its --request-timeout (1 m) for a request in flight?
        save_logs kube-apiserver "$STATE/restart-slow-stop-$i-apiserver.log" 400
        info restart "cycle $i: each unit's stop, from leaving active to inactive (s): $(unit_stop_seconds)"
      fi
      [ "$i" = 1 ] && check restart "stop leaves no unit of the node running" units_inactive
      if [ "$i" = 1 ]; then
        rk8s status >"$STATE/restart-status.log" 2>&1
        st=$?
        check restart "status of the stopped node exits 7 and says stopped, with the fix (exit $st)" \
          sh -c "[ $st = 7 ] && grep -q 'is stopped' '$STATE/restart-status.log' && grep -q 'rootless-k8s start' '$STATE/restart-status.log'"
        check restart "a second stop: exit 0, already stopped" has 'already stopped' rk8s stop
      fi
      rk8s start --timeout "$TIMEOUT" >"$log" 2>&1
    else
      rk8s restart --timeout "$TIMEOUT" >"$log" 2>&1
    fi
    rc=$?
    if [ "$rc" != 0 ]; then
      bad=$((bad + 1))
      fail restart "cycle $i: $([ "$i" -le "$per" ] && echo start || echo restart) exited $rc"
      # What CI's output keeps: the units that are down, the error, then the runtime's last lines.
      units_not_running "${UNITS[@]:1}" | sed 's/^/    | not running: /'
      grep -E '^(error|fix|units not running)' "$log" | sed 's/^/    | /'
      show_runtime_log "$STATE/restart-failed-$i.log"
      cp "$log" "$STATE/restart-failed-$i-start.log"
      continue
    fi
    starts+=("$(sed -n 's/.* Ready[a-z ]*: \([0-9.]*\) s from start.*/\1/p' "$log")")
    phases+=("$(start_phases)")
    n=$(n_restarts)
    restarts=$((restarts + n))
    if [ "$n" != 0 ]; then
      # Which unit systemd restarted, and the runtime's last lines: what CI's output keeps (#41).
      info restart "cycle $i: systemd restarted units during the start: $(for u in "${UNITS[@]:1}"; do as_user systemctl --user show -p Id,NRestarts --value "$u" | xargs; done | awk '$2 > 0' | tr '\n' ' ')"
      show_runtime_log "$STATE/restart-restarted-$i.log"
    fi
    [ "$i" = 1 ] && check restart "a second start: exit 0, already running" has 'already running' rk8s start
  done
  check restart "$((2 * per)) cycles ($per stop+start, $per restart): every one ended Ready with every unit active" sh -c "[ $bad = 0 ]"
  check restart "no unit was restarted by systemd during the cycles (NRestarts summed after each start: $restarts)" test "$restarts" = 0
  check restart "no component logged 'command failed' during the cycles ($(($(command_failed_lines) - failed0)) new lines)" test "$(command_failed_lines)" = "$failed0"
  check restart "every unit is active" units_active
  check restart "the workloads run again" wait_for 180 pods_settled
  local kv gate
  kv=$(receipt_value .plan.versions.components.kubernetes)
  gate=$(last_gate_path kubelet)
  check restart "the bootstrap marker says $kv (written once a start passed the whole /readyz)" marker_says "$kv"
  check restart "a warm start's gates wait for /readyz without the two bootstrap hooks that poll once a second (the kubelet's: $gate)" \
    test "$gate" = "/readyz?exclude=poststarthook/rbac/bootstrap-roles&exclude=poststarthook/scheduling/bootstrap-system-priority-classes"
  check restart "but the controller-manager's waits for the whole /readyz (it gives /healthz 10 s: $(last_gate_path kube-controller-manager))" \
    test "$(last_gate_path kube-controller-manager)" = /readyz
  # A run cut short after it wrote new files leaves their restarts owed in the receipt (#35): the next
  # start makes them, even of a node whose every unit is active, and then owes nothing.
  local sched0 sched1
  sched0=$(as_user systemctl --user show -p MainPID --value rootless-k8s-kube-scheduler.service)
  as_user python3 -c 'import json, sys; f = sys.argv[1]; r = json.load(open(f)); r["restartsOwed"] = ["rootless-k8s-kube-scheduler.service"]; open(f, "w").write(json.dumps(r, indent=2) + "\n")' "$RECEIPT"
  check restart "a start with a restart owed (the scheduler's) makes it though every unit is active" has 'which an unfinished run owed' start_told
  sched1=$(as_user systemctl --user show -p MainPID --value rootless-k8s-kube-scheduler.service)
  check restart "the scheduler runs anew (main pid $sched0 → $sched1), and the receipt owes nothing ($(receipt_value .restartsOwed))" \
    test "$sched0" != "$sched1" -a "$(receipt_value .restartsOwed)" = undefined
  owner_killed_while_starting
  local s t
  s=$(printf '%s\n' "${starts[@]}" | grep . | stats)
  t=$(printf '%s\n' "${stops[@]}" | grep . | stats)
  info restart "start→Ready: median ${s% *} s, max ${s#* } s over ${#starts[@]} starts; stop: median ${t% *} s, max ${t#* } s over ${#stops[@]}"
  local pe pa pk
  pe=$(printf '%s\n' "${phases[@]}" | awk '{ print $1 }' | stats)
  pa=$(printf '%s\n' "${phases[@]}" | awk '{ print $2 }' | stats)
  pk=$(printf '%s\n' "${phases[@]}" | awk '{ print $3 }' | stats)
  info restart "where a start goes (median s after RootlessKit's start): etcd ${pe% *}, kube-apiserver ${pa% *} (after its etcd gate), kubelet ${pk% *} (after its /readyz gate); then the kubelet's own start to a fresh Ready"
  report "{\"route\":\"$ROUTE\",\"lifecycle\":{\"startReadyS\":[$(IFS=,; echo "${starts[*]}")],\"stopS\":[$(IFS=,; echo "${stops[*]}")],\"startMedianS\":${s% *},\"startMaxS\":${s#* },\"stopMedianS\":${t% *},\"stopMaxS\":${t#* },\"phaseMedianS\":{\"etcd\":${pe% *},\"apiserver\":${pa% *},\"kubelet\":${pk% *}}}}"
}

# The namespace owner killed while a start waits for it (#35): systemd restarts it, and the start
# jobs queued behind it end "dependency failed". The owner's unit starts the target again once it is
# up (cli/render/units.ts), so the node comes up by itself: started as at boot (the target alone, no
# rootless-k8s command), and started by `rootless-k8s start`, which must still end Ready.
# kill_owner_while_activating: SIGKILL to RootlessKit while its unit is activating (the runtime has
# not sent READY=1); prints the pid killed.
kill_owner_while_activating() {
  local owner=rootless-k8s-rootlesskit.service pid
  for _ in $(seq 1 1200); do
    pid=$(as_user systemctl --user show -p MainPID --value "$owner")
    if [ "$(as_user systemctl --user show -p ActiveState --value "$owner")" = activating ] && [ "${pid:-0}" != 0 ] && kill -KILL "$pid" 2>/dev/null; then
      echo "$pid"
      return 0
    fi
    sleep 0.05
  done
  return 1
}
owner_killed_while_starting() {
  local log=$STATE/restart-owner-killed.log bgp rc pid t0
  rk8s stop >"$log" 2>&1 || { fail restart "stop before the owner fault exited non-zero"; return; }
  # As at boot: the user manager starts the target, nothing else.
  as_user systemctl --user start --no-block rootless-k8s.target
  t0=$(ts)
  pid=$(kill_owner_while_activating)
  check restart "the target started alone (as at boot), RootlessKit killed (SIGKILL, pid ${pid:-none}) while its unit was activating" test -n "$pid"
  if wait_for "$TIMEOUT" eval 'units_active >/dev/null && status_json_healthy'; then
    pass restart "the node came up by itself in $(elapsed "$t0") s (systemd restarted the owner, whose unit started the target again): every unit active, status healthy"
  else
    fail restart "the node did not come up by itself within $TIMEOUT s after the owner died during its start"
    units_not_running "${UNITS[@]}" | sed 's/^/    | not running: /'
    rk8s start --timeout "$TIMEOUT" >/dev/null 2>&1
  fi
  rk8s stop >"$log" 2>&1 || { fail restart "stop before the second owner fault exited non-zero"; return; }
  rk8s start --timeout "$TIMEOUT" >"$log" 2>&1 &
  bgp=$!
  pid=$(kill_owner_while_activating)
  wait "$bgp"
  rc=$?
  check restart "rootless-k8s start, RootlessKit killed (SIGKILL, pid ${pid:-none}) while its unit was activating" test -n "$pid"
  check restart "that start still ends Ready (exit $rc)" test "$rc" = 0
  check restart "every unit is active after the owner faults" units_active
  [ "$rc" = 0 ] || { units_not_running "${UNITS[@]}" | sed 's/^/    | not running: /'; tail -20 "$log" | sed 's/^/    | start: /'; rk8s start --timeout "$TIMEOUT" >/dev/null 2>&1; }
}

scenario_interrupt_start() {
  local log=$STATE/interrupt-start.log rc
  as_user systemctl --user stop rootless-k8s.target
  run_bg "$log" install "${FLAGS[@]}"
  wait_for 120 grep -q "Starting the node" "$log"
  kill -INT "$(cat "$PIDFILE")"
  wait "$BG"
  rc=$?
  check interrupt-start "SIGINT while starting exits 130 (got $rc)" test "$rc" = 130
  check interrupt-start "it names the step: $(grep -o 'interrupted during step "[a-z]*"' "$log" | head -1)" grep -qE 'interrupted during step "(start|ready)"' "$log"
  check interrupt-start "the receipt says the install did not finish ($(receipt_value .state))" test "$(receipt_value .state)" = failed
  check interrupt-start "a re-run completes (exit 0, Ready)" install_to "$STATE/interrupt-start-rerun.log" "${FLAGS[@]}"
  check interrupt-start "re-run: every unit is active" units_active
  check interrupt-start "re-run: the receipt says installed" test "$(receipt_value .state)" = installed
}

node_kubelet_version() { as_user "$SHARE/versions/current/bin/kubectl" --kubeconfig "$CONFIG/admin.kubeconfig" get node "$(receipt_value .plan.node.name)" -o 'jsonpath={.status.nodeInfo.kubeletVersion}' 2>&1; }

scenario_upgrade() {
  local log=$STATE/upgrade.log rc owner_before
  owner_before=$(as_user systemctl --user show -p MainPID --value rootless-k8s-rootlesskit.service)
  local pods_before pods_after addons_before addons_after
  check upgrade "the workloads and add-ons have settled: every pod runs the container the API reports" wait_for 300 pods_settled
  pods_before=$(workload_pods)
  addons_before=$(addon_pods)
  info upgrade "running pods before: $(tr '\n' ';' <<<"$pods_before")"
  check upgrade "the node was installed with --kubernetes-version ${V_INSTALL%.*}: it runs $V_INSTALL (stable-${V_INSTALL%.*}.txt), each binary verified by upstream's .sha256" \
    test "$(node_kubelet_version)" = "v$V_INSTALL"
  local tags
  tags=$(receipt_value .plan.versions.reasons | grep -o "containerd [0-9.]*: [^\"]*" | grep -o "no newer [0-9.]* patch among containerd/containerd's [0-9]* [0-9.]* tags" | head -1)
  check upgrade "each companion is the newest patch its repository's tags name (the mirror's name the build), read through the mirror (${tags:-containerd: no tags read})" test -n "$tags"
  check upgrade "--dry-run --to ${V_UPGRADE%.*} shows the change and changes nothing" rk8s upgrade --dry-run --to "${V_UPGRADE%.*}" "${SOURCE[@]}"
  rk8s upgrade --yes --to "${V_UPGRADE%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log" 2>&1
  rc=$?
  check upgrade "upgrade --to ${V_UPGRADE%.*}: $V_INSTALL → $V_UPGRADE exits 0 (got $rc)" test "$rc" = 0 || { tail -30 "$log" | sed 's/^/    | /'; return; }
  check upgrade "the current link points at the new set ($(as_user readlink "$SHARE/versions/current"))" test "$(as_user readlink "$SHARE/versions/current")" = "$(receipt_value .current)"
  check upgrade "the old set stays next to it for a rollback ($(receipt_value .previous))" test -d "$SHARE/versions/$(receipt_value .previous)/bin"
  local v
  v=$(node_kubelet_version)
  check upgrade "node's kubeletVersion is $v" test "$v" = "v$V_UPGRADE"
  check upgrade "the namespace owner and runtime were not restarted (only Kubernetes changed; pid $owner_before)" \
    test "$(as_user systemctl --user show -p MainPID --value rootless-k8s-rootlesskit.service)" = "$owner_before"
  check upgrade "every file matches the receipt after the upgrade" tool receipt-check "$RECEIPT"
  check upgrade "a new version's first start waited for the whole /readyz (the kubelet's gate: $(last_gate_path kubelet))" \
    test "$(last_gate_path kubelet)" = /readyz
  check upgrade "then the bootstrap marker says $V_UPGRADE" marker_says "$V_UPGRADE"
  wait_for 300 pods_settled
  pods_after=$(workload_pods)
  check upgrade "running pods survived: same pods, same containers, no restart ($(tr '\n' ';' <<<"$pods_after"))" test "$pods_before" = "$pods_after"
  addons_after=$(addon_pods)
  check upgrade "the add-ons stayed up through it: same pods, same containers, no restart ($(cut -d' ' -f1 <<<"$addons_after" | tr '\n' ' '))" \
    same_text "$addons_before" "$addons_after"
  check upgrade "status is healthy" rk8s status
}

# ready_posted_since NODE EPOCH: the node's Ready is True and was posted at EPOCH or later (whole seconds).
ready_posted_since() { [ "${1%% *}" = True ] && [ "$(date -u -d "${1#* }" +%s)" -ge "$2" ]; }

scenario_rollback() {
  local log=$STATE/rollback.log rc node t0 ready started
  node=$(receipt_value .plan.node.name)
  rk8s upgrade --yes --manifest "$MANIFESTS/k8s-$V_BROKEN.json" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log" 2>&1
  rc=$?
  # Read at once: the Ready the rollback waited for, and when the kubelet it restarted started.
  ready=$(kc get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}')
  started=$(as_user systemctl --user show -p ActiveEnterTimestamp --value rootless-k8s-kubelet.service)
  check rollback "an upgrade whose API server crashes exits 1 (got $rc)" test "$rc" = 1
  check rollback "it shows the failing unit's last lines" grep -q "last .* lines of rootless-k8s-kube-apiserver.service" "$log"
  check rollback "it says it rolled back: $(grep -o 'rolled back[^;]*' "$log" | head -1)" grep -q "rolled back: the node is Ready on Kubernetes $V_UPGRADE" "$log"
  check rollback "the current link is back on the $V_UPGRADE set ($(as_user readlink "$SHARE/versions/current"))" current_is_kubernetes "$V_UPGRADE"
  # The kubelet restarted in the rollback posts its own Ready: the old one left in the API never counts.
  check rollback "the Ready it ended on was posted by the kubelet it started (Ready ${ready#* }, kubelet started $started)" \
    ready_posted_since "$ready" "$(date -u -d "$started" +%s)"
  # The node controller may have marked pods not ready while the new kubelet started; it puts them back.
  t0=$(ts)
  wait_for 60 rk8s status
  info rollback "status was healthy $(elapsed "$t0") s after the rollback ended"
  check rollback "status is healthy on $V_UPGRADE (within 60 s)" rk8s status
  check rollback "every unit is active again" units_active
}

scenario_skew() {
  local log=$STATE/skew.log rc
  mirror_get /__e2e/reset >/dev/null
  rk8s upgrade --yes --manifest "$MANIFESTS/k8s-$V_SKEW.json" "${SOURCE[@]}" >"$log" 2>&1
  rc=$?
  check skew "${V_UPGRADE%.*} → ${V_SKEW%.*} is refused with exit 3 (got $rc): $(head -1 "$log")" test "$rc" = 3
  check skew "the refusal names the rule (one minor at a time)" grep -q "one minor at a time" "$log"
  check skew "nothing was downloaded (requests: $(mirror_stat requests))" test "$(mirror_stat requests)" = 0
}

# Eviction (issue 43): in mode none the kubelet's eviction manager is all that protects the host.
# Thresholds set through install's own option just past what the machine has must turn the pressure
# conditions True, taint the node and evict a BestEffort pod; the defaults back must clear them; an
# emptyDir that outgrows its pod's ephemeral-storage limit is evicted; and the manager logs no error.
node_condition() { kc get node "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].status}" 2>/dev/null; }
condition_is() { [ "$(node_condition "$1" "$2")" = "$3" ]; }
node_taints() { kc get node "$1" -o 'jsonpath={.spec.taints[*].key}' 2>/dev/null; }
pressure_gone() { condition_is "$1" MemoryPressure False && condition_is "$1" DiskPressure False && ! grep -q pressure <<<"$(node_taints "$1")"; }
pod_field() { kc -n "$1" get pod "$2" -o "jsonpath={$3}" 2>/dev/null; }
evicted() { [ "$(pod_field "$1" "$2" .status.reason)" = Evicted ]; }
running_in() { [ "$(pod_field "$1" "$2" .status.phase)" = Running ]; }
pressure_tainted() { local t; t=$(node_taints "$1"); grep -q memory-pressure <<<"$t" && grep -q disk-pressure <<<"$t"; }

scenario_eviction() {
  local bb node cur flags log=$STATE/eviction.log mem_kib thr t0 errs0 errs1 st
  bb=$(image_name busybox) || { fail eviction "no busybox image"; return; }
  node=$(receipt_value .plan.node.name)
  cur=$(receipt_value .plan.versions.components.kubernetes)
  # The set the node runs now (after an upgrade, not the first one), so only the kubelet restarts.
  flags=(--yes --kubernetes-version "$cur" --timeout "$TIMEOUT" "${SOURCE[@]}")
  errs0=$(eviction_manager_errors)
  kc create namespace e2e-evict >/dev/null 2>&1
  check eviction "kubectl apply: pod filler (ephemeral-storage limit 16Mi, writes 40 MiB to an emptyDir), pods idle and tolerant (BestEffort; tolerant tolerates the pressure taints)" apply <<YAML || return
apiVersion: v1
kind: Pod
metadata: {name: filler, namespace: e2e-evict}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: $bb
    imagePullPolicy: Never
    command: ["sh", "-c", "dd if=/dev/zero of=/data/fill bs=1M count=40 && sleep 86400"]
    resources: {limits: {ephemeral-storage: 16Mi}}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: idle, namespace: e2e-evict}
spec:
  containers:
  - {name: c, image: $bb, imagePullPolicy: Never, command: ["sleep", "86400"]}
---
apiVersion: v1
kind: Pod
metadata: {name: tolerant, namespace: e2e-evict}
spec:
  tolerations:
  - {key: node.kubernetes.io/memory-pressure, operator: Exists}
  - {key: node.kubernetes.io/disk-pressure, operator: Exists}
  containers:
  - {name: c, image: $bb, imagePullPolicy: Never, command: ["sleep", "86400"]}
YAML
  t0=$(ts)
  wait_for 300 evicted e2e-evict filler
  check eviction "the pod whose emptyDir outgrew its ephemeral-storage limit was evicted after $(elapsed "$t0") s: $(pod_field e2e-evict filler .status.message)" \
    evicted e2e-evict filler
  check eviction "the BestEffort pods idle and tolerant run" wait_for 120 running_in e2e-evict idle
  wait_for 60 running_in e2e-evict tolerant
  mem_kib=$(as_user sed -n 's/^MemTotal: *\([0-9]*\) kB$/\1/p' /proc/meminfo)
  # Memory first, alone: under memory pressure only, the restarted kubelet admits its pods again
  # but rejects a BestEffort one that does not tolerate it; the eviction manager itself then evicts
  # the one that does, ranked by its use of memory over its requests.
  thr="memory.available<$((mem_kib - 1024))Ki"
  check eviction "install --eviction-hard '$thr' (just under the machine's memory) exits 0" \
    install_to "$log" "${flags[@]}" --eviction-hard "$thr" || return
  t0=$(ts)
  wait_for 120 condition_is "$node" MemoryPressure True
  check eviction "MemoryPressure turned True $(elapsed "$t0") s after install returned" condition_is "$node" MemoryPressure True
  wait_for 60 has memory-pressure node_taints "$node"
  check eviction "the node carries the memory-pressure taint ($(node_taints "$node"))" has memory-pressure node_taints "$node"
  wait_for 180 evicted e2e-evict idle
  check eviction "the BestEffort pod was refused on re-admission $(elapsed "$t0") s after install returned: $(pod_field e2e-evict idle .status.message)" \
    evicted e2e-evict idle
  wait_for 180 evicted e2e-evict tolerant
  check eviction "the pod that tolerates the pressure was evicted by the eviction manager $(elapsed "$t0") s after install returned: $(pod_field e2e-evict tolerant .status.message)" \
    has 'low on resource: memory' pod_field e2e-evict tolerant .status.message
  # Then the disk, with memory: 99% of the disk must stay free, which no used disk has.
  thr="memory.available<$((mem_kib - 1024))Ki,nodefs.available<99%"
  check eviction "install --eviction-hard '$thr' (and 99% of its disk) exits 0" install_to "$log" "${flags[@]}" --eviction-hard "$thr" || return
  t0=$(ts)
  wait_for 120 condition_is "$node" DiskPressure True
  check eviction "DiskPressure turned True $(elapsed "$t0") s after install returned" condition_is "$node" DiskPressure True
  wait_for 60 pressure_tainted "$node"
  check eviction "the node carries both pressure taints ($(node_taints "$node"))" pressure_tainted "$node"
  st=$(rk8s status 2>&1)
  check eviction "status shows the pressure ($(grep -m1 'conditions' <<<"$st" | sed 's/^ *//'))" grep -q 'MemoryPressure=True.*DiskPressure=True' <<<"$st"
  check eviction "status says the eviction manager observes the node ($(grep -m1 ' eviction ' <<<"$st" | sed 's/^ *//'))" grep -q 'eviction *observing:' <<<"$st"
  check eviction "install with the default thresholds exits 0" install_to "$log" "${flags[@]}"
  t0=$(ts)
  wait_for 120 pressure_gone "$node"
  check eviction "the defaults back cleared the conditions and the taints in $(elapsed "$t0") s (MemoryPressure=$(node_condition "$node" MemoryPressure), DiskPressure=$(node_condition "$node" DiskPressure))" \
    pressure_gone "$node"
  errs1=$(eviction_manager_errors)
  check eviction "the eviction manager logged no error during the scenario ($((errs1 - errs0)) new lines)" test "$errs1" = "$errs0"
  kc delete namespace e2e-evict --wait=false >/dev/null 2>&1
}

# Log files (issue 43): where the user manager has no journal, each unit appends to its file and a
# timer of the node rotates them past the cap; `logs` reads across the rotation.
file_size() { as_user stat -c %s "$1" 2>/dev/null || echo 0; }
no_rotation_timer() { ! as_user systemctl --user cat rootless-k8s-logrotate.timer >/dev/null 2>&1; }
scenario_logs() {
  local to dir f log=$STATE/logs.log cap=$((10 * 1024 * 1024)) before after
  to=$(receipt_value .plan.logging.to)
  if [ "$to" != file ]; then
    check logs "with a journal there is no log file to rotate: $(rk8s logs --rotate 2>&1)" has 'Nothing to rotate' rk8s logs --rotate
    check logs "and no rotation timer" no_rotation_timer
    return
  fi
  dir=$(receipt_value .plan.paths.logDir)
  f=$dir/rootless-k8s-kubelet.service.log
  check logs "the rotation timer is active, a member of the node's target" \
    test "$(as_user systemctl --user is-active rootless-k8s-logrotate.timer)" = active
  # 11 MiB of lines appended to the kubelet's log, as a chatty kubelet would write them; the same to
  # the rotation's own log, which systemd keeps open with O_APPEND while the rotation truncates it.
  local own=$dir/rootless-k8s-logrotate.service.log
  for x in "$f" "$own"; do
    as_user "$E2E_OPT/node" -e 'const fs=require("fs");const fd=fs.openSync(process.argv[1],"a");const l="e2e filler line ".padEnd(1023,"x")+"\n";for(let i=0;i<11*1024;i++)fs.writeSync(fd,l);fs.writeSync(fd,"e2e last filler line\n");fs.closeSync(fd)' "$x"
  done
  before=$(file_size "$f")
  check logs "the timer's service runs the rotation (systemctl --user start rootless-k8s-logrotate.service)" \
    as_user systemctl --user start rootless-k8s-logrotate.service
  after=$(file_size "$f")
  check logs "the kubelet's log past the cap ($before bytes) was rotated: now $after bytes, $(file_size "$f.1") in .1" \
    test "$after" -lt "$cap" -a "$(file_size "$f.1")" -ge "$before"
  # What the rotation printed after emptying its own log went through systemd's descriptor: at the start of the file, no hole before it.
  check logs "a unit's output after the rotation lands at the start of its emptied file ($(file_size "$own") bytes: $(as_user head -c 80 "$own" | tr '\n\0' '|@'))" \
    has '^rotated rootless-k8s-kubelet.service.log' as_user head -c 200 "$own"
  save_logs kubelet "$log"
  check logs "logs kubelet reads across the rotation ($(wc -l <"$log") lines, the filler's last line among them)" grep -q '^e2e last filler line$' "$log"
  local big
  big=$(as_user find "$dir" -name '*.log' -size +$((cap / 1024))k)
  check logs "no live log file is past the cap (${big:-none})" test -z "$big"
}

scenario_uninstall() {
  local log=$STATE/uninstall.log left
  rk8s uninstall >"$log" 2>&1
  check uninstall "without a terminal, uninstall asks for --yes and refuses (exit 3)" test $? = 3
  check uninstall "uninstall --yes exits 0" run_to "$log" rk8s uninstall --yes
  check uninstall "it deleted the add-ons' objects through the API first ($(grep -o '[0-9]* add-on objects deleted' "$log"))" \
    grep -q ', [1-9][0-9]* add-on objects deleted' "$log"
  check uninstall "no unit of the node is loaded any more" units_gone
  local np
  np=$(cat "$STATE/publish/nodeport" 2>/dev/null)
  [ -n "$np" ] && check uninstall "no published port is left: nothing listens on the NodePort $np" not_listening "$np"
  check uninstall "nothing listens on the hostPort 18082" not_listening 18082
  left=$(ours_left | tr '\n' ' ')
  check uninstall "only data is left: $left" test "$left" = "$SHARE $CONFIG $H/.cache/rootless-k8s "
  check uninstall "below ~/.local/share/rootless-k8s: only data/ and the receipt" test "$(as_user ls "$SHARE" | tr '\n' ' ')" = "data receipt.json "
  check uninstall "below ~/.config/rootless-k8s: only pki/" test "$(as_user ls "$CONFIG" | tr '\n' ' ')" = "pki "
  check uninstall "nothing of ours in XDG_RUNTIME_DIR" test ! -e "$RT/rootless-k8s"
  check uninstall "the context it added to ~/.kube/config is gone" no_merged_context
  check uninstall "running it again is harmless (exit 0)" rk8s uninstall --yes
}

scenario_purge() {
  local n left
  n=$(sub_uid_files "$SHARE/data")
  check purge "$n files owned by sub-UIDs (unpacked images, files containers wrote as uid 1000) are in the kept data before --purge" test "$n" -gt 0
  check purge "uninstall --purge --yes exits 0" rk8s uninstall --purge --yes
  left=$(ours_left | tr '\n' ' ')
  check purge "nothing of ours is left (sub-UID files included): ${left:-nothing}" test -z "$left"
  check purge "a second --purge finds nothing to do" rk8s uninstall --purge --yes
}

# When 6443 is taken by someone else, install asks for another port; unattended, it takes the next
# free one and says so. (Runs last: it installs a node of its own and purges it.)
scenario_port_taken() {
  local log=$STATE/port-taken.log holder
  python3 -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 6443)); s.listen(); time.sleep(900)' &
  holder=$!
  # LISTEN (state 0A) on 6443: TIME_WAIT lines left by the earlier scenarios' API server must not count.
  wait_for 10 sh -c "awk '\$2 ~ /:192B\$/ && \$4 == \"0A\"' /proc/net/tcp | grep -q ."
  check port-taken "install --yes with 6443 taken by another program exits 0" install_to "$log" "${FLAGS[@]}"
  check port-taken "the question was answered for the user: $(grep -m1 'Which port' "$log")" grep -q "Which port should the API server be published on? -> 6444 (not asked)" "$log"
  check port-taken "the node's API server is published on 6444" grep -q "server: https://127.0.0.1:6444" "$CONFIG/admin.kubeconfig"
  check port-taken "the printed kubectl line works" printed_line_works "$log"
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
  check port-taken "uninstall --purge --yes cleans up" rk8s uninstall --purge --yes
}

# An air-gapped install: `bundle --image` on a connected machine (the mirror), then, with the
# mirror gone, `install --bundle` alone brings the node up and loads the bundle's images, and a pod
# runs one of them with no registry and no mirror. (Runs last: it stops the mirror.)
scenario_offline_bundle() {
  local b=$SCRATCH/offline.tar log=$STATE/offline-bundle.log blog=$STATE/bundle.log imgs=() f bb
  for f in "$IMAGES"/*.tar; do imgs+=(--image "$f"); done
  bb=$(image_name busybox) || { fail offline-bundle "no busybox image in $IMAGES/images.json"; return; }
  check offline-bundle "bundle -o FILE with $((${#imgs[@]} / 2)) image archives, from the mirror" \
    rk8s_to "$blog" bundle -o "$b" --manifest "$MANIFESTS/k8s-$V_INSTALL.json" "${SOURCE[@]}" "${imgs[@]}" || { tail -5 "$blog" | sed 's/^/    | /'; return; }
  check offline-bundle "it carries every add-on image the version set names, as the digest it pins (no 'cannot start' note)" lacks "cannot start" cat "$blog"
  stop_mirror
  MIRROR_PID=
  check offline-bundle "install --bundle with the mirror stopped: the node is Ready" \
    install_to "$log" --yes --manifest "$MANIFESTS/k8s-$V_INSTALL.json" --timeout "$TIMEOUT" --bundle "$b" || return
  check offline-bundle "install loaded the bundle's images ($(grep -o 'loaded [^ ]*.*' "$log" | tail -1))" grep -q "loaded .*$bb" "$log"
  kc create namespace e2e >/dev/null 2>&1
  # (a new namespace's default ServiceAccount comes a moment later, from the controller-manager)
  wait_for 60 kc -n e2e get serviceaccount default
  check offline-bundle "a pod of the bundle's $bb (imagePullPolicy: Never) completes" apply <<YAML
apiVersion: v1
kind: Pod
metadata: {name: offline, namespace: e2e}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: $bb, imagePullPolicy: Never, command: ["sh", "-c", "echo offline ok"]}
YAML
  check offline-bundle "the pod Succeeded" wait_for "$TIMEOUT" phase_is offline Succeeded
  check offline-bundle "kubectl logs: offline ok" offline_log_ok
  check offline-bundle "the add-ons run offline from the bundle's images (dns, storage and metrics available)" wait_for 300 addons_available
  check offline-bundle "uninstall --purge --yes cleans up" rk8s uninstall --purge --yes
}

# Services reachable from the host (issue 12): rootless-k8s-ports.service publishes every NodePort,
# each LoadBalancer's ports and every hostPort through RootlessKit's port API, and keeps exactly
# that set: a deleted Service closes its port, a port taken on the host is an Event (no crash loop),
# and a killed publisher resyncs on restart.
PUB=$STATE/publish
