# shellcheck shell=bash
# A node without a systemd user manager (issue 38): the second user ($B_USER), with no user manager
# at all and no XDG_RUNTIME_DIR (as in a container or a CI job), installs on this host's network
# stack; install finds no manager and runs the node under `rootless-k8s up --detach`. Checked: the
# plan and files say so (no unit file in ~/.config/systemd/user); a Deployment, a Service and DNS
# work; a component killed with SIGKILL runs again by itself (RootlessKit too, and every component
# PartOf= it with it); a second `up` is refused with the first one's pid; `upgrade` moves the
# running node to the next version, and one to a release whose API server crashes rolls back;
# SIGTERM to the supervisor leaves no process of the user; a stale pid file is recognised by the
# next `up --detach`; what a supervisor killed with SIGKILL left running is ended by the next `up`
# before it starts anything; `uninstall --purge` leaves nothing.
# Sourced by test/e2e/scenarios.sh after scenarios/multinode.sh (B_USER, b_manager_down, second_host_down).
# shellcheck disable=SC2317,SC2034 # functions called by name; globals shared across the files

# up_run CMD...: CMD as $B_USER with a plain environment: no XDG_RUNTIME_DIR, no session bus, no
# user manager to reach (what as_user gives, less the session's variables).
up_run() {
  local u g h
  u=$(id -u "$B_USER"); g=$(id -g "$B_USER"); h=$(getent passwd "$B_USER" | cut -d: -f6)
  setpriv --reuid="$u" --regid="$g" --init-groups \
    env -i HOME="$h" USER="$B_USER" LOGNAME="$B_USER" SHELL=/bin/bash TERM=dumb LANG=C.UTF-8 \
    PATH="$E2E_OPT/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    ROOTLESS_K8S_NO_UPDATE_CHECK=1 NO_COLOR=1 "$@"
}
up_rk8s() { up_run "$E2E_OPT/bin/rootless-k8s" "$@"; }
up_home() { getent passwd "$B_USER" | cut -d: -f6; }
up_share() { echo "$(up_home)/.local/share/rootless-k8s"; }
up_kc() { up_run "$(up_share)/versions/current/bin/kubectl" --kubeconfig "$(up_home)/.config/rootless-k8s/admin.kubeconfig" "$@"; }
up_receipt() { up_run "$E2E_OPT/node" "$E2E_OPT/lib/e2e-tool.mjs" json "$(up_share)/receipt.json" "$1"; }
up_rt() { up_receipt .plan.paths.runtimeDir; }
up_pid() { cat "$(up_rt)/up.pid" 2>/dev/null; }
up_procs() { pgrep -u "$B_USER" -l 2>/dev/null; }
no_up_procs() { ! pgrep -u "$B_USER" >/dev/null 2>&1; }
up_healthy() { has '"healthy": true' up_rk8s status --json; }
up_ready() { has ' Ready ' up_kc get nodes; }
up_web_answers() { has 'NOW:' up_kc -n e2e exec client -- wget -qO- -T 5 http://web/; }
up_dns() { up_kc -n e2e exec client -- timeout 5 nslookup web.e2e.svc.cluster.local 2>/dev/null | grep -q "Address.*$(up_kc -n e2e get svc web -o 'jsonpath={.spec.clusterIP}')"; }
up_component_pid() { pgrep -u "$B_USER" -x "$1" | head -1; }
up_back() { # up_back COMM OLD_PID: COMM runs again under another pid, and the node is healthy
  local p
  p=$(up_component_pid "$1")
  [ -n "$p" ] && [ "$p" != "$2" ] && up_healthy
}
up_clean() { # nothing of an earlier run: processes, files, the runtime folder
  pkill -KILL -u "$B_USER" 2>/dev/null
  local h
  h=$(up_home)
  rm -rf "$h/.local/share/rootless-k8s" "$h/.config/rootless-k8s" "$h/.cache/rootless-k8s" "$h/.local/state/rootless-k8s" "/tmp/rootless-k8s-$(id -u "$B_USER")"
  rm -f "$h"/.config/systemd/user/rootless-k8s* "$h"/.config/systemd/user/default.target.wants/rootless-k8s*
  # No session either: the runtime folder a user manager of an earlier scenario left goes too.
  local run
  run=/run/user/$(id -u "$B_USER")
  mountpoint -q "$run" 2>/dev/null && umount -l "$run"
  rm -rf "$run"
}
up_left() { # what of the node is left in HOME, /tmp and the process table
  local h
  h=$(up_home)
  ls -d "$h/.local/share/rootless-k8s" "$h/.config/rootless-k8s" "$h/.local/state/rootless-k8s" "/tmp/rootless-k8s-$(id -u "$B_USER")" 2>/dev/null
  up_procs
}

scenario_up() {
  local log=$STATE/up-install.log ulog=$STATE/up-upgrade.log t0 pid old sup agn bb imgs=() f
  check up "no user manager of $B_USER runs (second host and shared-host torn down)" eval "second_host_down; E2E_USER=$B_USER ensure_test_user; up_clean; no_up_procs" || return
  t0=$(ts)
  up_rk8s install "${FLAGS[@]}" >"$log" 2>&1
  check up "install --yes without a user manager nor XDG_RUNTIME_DIR: Ready in $(elapsed "$t0")s, under rootless-k8s up" has 'runs under: rootless-k8s up --detach' cat "$log" ||
    { tail -30 "$log" | sed 's/^/    | /'; tail -30 "$(up_home)/.local/state/rootless-k8s/logs/rootless-k8s-up.log" 2>&1 | sed 's/^/    | up.log: /'; up_rk8s uninstall --purge --yes >/dev/null 2>&1; up_clean; return; }
  check up "the plan says so: supervisor up, mode none, logs to files ($(up_receipt .plan.supervisor.kind) $(up_receipt .plan.mode.name) $(up_receipt .plan.logging.to))" \
    test "$(up_receipt .plan.supervisor.kind) $(up_receipt .plan.mode.name) $(up_receipt .plan.logging.to)" = "up none file"
  check up "no unit file in ~/.config/systemd/user; the services in ~/.config/rootless-k8s/services" \
    eval "! ls $(up_home)/.config/systemd/user/rootless-k8s* >/dev/null 2>&1 && ls $(up_home)/.config/rootless-k8s/services/rootless-k8s-kubelet.service.json >/dev/null"
  check up "without XDG_RUNTIME_DIR the runtime folder is /tmp/rootless-k8s-$(id -u "$B_USER")/rootless-k8s ($(up_rt))" test "$(up_rt)" = "/tmp/rootless-k8s-$(id -u "$B_USER")/rootless-k8s"
  check up "it and its parent are 0700 and $B_USER's ($(stat -c '%a %U' "$(up_rt)" "$(dirname "$(up_rt)")" | paste -sd' '))" \
    test "$(stat -c '%a %U' "$(up_rt)" "$(dirname "$(up_rt)")" | paste -sd' ')" = "700 $B_USER 700 $B_USER"
  sup=$(up_pid)
  check up "the supervisor runs detached (pid ${sup:-none}, in a session of its own)" eval "[ -n '$sup' ] && [ \"\$(ps -o sid= -p '$sup' | tr -d ' ')\" = '$sup' ]"
  check up "status --json is healthy" up_healthy
  check up "status says what runs the node: $(up_rk8s status 2>&1 | grep -m1 'runs under' | sed 's/^ *//')" has "runs under *rootless-k8s up (pid $sup); not started at boot" up_rk8s status
  check up "rootless-k8s logs kubelet shows the kubelet's own lines (its log file)" has 'Successfully registered node' up_rk8s logs kubelet -n 100000
  check up "rootless-k8s logs up shows the supervisor's lines: $(up_rk8s logs up -n 100 | grep -o 'the node .* is Ready.*' | head -1)" \
    has 'the node .* is Ready, [0-9.]* s after the start' up_rk8s logs up -n 100
  for f in "$IMAGES"/*.tar; do imgs+=("$f"); done
  check up "rootless-k8s image load (${#imgs[@]} archives)" up_rk8s image load "${imgs[@]}" || return
  agn=$(image_name agnhost); bb=$(image_name busybox)
  up_kc create namespace e2e >/dev/null 2>&1
  wait_for 60 up_kc -n e2e get serviceaccount default
  check up "kubectl apply: Deployment web (agnhost netexec), Service web, pod client (busybox)" eval "up_kc apply -f - >/dev/null" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: e2e}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: $agn, imagePullPolicy: Never, args: ["netexec", "--http-port=8080"], ports: [{containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: e2e}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: e2e}
spec:
  containers:
  - {name: client, image: $bb, imagePullPolicy: Never, command: ["sleep", "100000"]}
YAML
  check up "the Deployment is available (2 replicas)" wait_for 180 eval "[ \"\$(up_kc -n e2e get deploy web -o 'jsonpath={.status.availableReplicas}')\" = 2 ]"
  check up "the client reaches Service web by name (cluster DNS, kube-proxy, the pod network)" wait_for 120 up_web_answers
  check up "web.e2e.svc.cluster.local resolves to the Service's address" wait_for 60 up_dns
  # What the supervisor weighs, beside the node it runs (PSS, MiB).
  local fp sp np
  fp=$(python3 "$HERE/lib/footprint.py" "$(id -u "$B_USER")")
  sp=$(tool json - '.components[rootless-k8s up].pssMiB' <<<"$fp") || sp=null
  np=$(tool json - .totalPssMiB <<<"$fp") || np=null
  info up "memory: the supervisor (rootless-k8s up) $sp MiB PSS of the node's $np MiB"
  report "{\"route\":\"$ROUTE\",\"up\":{\"supervisorPssMiB\":$sp,\"nodePssMiB\":$np}}"
  # A component killed: the supervisor starts it again.
  for c in kubelet kube-apiserver rootlesskit; do
    old=$(up_component_pid "$c")
    check up "$c found (pid ${old:-none}); killed with SIGKILL" eval "[ -n '$old' ] && kill -KILL '$old'" || continue
    t0=$(ts)
    if wait_for 180 up_back "$c" "$old"; then pass up "$c runs again under a new pid ($(up_component_pid "$c")) and status is healthy, $(elapsed "$t0")s after the kill"
    else fail up "$c did not come back within 180 s"; tail -5 "$(up_home)/.local/state/rootless-k8s/logs/rootless-k8s-$c.service.log" | sed 's/^/    | /'; fi
  done
  check up "a second \`up\` is refused (exit 3) naming the first's pid $sup" eval "[ -n '$sup' ]; up_rk8s up >'$STATE/up-second.log' 2>&1; [ \$? = 3 ] && grep -q '(pid $sup)' '$STATE/up-second.log'"
  # upgrade on a node run by up: the new version set, the services restarted by the supervisor.
  t0=$(ts)
  if up_rk8s upgrade --yes --to "${V_UPGRADE%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$ulog" 2>&1; then pass up "upgrade to $V_UPGRADE under up: Ready in $(elapsed "$t0")s"
  else fail up "upgrade to $V_UPGRADE under up failed"; tail -20 "$ulog" | sed 's/^/    | /'; fi
  check up "the Node's kubelet is v$V_UPGRADE after the upgrade, the same supervisor (pid $sup) runs it" \
    eval "[ \"\$(up_kc get nodes -o 'jsonpath={.items[0].status.nodeInfo.kubeletVersion}')\" = v$V_UPGRADE ] && [ \"\$(up_pid)\" = '$sup' ]"
  check up "the workloads still answer after the upgrade" wait_for 120 up_web_answers
  # An upgrade to the release whose API server crashes: the supervisor restarts it, the upgrade sees
  # it fail and rolls back, as under systemd (the rollback scenario).
  local rlog=$STATE/up-rollback.log rc
  t0=$(ts)
  up_rk8s upgrade --yes --manifest "$MANIFESTS/k8s-$V_BROKEN.json" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$rlog" 2>&1
  rc=$?
  check up "an upgrade whose API server crashes exits 1 under up (got $rc, $(elapsed "$t0")s)" test "$rc" = 1 || tail -20 "$rlog" | sed 's/^/    | /'
  check up "it rolled back: $(grep -o 'rolled back[^;]*' "$rlog" | head -1)" grep -q "rolled back: the node is Ready on Kubernetes $V_UPGRADE" "$rlog"
  check up "the same supervisor (pid $sup) runs the node again, healthy on $V_UPGRADE" \
    wait_for 60 eval "[ \"\$(up_pid)\" = '$sup' ] && up_healthy && [ \"\$(up_kc get nodes -o 'jsonpath={.items[0].status.nodeInfo.kubeletVersion}')\" = v$V_UPGRADE ]"
  # SIGTERM to the supervisor: every service stops, no process of the user is left.
  kill -TERM "$sup"
  check up "SIGTERM to the supervisor: it exits and no process of $B_USER is left" wait_for 120 no_up_procs || up_procs | sed 's/^/    | left: /'
  check up "status says stopped (exit 7)" eval "up_rk8s status >/dev/null 2>&1; [ \$? = 7 ]"
  # A stale pid file (the pid of no supervisor): the next `up --detach` replaces it and starts.
  echo 999999 >"$(up_rt)/up.pid"
  t0=$(ts)
  if up_rk8s up --detach >"$STATE/up-detach.log" 2>&1; then pass up "up --detach over a stale pid file: Ready in $(elapsed "$t0")s"
  else fail up "up --detach over a stale pid file failed"; tail -20 "$STATE/up-detach.log" | sed 's/^/    | /'; fi
  check up "the stale pid file was named in the supervisor's log" has 'removed the pid file of a supervisor that is gone (pid 999999)' cat "$(up_home)/.local/state/rootless-k8s/logs/rootless-k8s-up.log"
  check up "rootless-k8s stop: no process of $B_USER is left" eval "up_rk8s stop >/dev/null 2>&1 && no_up_procs"
  check up "rootless-k8s start: Ready again" eval "up_rk8s start >/dev/null 2>&1 && up_healthy"
  # The supervisor killed outright: its services run on, unwatched; the next `up` ends them first.
  sup=$(up_pid)
  old=$(up_component_pid kube-apiserver)
  check up "the supervisor (pid $sup) killed with SIGKILL: kube-apiserver (pid $old) runs on without it" \
    eval "[ -n '$sup' ] && kill -KILL '$sup' && sleep 1 && [ \"\$(up_component_pid kube-apiserver)\" = '$old' ]"
  t0=$(ts)
  if up_rk8s up --detach >"$STATE/up-after-kill.log" 2>&1; then pass up "up --detach after that: Ready in $(elapsed "$t0")s"
  else fail up "up --detach after a killed supervisor failed"; tail -20 "$STATE/up-after-kill.log" | sed 's/^/    | /'; fi
  check up "it ended what the killed one left first: one kube-apiserver (pid $(up_component_pid kube-apiserver), not $old) and one RootlessKit run" \
    eval "[ \"\$(pgrep -c -u '$B_USER' -x kube-apiserver)\" = 1 ] && [ \"\$(up_component_pid kube-apiserver)\" != '$old' ] && [ \"\$(pgrep -c -u '$B_USER' -x rootlesskit)\" = 1 ]"
  check up "its log names them" has 'ended what a supervisor that was killed left running: .*kube-apiserver' up_rk8s logs up -n 200
  check up "uninstall --purge leaves nothing (files, the runtime folder, processes)" eval "up_rk8s uninstall --purge --yes >'$STATE/up-uninstall.log' 2>&1; [ -z \"\$(up_left)\" ]" ||
    up_left | sed 's/^/    | left: /'
  up_clean
}
