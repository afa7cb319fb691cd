# shellcheck shell=bash
# The node's memory at rest (issue 33), per component: the PSS and RSS of every process of the node
# (lib/footprint.py: the user's processes and its containers' subordinate ids), split into what is
# anonymous (heaps) and what is mapped from the binaries. Measured FOOTPRINT_IDLE seconds (60) after
# DNS, storage and metrics are available on a node that runs nothing else, and again the same time
# after a workload came and went. It asserts what the figures rest on (every component measured,
# the plan's GOGC in the Go components' environment), never a figure: the figures go to the report.
# Runs right after `fresh`, before any other scenario leaves pods behind.

FOOTPRINT_IDLE=${FOOTPRINT_IDLE:-60}
FOOTPRINT_PODS=${FOOTPRINT_PODS:-10}

# footprint_json: the node's footprint now (JSON, lib/footprint.py).
footprint_json() { python3 "$HERE/lib/footprint.py" "$U"; }
# footprint_get JSON EXPR: a value of the footprint (a Python expression over d).
footprint_get() { python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }
# footprint_table JSON [AFTER]: the figures as a table for the log (lib/footprint.py --table).
footprint_table() { python3 "$HERE/lib/footprint.py" --table "$@" | sed 's/^/  /'; }
status_waits_for_nodes() { local o; o=$(rk8s status) || { echo "$o"; return 1; }; grep -q "starts once the node admits another" <<<"$o" || { echo "$o"; return 1; }; }
addons_available() { coredns_available && provisioner_available && metrics_server_available; }
footprint_gone() { ! kc -n e2e-footprint get pods -o name 2>/dev/null | grep -q .; }
footprint_available() { [ "$(kc -n e2e-footprint get deploy load -o 'jsonpath={.status.availableReplicas}' 2>/dev/null)" = "$FOOTPRINT_PODS" ]; }
# log_sizes: "FILE BYTES" per log file of the node (every generation), when its units log to files.
log_sizes() { as_user find "$(receipt_value .plan.paths.logDir)" -maxdepth 1 -type f -name '*.log*' -printf '%f %s\n' 2>/dev/null | sort; }
# log_rate BEFORE AFTER SECONDS: the bytes the node's units wrote in SECONDS, and the biggest writer (JSON).
log_rate() {
  python3 -c 'import json, sys
def sizes(t): return {l.rsplit(" ", 1)[0]: int(l.rsplit(" ", 1)[1]) for l in t.splitlines() if l.strip()}
a, b, s = sizes(sys.argv[1]), sizes(sys.argv[2]), float(sys.argv[3])
d = {f: b.get(f, 0) - a.get(f, 0) for f in set(a) | set(b)}
unit = lambda f: f.split(".log")[0]
per = {}
for f, n in d.items(): per[unit(f)] = per.get(unit(f), 0) + n
top = max(per, key=per.get) if per else None
total = sum(per.values())
print(json.dumps({"seconds": s, "bytes": total, "bytesPerDay": round(total * 86400 / s), "topUnit": top, "topUnitBytesPerDay": round(per.get(top, 0) * 86400 / s) if top else 0}))' "$1" "$2" "$3"
}
# go_env_of EXE VAR: VAR's value in the environment of the running EXE (as root, /proc/PID/environ).
go_env_of() {
  local p
  p=$(pgrep -u "$U" -x "$1" | head -1) && [ -n "$p" ] && tr '\0' '\n' <"/proc/$p/environ" | sed -n "s/^$2=//p"
}

scenario_footprint() {
  local idle after pods bb gogc want c missing=() comp
  check footprint "DNS, storage and metrics are available" wait_for 300 addons_available || return
  pods=$(kc get pods -A --no-headers 2>/dev/null | grep -c .)
  info footprint "the node runs $pods pods (the add-ons); idle for ${FOOTPRINT_IDLE}s"
  sleep "$FOOTPRINT_IDLE"
  idle=$(footprint_json)
  # Every component the node runs is in the figure: a process missed (another uid, a renamed
  # binary) would make the total look lighter than it is.
  want="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd rootlesskit coredns metrics-server local-path-provisioner pause"
  [ "$(receipt_value .plan.runtime.name)" = containerd ] && want="$want containerd containerd-shim"
  comp=$(footprint_get "$idle" '" ".join(d["components"])')
  for c in $want; do case " $comp " in *" $c "*) ;; *) missing+=("$c") ;; esac; done
  check footprint "every component of the node is measured (missing: ${missing[*]:-none})" test ${#missing[@]} = 0
  gogc=$(receipt_value .plan.memory.goGC)
  check footprint "a single node runs no overlay agent and no CSR approver: systemd skipped them (ConditionPathExists), status calls it healthy" \
    on_demand_skipped
  check footprint "... and rootless-k8s status is healthy (exit 0) and says they start once the node admits another" status_waits_for_nodes
  check footprint "kube-apiserver and the kubelet run with the plan's GOGC=$gogc" \
    test "$(go_env_of kube-apiserver GOGC)/$(go_env_of kubelet GOGC)" = "$gogc/$gogc"

  # A workload comes and goes; the node settles again.
  bb=$(image_name busybox) || { fail footprint "no busybox image"; return; }
  kc delete namespace e2e-footprint --wait=true >/dev/null 2>&1
  kc create namespace e2e-footprint >/dev/null
  check footprint "a workload of $FOOTPRINT_PODS pods (busybox sleep) applied" apply_sleepers e2e-footprint load "$FOOTPRINT_PODS" "$bb" || return
  check footprint "the $FOOTPRINT_PODS pods are Running" wait_for 300 footprint_available
  kc delete namespace e2e-footprint --wait=false >/dev/null 2>&1
  check footprint "and gone once deleted" wait_for 300 footprint_gone
  # What the node at rest writes to its log files (issue 43: a day's worth against the rotation's cap).
  local logs0 logs1 rate=null
  [ "$(receipt_value .plan.logging.to)" = file ] && logs0=$(log_sizes)
  sleep "$FOOTPRINT_IDLE"
  after=$(footprint_json)
  if [ -n "${logs0:-}" ]; then
    logs1=$(log_sizes)
    rate=$(log_rate "$logs0" "$logs1" "$FOOTPRINT_IDLE")
    info footprint "the node's log files at rest: $(footprint_get "$rate" 'd["bytes"]') bytes in ${FOOTPRINT_IDLE}s, about $(footprint_get "$rate" 'round(d["bytesPerDay"] / 1048576, 1)') MiB a day (most from $(footprint_get "$rate" 'd["topUnit"]'): $(footprint_get "$rate" 'round(d["topUnitBytesPerDay"] / 1048576, 1)') MiB a day); each unit's file is rotated past 10 MiB, two generations kept"
  fi
  info footprint "at rest, ${FOOTPRINT_IDLE}s after the add-ons were available, and ${FOOTPRINT_IDLE}s after a workload of $FOOTPRINT_PODS pods came and went (MiB):"
  footprint_table "$idle" "$after"
  info footprint "total PSS $(footprint_get "$idle" 'd["totalPssMiB"]') MiB at rest, $(footprint_get "$after" 'd["totalPssMiB"]') MiB after the workload (mode $MODE, GOGC=$gogc)"
  report "{\"route\":\"$ROUTE\",\"footprint\":{\"idleSeconds\":$FOOTPRINT_IDLE,\"goGC\":${gogc:-null},\"idle\":$idle,\"afterWorkload\":$after,\"logsAtRest\":$rate}}"
}
