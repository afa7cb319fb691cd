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
