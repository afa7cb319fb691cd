# shellcheck shell=bash
# Faults on a running node (issue 35): each part of it killed with SIGKILL in turn (issue 37: one file per scenario group).
# Sourced by test/e2e/scenarios.sh after lib/scenario-lib.sh; its scenarios run by name.
# shellcheck disable=SC2317,SC2034,SC2153 # functions called by name; globals shared across the files

# What is killed, in turn: each Kubernetes component, etcd, the runtime (containerd is the first
# process of the node's namespaces: killing it ends them), RootlessKit itself, its network driver,
# and the agents. NAME COMM PATTERN: the process whose /proc comm or executable's name matches COMM
# (an extended regular expression; the agents are rootless-k8s's own binary) among the user's
# processes whose command line matches PATTERN (so an nsenter in front of it is never the one
# killed); "-" as PATTERN means the unit's main process.
FAULTS=(
  "etcd etcd /bin/etcd --"
  "kube-apiserver kube-apiserver /bin/kube-apiserver --"
  "kube-controller-manager kube-controller /bin/kube-controller-manager --"
  "kube-scheduler kube-scheduler /bin/kube-scheduler --"
  "kubelet kubelet /bin/kubelet --"
  "kube-proxy kube-proxy /bin/kube-proxy --"
  "containerd containerd /bin/containerd --config"
  "rootlesskit rootlesskit -"
  "slirp4netns slirp4netns /slirp4netns "
  "ports rootless-k8s rootless-k8s ports run"
  "overlay rootless-k8s rootless-k8s overlay run"
  "csr-approver rootless-k8s rootless-k8s approver run"
)

# fault_pid COMM PATTERN: the host pid of that process (none: exit 1); COMM "rootlesskit" with
# PATTERN "-" is the owner unit's main process
fault_pid() {
  local comm=$1 pattern=$2 p
  if [ "$pattern" = - ]; then
    p=$(as_user systemctl --user show -p MainPID --value "rootless-k8s-$comm.service")
    [ "${p:-0}" != 0 ] && echo "$p"
    return
  fi
  for p in $(pgrep -u "$U" -f -- "$pattern"); do
    # comm, or the executable's name: node sets a process's comm to the start of its title
    { grep -Eqx -- "$comm" "/proc/$p/comm" || basename "$(readlink "/proc/$p/exe")" | grep -Eqx -- "$comm"; } 2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}

# back_from OLD_PID COMM PATTERN: the process runs again under another pid, every unit that ran
# before is active, `status` says healthy, the workloads run (their containers too) and, where the
# plan publishes ports, the scenario's NodePort answers from the host again.
# (It prints what is not back yet.)
back_from() {
  local old=$1 comm=$2 pattern=$3 now u
  now=$(fault_pid "$comm" "$pattern") || { echo "no $comm process"; return 1; }
  [ "$now" != "$old" ] || { echo "$comm still runs as $old"; return 1; }
  for u in "${FAULT_UNITS[@]}"; do [ "$(as_user systemctl --user is-active "$u")" = active ] || { echo "$u is $(as_user systemctl --user is-active "$u")"; return 1; }; done
  status_json_healthy || { echo "status is not healthy"; return 1; }
  pods_settled || { echo "the workloads are not all running: $(workload_pods | tr '\n' ';')"; return 1; }
  [ -z "$FAULT_NODEPORT" ] || answers "http://127.0.0.1:$FAULT_NODEPORT/hostname" web- || { echo "the NodePort $FAULT_NODEPORT does not answer"; return 1; }
}
# node_back BOUND OLD_PID COMM PATTERN: back_from within BOUND seconds; if not, what is not back
node_back() { wait_for "$1" back_from "${@:2}" || { back_from "${@:2}"; return 1; }; }

scenario_faults() {
  local f name comm pattern pid t0 s secs=() json="" u bound=$TIMEOUT why
  FAULT_UNITS=()
  for u in "${UNITS[@]:1}" "${ON_DEMAND[@]}"; do [ "$(as_user systemctl --user is-active "$u")" = active ] && FAULT_UNITS+=("$u"); done
  # A NodePort of the workloads' web Deployment, published on the host by the ports agent.
  check faults "kubectl apply: NodePort faults-np for the web Deployment" apply <<YAML || return
apiVersion: v1
kind: Service
metadata: {name: faults-np, namespace: e2e}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
YAML
  FAULT_NODEPORT=$(kc -n e2e get svc faults-np -o 'jsonpath={.spec.ports[0].nodePort}')
  [ "$(receipt_value .plan.publish.enabled)" = true ] || FAULT_NODEPORT=""
  check faults "the node runs before the first fault (${#FAULT_UNITS[@]} units active, the workloads settled)" node_back 120 0 rootlesskit - || return
  for f in "${FAULTS[@]}"; do
    read -r name comm pattern <<<"$f"
    # E2E_FAULTS: only these names (space-separated), for a run that retries a few of them
    [ -z "${E2E_FAULTS:-}" ] || case " $E2E_FAULTS " in *" $name "*) ;; *) continue ;; esac
    if [ "$name" = slirp4netns ] && [ "$(receipt_value .plan.network.driver)" != slirp4netns ]; then continue; fi
    case " ${FAULT_UNITS[*]} " in *" rootless-k8s-$name.service "*) ;; *) case $name in ports | overlay | csr-approver) continue ;; esac ;; esac
    pid=$(fault_pid "$comm" "$pattern")
    check faults "$name: its process is found ($comm, pid ${pid:-none})" test -n "$pid" || continue
    t0=$(ts)
    kill -KILL "$pid"
    if why=$(node_back "$bound" "$pid" "$comm" "$pattern"); then
      s=$(elapsed "$t0")
      pass faults "$name killed (SIGKILL): the node is back by itself in $s s: $name runs again, every unit active, status healthy, the workloads run${FAULT_NODEPORT:+, the NodePort $FAULT_NODEPORT answers}"
      secs+=("$s")
      json+="${json:+,}\"$name\":$s"
    else
      fail faults "$name killed (SIGKILL): the node is not back within $bound s: $why"
      units_not_running "${FAULT_UNITS[@]}" | sed 's/^/    | not running: /'
      show_runtime_log "$STATE/faults-$name.log"
      # The node as the user would bring it back, so that the next fault starts from a running node.
      rk8s start --timeout "$TIMEOUT" >"$STATE/faults-start.log" 2>&1 || tail -20 "$STATE/faults-start.log" | sed 's/^/    | start: /'
    fi
  done
  kc -n e2e delete svc faults-np --wait=false >/dev/null 2>&1
  s=$(printf '%s\n' "${secs[@]}" | grep . | stats)
  info faults "back after a SIGKILL: median ${s% *} s, max ${s#* } s over ${#secs[@]} faults ($json)"
  report "{\"route\":\"$ROUTE\",\"faults\":{\"backS\":{$json},\"medianS\":${s% *},\"maxS\":${s#* }}}"
}

# The user manager stopped and started again (issue 35): what logout and login do without linger,
# and what a reboot does with it. It is stopped as its system manager stops user@UID.service
# (SIGTERM, which stops every unit), the runtime folder /run/user/UID goes as at a reboot, and the
# manager starts again. Nothing of rootless-k8s is run: the node must come back by itself (its
# target is wanted by default.target), with the same pods and a volume's data.
um_pid() {
  if [ "$ROUTE" = host ]; then bash "$HERE/host-env.sh" pid 2>/dev/null; return; fi
  local p
  p=$(systemctl show -p MainPID --value "user@$U.service" 2>/dev/null)
  [ -n "$p" ] && [ "$p" != 0 ] && echo "$p"
}
# um_stop: SIGTERM to the manager, then wait until it has gone (its units' stop timeouts allow 120 s)
um_stop() {
  local p
  p=$(um_pid) || { echo "no user manager of $E2E_USER"; return 1; }
  if [ "$ROUTE" = host ]; then kill -TERM "$p"; else systemctl stop --no-block "user@$U.service"; fi
  wait_for 150 eval "! kill -0 $p" || { echo "the user manager (pid $p) still runs 150 s after SIGTERM"; return 1; }
}
# um_start: the runtime folder emptied (a reboot's fresh /run), then the manager as at login or boot
um_start() {
  if [ "$ROUTE" = host ]; then
    bash "$HERE/host-env.sh" down >/dev/null # the cgroups it left; no manager runs
    rm -rf "/run/user/$U"
    bash "$HERE/host-env.sh" up >/dev/null || return
    E2E_NS_PID=$(bash "$HERE/host-env.sh" pid) && export E2E_NS_PID
  else
    systemctl stop "user-runtime-dir@$U.service" 2>/dev/null
    systemctl start "user@$U.service" || return
  fi
}
um_marker() { kc -n e2e exec um-vol -- cat /d/marker 2>/dev/null; }
um_uids() { kc -n e2e get pods -o 'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid} {end}' 2>/dev/null | tr ' ' '\n' | grep -v '^hog=' | sort | xargs; }
um_back() { units_active >/dev/null && status_json_healthy && pods_settled && [ "$(um_marker)" = "$1" ]; }

scenario_user_manager() {
  local bb uids t0 s left mark
  bb=$(image_name busybox) || { fail user-manager "no busybox image"; return; }
  mark="written before the user manager stopped, $(date +%s)"
  check user-manager "kubectl apply: a claim and a pod that writes a marker to it" apply <<YAML || return
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: um-data, namespace: e2e}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 16Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: um-vol, namespace: e2e}
spec:
  volumes: [{name: d, persistentVolumeClaim: {claimName: um-data}}]
  containers:
  - name: c
    image: $bb
    imagePullPolicy: Never
    command: ["sh", "-c", "[ -f /d/marker ] || echo '$mark' > /d/marker; exec sleep 86400"]
    volumeMounts: [{name: d, mountPath: /d}]
YAML
  check user-manager "the marker is written and the workloads have settled" wait_for "$TIMEOUT" eval "[ \"\$(um_marker)\" = '$mark' ] && pods_settled" || { um_cleanup; return; }
  uids=$(um_uids)
  t0=$(ts)
  if um_stop >"$STATE/user-manager-stop.log" 2>&1; then pass user-manager "the user manager stopped with SIGTERM (as at logout, or a reboot) in $(elapsed "$t0") s"
  else fail user-manager "$(cat "$STATE/user-manager-stop.log")"; um_recover; return; fi
  left=$(pgrep -u "$E2E_USER" -l | tr '\n' ' ')
  check user-manager "it stopped the node: no process of $E2E_USER is left (${left:-none})" test -z "$left"
  t0=$(ts)
  # (not through check, whose subshell would lose the new manager's pid)
  if um_start >"$STATE/user-manager-up.log" 2>&1; then pass user-manager "the runtime folder emptied and the user manager started again (as at login, or boot with linger)"
  else fail user-manager "the user manager did not start again"; sed 's/^/    | /' "$STATE/user-manager-up.log"; um_recover; return; fi
  if wait_for "$TIMEOUT" um_back "$mark"; then
    s=$(elapsed "$t0")
    pass user-manager "the node came back by itself in $s s, no rootless-k8s command run: every unit active, status healthy, the pods running"
    report "{\"route\":\"$ROUTE\",\"userManager\":{\"backS\":$s}}"
  else
    fail user-manager "the node did not come back by itself within $TIMEOUT s"
    units_not_running "${UNITS[@]}" | sed 's/^/    | not running: /'
    rk8s status 2>&1 | tail -15 | sed 's/^/    | /'
    rk8s start --timeout "$TIMEOUT" >"$STATE/user-manager-start.log" 2>&1 || tail -20 "$STATE/user-manager-start.log" | sed 's/^/    | start: /'
  fi
  check user-manager "the same pods (by uid) run again" test "$(um_uids)" = "$uids"
  check user-manager "the volume's data is still there: $(um_marker)" test "$(um_marker)" = "$mark"
  um_cleanup
}
um_cleanup() {
  kc -n e2e delete pod um-vol --wait=true >/dev/null 2>&1
  kc -n e2e delete pvc um-data --wait=false >/dev/null 2>&1
}
# um_recover: after a failed stop or start, the manager and the node back as the next scenarios need them
um_recover() {
  um_start >>"$STATE/user-manager-up.log" 2>&1 || { sleep 5; um_start >>"$STATE/user-manager-up.log" 2>&1; }
  [ "$ROUTE" = host ] && { E2E_NS_PID=$(bash "$HERE/host-env.sh" pid) && export E2E_NS_PID; }
  rk8s start --timeout "$TIMEOUT" >"$STATE/user-manager-start.log" 2>&1 || tail -20 "$STATE/user-manager-start.log" | sed 's/^/    | start: /'
  um_cleanup
}

# The second user's node for the two scenarios below (shared-host.sh: shared_b_up, b_kc, b_share; multinode.sh: on_b, b_rk8s).
b_current() { on_b readlink "$(b_share)/versions/current" 2>/dev/null; }
b_receipt() { on_b "$E2E_OPT/node" "$E2E_OPT/lib/e2e-tool.mjs" json "$(b_share)/receipt.json" "$1" 2>/dev/null; }
b_kubelet_version() { b_kc get nodes -o 'jsonpath={.items[0].status.nodeInfo.kubeletVersion}' 2>/dev/null; }
b_healthy() { has '"healthy": true' b_rk8s status --json; }
# b_stale_binaries: "NAME (SET)" for each process of the second user that runs a version set's
# binary other than the current set's own: from another set, and not the same file (containerd or
# RootlessKit, unchanged by an upgrade, rightly run on from the set they started from)
b_stale_binaries() {
  local p e rel set cur
  cur=$(b_current)
  for p in $(pgrep -u "$B_USER"); do
    e=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
    case $e in "$(b_share)/versions/"*) ;; *) continue ;; esac
    rel=${e#"$(b_share)/versions/"}
    set=${rel%%/*}
    [ "$set" = "$cur" ] || cmp -s "$e" "$(b_share)/versions/$cur/${rel#*/}" || echo "$(basename "$e") ($set)"
  done | sort -u
}
# b_unit_states: "unit=ActiveState" of each of the node's units
b_unit_states() { on_b systemctl --user list-units 'rootless-k8s-*' --all --no-legend --plain 2>/dev/null | awk '{ print $1 "=" $3 "/" $4 }' | xargs; }
# b_node_down: the second user's node gone, and its manager
b_node_down() {
  b_rk8s uninstall --purge --yes >/dev/null 2>&1
  b_state_clean
  b_manager_down
}

# upgrade killed with SIGKILL in the middle (issue 35): right after it switched the `current` link,
# before the restarts that switch owes. A re-run of the same command completes, and the node then
# runs one version set: no process of the user runs a binary of the old one.
# uk_kill LOG: starts the upgrade and kills it with SIGKILL the moment the `current` link moves (read
# by root straight from the file system in a tight loop, as the restarts follow the switch within a
# few hundred milliseconds); prints where it landed: "window" (the receipt still names the old set,
# or owes restarts: what the re-run must make up for) or "late" (the restarts were already asked for)
uk_kill() {
  local old=$1 log=$2 job pid link deadline
  b_rk8s upgrade --yes --to "${V_UPGRADE%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log" 2>&1 &
  job=$!
  wait_for 120 pgrep -u "$B_USER" -f 'rootless-k8s upgrade --yes'
  pid=$(pgrep -u "$B_USER" -f 'rootless-k8s upgrade --yes' | head -1)
  link=$B_HOME/.local/share/rootless-k8s/versions/current deadline=$((SECONDS + TIMEOUT)) # the fetch first: minutes under emulation
  while [ "$(readlink "$link")" = "$old" ] && [ "$SECONDS" -lt "$deadline" ] && kill -0 "$pid" 2>/dev/null; do :; done
  [ -n "$pid" ] && kill -KILL "$pid"
  wait "$job" 2>/dev/null
  if [ -z "$pid" ] || [ "$(b_current)" = "$old" ]; then echo none; return; fi
  if [ "$(b_receipt .current)" = "$old" ] || case "$(b_receipt .restartsOwed)" in '' | undefined) false ;; *) true ;; esac; then echo window; else echo late; fi
}

# upgrade killed with SIGKILL in the middle (issue 35): right after it switched the `current` link,
# before the restarts that switch owes. A re-run of the same command completes, and the node then
# runs one version set: no process of the user runs a binary of the old one. A kill that lands after
# the restarts were asked for proves nothing: the node is installed anew and the kill tried once more.
scenario_upgrade_killed() {
  local log=$STATE/upgrade-killed.log old at_kill rc sets landed try
  check upgrade-killed "a second user ($B_USER) with a user manager of its own" shared_b_up || return
  B_HOME=$(getent passwd "$B_USER" | cut -d: -f6)
  for try in 1 2; do
    b_state_clean
    check upgrade-killed "$B_USER's node installed on $V_INSTALL" \
      eval "b_rk8s install --yes --kubernetes-version '${V_INSTALL%.*}' --timeout '$TIMEOUT' ${SOURCE[*]} >'$STATE/upgrade-killed-install.log' 2>&1" ||
      { tail -20 "$STATE/upgrade-killed-install.log" | sed 's/^/    | /'; b_node_down; return; }
    old=$(b_current)
    landed=$(uk_kill "$old" "$log")
    at_kill=$(b_stale_binaries | xargs)
    info upgrade-killed "attempt $try: the kill landed: $landed; the receipt's state $(b_receipt .state), current $(b_receipt .current), restarts owed: $(b_receipt .restartsOwed | tr -d '\n '); old binaries running: ${at_kill:-none}"
    [ "$landed" = late ] || break
    b_rk8s uninstall --yes >/dev/null 2>&1
  done
  check upgrade-killed "upgrade to $V_UPGRADE killed with SIGKILL once the link had moved to $(b_current), before its restarts (landed: $landed; binaries of the old set still ran: ${at_kill:-none})" \
    test "$landed" = window || { b_node_down; return; }
  b_rk8s upgrade --yes --to "${V_UPGRADE%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log.rerun" 2>&1
  rc=$?
  check upgrade-killed "the same upgrade run again completes (exit $rc)" test "$rc" = 0 || tail -20 "$log.rerun" | sed 's/^/    | /'
  check upgrade-killed "it says it resumes the upgrade from $V_INSTALL: $(grep -m1 '^upgrade' "$log.rerun")" \
    grep -q "^upgrade Kubernetes $V_INSTALL → $V_UPGRADE (version set $old → $(b_current); resuming an upgrade that did not finish)" "$log.rerun"
  check upgrade-killed "and that the old set is kept for a rollback: $(grep -o 'previous [^ ]* kept' "$log.rerun"); the receipt names it previous ($(b_receipt .previous)), its folder is there" \
    eval "grep -q 'previous $old kept' '$log.rerun' && [ \"\$(b_receipt .previous)\" = '$old' ] && [ -d '$B_HOME/.local/share/rootless-k8s/versions/$old/bin' ]"
  sets=$(b_stale_binaries | xargs)
  check upgrade-killed "one version set runs: no process of $B_USER runs an old set's binary that differs from $(b_current)'s (${sets:-none})" test -z "$sets" ||
    { local p; for p in $(pgrep -u "$B_USER"); do echo "    | $p $(ps -o lstart= -p "$p") $(readlink "/proc/$p/exe")"; done | grep versions; info upgrade-killed "units: $(b_unit_states)"; }
  check upgrade-killed "the Node's kubelet is v$V_UPGRADE ($(b_kubelet_version))" test "$(b_kubelet_version)" = "v$V_UPGRADE" || b_kc get nodes -o wide 2>&1 | sed 's/^/    | /'
  check upgrade-killed "the receipt says installed, no restart owed, no upgrade under way ($(b_receipt .state), $(b_receipt .restartsOwed), $(b_receipt .upgradingFrom))" \
    test "$(b_receipt .state) $(b_receipt .restartsOwed) $(b_receipt .upgradingFrom)" = "installed undefined undefined"
  check upgrade-killed "status is healthy" wait_for 60 b_healthy
  b_node_down
}

# The data folder's file system full (issue 35), on a file system of its own (an ext4 image, 4 GiB,
# mounted over the second user's data folder), filled by a file of root's: install and upgrade
# refuse it up front, and fail cleanly when told to go on anyway (--ignore-check disk) and the disk
# fills mid-way; nothing is half switched; once space is freed, the same command completes.
DF_IMG=$E2E_CACHE/disk-full.img
df_mnt() { echo "$B_HOME/.local/share/rootless-k8s"; }
df_free_mib() { df -BM --output=avail "$(df_mnt)" | tail -1 | tr -dc 0-9; }
# df_leave MIB: the ballast grown so that about MIB MiB are left
df_leave() {
  rm -f "$(df_mnt)/ballast"
  local fill=$(($(df_free_mib) - $1))
  [ "$fill" -le 0 ] || fallocate -l "${fill}M" "$(df_mnt)/ballast"
}
df_down() {
  b_node_down
  mountpoint -q "$(df_mnt)" 2>/dev/null && { umount "$(df_mnt)" || umount -l "$(df_mnt)"; }
  # (a lazy unmount may leave the image attached to its loop device a moment: detached by name)
  local dev
  for dev in $(losetup -j "$DF_IMG" -O NAME -n 2>/dev/null); do losetup -d "$dev" 2>/dev/null; done
  rm -f "$DF_IMG"
}
# df_failed LOG: exit 1, the first line names the full device and the fix re-runs the same command
df_failed() { grep -q "^error: .*step \"fetch\" failed: no space left on the device of $(df_mnt)/versions/.* (disk full)" "$1" && grep -q '^fix: free some space there and re-run the same command' "$1"; }

scenario_disk_full() {
  local log=$STATE/disk-full.log rc old
  second_host_down
  E2E_USER=$B_USER ensure_test_user || { fail disk-full "no user $B_USER"; return; }
  B_HOME=$(getent passwd "$B_USER" | cut -d: -f6)
  if [ -z "$B_HOME" ] || [ "$B_HOME" = / ]; then fail disk-full "no home folder for $B_USER"; return; fi
  b_state_clean
  df_down # what a run cut short left: the mount, its loop device, the image
  # Mounted before B's manager starts: on the host route the manager has a mount namespace of its own.
  check disk-full "a 4 GiB ext4 file system over $B_USER's data folder $(df_mnt)" eval "
    truncate -s 4G '$DF_IMG' && mkfs.ext4 -q -m 0 '$DF_IMG' &&
    install -d -o '$B_USER' -g '$B_USER' -m 0755 '$B_HOME/.local' '$B_HOME/.local/share' && install -d -o '$B_USER' -g '$B_USER' -m 0700 '$(df_mnt)' &&
    mount -o loop '$DF_IMG' '$(df_mnt)' && chown '$B_USER:$B_USER' '$(df_mnt)' && chmod 0700 '$(df_mnt)'" || { df_down; return; }
  check disk-full "$B_USER's user manager" shared_b_up || { df_down; return; }
  df_leave 400
  b_rk8s install --yes --kubernetes-version "${V_INSTALL%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log" 2>&1
  rc=$?
  check disk-full "install with $(df_free_mib) MiB free is refused up front (exit $rc): $(grep -m1 'disk' "$log" | sed 's/^ *//')" \
    eval "[ $rc = 3 ] && grep -q 'the node needs at least 2 GiB' '$log'"
  check disk-full "nothing was written (no receipt, no unit)" eval "[ ! -e '$(df_mnt)/receipt.json' ] && ! ls '$B_HOME'/.config/systemd/user/rootless-k8s* >/dev/null 2>&1"
  b_rk8s install --yes --ignore-check disk --kubernetes-version "${V_INSTALL%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log.ignored" 2>&1
  rc=$?
  check disk-full "install --ignore-check disk fills the disk while fetching: exit $rc, one line: $(grep -m1 '^error:' "$log.ignored")" \
    eval "[ $rc = 1 ] && df_failed '$log.ignored'"
  check disk-full "no stack trace" eval "! grep -q 'This is a bug\|    at ' '$log.ignored'"
  check disk-full "nothing of the node runs" test -z "$(pgrep -u "$B_USER" -f 'rootlesskit|kube-apiserver|kubelet|etcd|containerd')"
  rm -f "$(df_mnt)/ballast"
  b_rk8s install --yes --ignore-check disk --kubernetes-version "${V_INSTALL%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log.rerun" 2>&1
  rc=$?
  check disk-full "once space is freed ($(df_free_mib) MiB), the same command completes: exit $rc, Ready" eval "[ $rc = 0 ] && has ' Ready ' b_kc get nodes" ||
    { tail -20 "$log.rerun" | sed 's/^/    | /'; df_down; return; }
  # upgrade: the same, with the node running
  old=$(b_current)
  df_leave 400
  b_rk8s upgrade --yes --to "${V_UPGRADE%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log.upgrade" 2>&1
  rc=$?
  check disk-full "upgrade with $(df_free_mib) MiB free is refused up front (exit $rc)" eval "[ $rc = 3 ] && grep -q 'the node needs at least 2 GiB' '$log.upgrade'"
  b_rk8s upgrade --yes --ignore-check disk --to "${V_UPGRADE%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log.upgrade-ignored" 2>&1
  rc=$?
  check disk-full "upgrade --ignore-check disk fills the disk while fetching: exit $rc, $(grep -m1 '^error:' "$log.upgrade-ignored")" \
    eval "[ $rc = 1 ] && df_failed '$log.upgrade-ignored'"
  check disk-full "it says nothing was switched: $(grep -o 'stopped before anything was switched.*' "$log.upgrade-ignored" | sed 's/(.*)//')" \
    grep -q "stopped before anything was switched (.*); the node runs Kubernetes $V_INSTALL as before" "$log.upgrade-ignored"
  check disk-full "nothing was switched: the link still names $old, the Node's kubelet is v$V_INSTALL ($(b_kubelet_version)), the receipt says installed ($(b_receipt .state))" \
    eval "[ \"\$(b_current)\" = '$old' ] && [ \"\$(b_kubelet_version)\" = 'v$V_INSTALL' ] && [ \"\$(b_receipt .state)\" = installed ]"
  rm -f "$(df_mnt)/ballast"
  check disk-full "status is healthy once space is freed" wait_for 120 b_healthy
  b_rk8s upgrade --yes --ignore-check disk --to "${V_UPGRADE%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log.upgrade-rerun" 2>&1
  rc=$?
  check disk-full "then the same upgrade completes: exit $rc, the Node's kubelet is v$V_UPGRADE ($(b_kubelet_version))" \
    eval "[ $rc = 0 ] && [ \"\$(b_kubelet_version)\" = 'v$V_UPGRADE' ]" || tail -20 "$log.upgrade-rerun" | sed 's/^/    | /'
  df_down
  check disk-full "the file system is unmounted and its image gone" eval "! mountpoint -q '$(df_mnt)' && [ ! -e '$DF_IMG' ]"
}
