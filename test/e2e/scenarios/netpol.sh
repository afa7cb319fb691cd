# shellcheck shell=bash
# NetworkPolicy enforced on every node (issue 44), across two nodes: default-deny ingress and
# egress, allow rules by pod label, by namespace and by port, TCP and UDP, a peer whose labels do
# not match, then every policy removed and the traffic back; the enforcer killed (its rules stay,
# systemd restarts it) and stopped (status says policies are not enforced); its memory (PSS) goes
# to report.json; last, install --no-network-policy turns it off (rules gone, status says so) and
# a plain install turns it back on.
# Sourced by test/e2e/scenarios.sh after lib/scenario-lib.sh; its scenarios run by name.
# shellcheck disable=SC2317,SC2034,SC2153 # functions called by name; globals shared across the files

NP_WEB=""
# np_probe NS POD PORT PROTO: "ok" when POD reaches the web pod's PORT (agnhost connect, as upstream's
# Netpol tests probe), else "blocked"
np_probe() { kc -n "$1" exec "$2" -- /agnhost connect "$NP_WEB:$3" --protocol="$4" --timeout=2s >/dev/null 2>&1 && echo ok || echo blocked; }
# np_is NS POD PORT PROTO WANT: for wait_for (the rules follow a change within a second or two)
np_is() { [ "$(np_probe "$1" "$2" "$3" "$4")" = "$5" ]; }
np_phase() { [ "$(kc -n "$1" get pod "$2" -o 'jsonpath={.status.phase}' 2>/dev/null)" = Running ]; }
np_unit() { as_user systemctl --user show -p "$1" --value rootless-k8s-netpol.service; }
np_policy() { # np_policy NAME YAML-SPEC (in np-a)
  apply <<YAML
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: $1, namespace: np-a}
spec:
$2
YAML
}

scenario_netpol() {
  local agn first pid fp pss total restarts
  agn=$(image_name agnhost) || { fail netpol "no agnhost image in $IMAGES/images.json"; return; }
  first=$(kc get nodes -o 'jsonpath={.items[0].metadata.name}')
  check netpol "the plan enforces NetworkPolicies: $(receipt_value .plan.networkPolicy.reasons[0] | cut -c1-90)…" test "$(receipt_value .plan.networkPolicy.enforced)" = true
  check netpol "rootless-k8s-netpol.service is active" test "$(np_unit ActiveState)" = active
  check netpol "status: network policy: enforced" wait_for 30 has "network policy: enforced" rk8s status
  worker_up netpol || { worker_down netpol; return; }
  check netpol "status on the worker: network policy: enforced (its own enforcer, the kubelet's credential)" \
    wait_for 60 has "network policy: enforced" b_rk8s status
  kc create namespace np-a >/dev/null 2>&1
  kc create namespace np-b >/dev/null 2>&1
  kc label namespace np-a team=a --overwrite >/dev/null
  kc label namespace np-b team=b --overwrite >/dev/null
  check netpol "kubectl apply: np-a/web on $first (TCP 8080 and 9090, UDP 8081), np-a/other beside it, np-a/client and np-b/client on e2e-worker" apply <<YAML || { worker_down netpol; return; }
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: np-a, labels: {app: web}}
spec:
  nodeSelector: {kubernetes.io/hostname: $first}
  containers:
  - {name: a, image: $agn, imagePullPolicy: Never, args: ["netexec", "--http-port=8080", "--udp-port=8081"]}
  - {name: b, image: $agn, imagePullPolicy: Never, args: ["netexec", "--http-port=9090", "--udp-port=9091"]}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: np-a, labels: {app: other}}
spec:
  nodeSelector: {kubernetes.io/hostname: $first}
  containers: [{name: c, image: $agn, imagePullPolicy: Never, args: ["pause"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: np-a, labels: {app: client}}
spec:
  nodeSelector: {kubernetes.io/hostname: e2e-worker}
  containers: [{name: c, image: $agn, imagePullPolicy: Never, args: ["pause"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: np-b, labels: {app: client}}
spec:
  nodeSelector: {kubernetes.io/hostname: e2e-worker}
  containers: [{name: c, image: $agn, imagePullPolicy: Never, args: ["pause"]}]
YAML
  check netpol "the four pods run" wait_for "$TIMEOUT" eval "np_phase np-a web && np_phase np-a other && np_phase np-a client && np_phase np-b client"
  NP_WEB=$(kc -n np-a get pod web -o 'jsonpath={.status.podIP}')

  # No policy: everything reaches the web pod, across the overlay and on its own node.
  check netpol "no policy: np-a/client (the worker) reaches web $NP_WEB TCP 8080" wait_for 30 np_is np-a client 8080 tcp ok
  check netpol "no policy: ... and UDP 8081" wait_for 30 np_is np-a client 8081 udp ok
  check netpol "no policy: np-a/other (web's own node, over the bridge) reaches TCP 8080" wait_for 30 np_is np-a other 8080 tcp ok
  check netpol "no policy: np-b/client reaches TCP 9090" wait_for 30 np_is np-b client 9090 tcp ok

  # Default deny, both ways, for every pod of np-a.
  check netpol "kubectl apply: default-deny ingress and egress in np-a" np_policy default-deny '  podSelector: {}
  policyTypes: [Ingress, Egress]'
  check netpol "default deny: np-a/client no longer reaches web TCP 8080 (its egress, web's ingress)" wait_for 20 np_is np-a client 8080 tcp blocked
  check netpol "default deny: ... nor UDP 8081" wait_for 20 np_is np-a client 8081 udp blocked
  check netpol "default deny: np-a/other on web's own node is stopped too (bridged packets pass iptables)" wait_for 20 np_is np-a other 8080 tcp blocked
  check netpol "default deny: np-b/client (not isolated itself) is stopped by web's ingress" wait_for 20 np_is np-b client 9090 tcp blocked

  # Allow rules: by pod label and port (TCP and UDP), by namespace and port.
  check netpol "kubectl apply: web lets in app=client on TCP 8080 and UDP 8081, and team=b on TCP 9090; client may send to app=web on those" np_policy web-in '  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {app: client}}}]
    ports: [{protocol: TCP, port: 8080}, {protocol: UDP, port: 8081}]
  - from: [{namespaceSelector: {matchLabels: {team: b}}}]
    ports: [{protocol: TCP, port: 9090}]' &&
    np_policy client-out '  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
  - to: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{protocol: TCP, port: 8080}, {protocol: UDP, port: 8081}]'
  check netpol "allowed by label: np-a/client reaches web TCP 8080 across the nodes" wait_for 20 np_is np-a client 8080 tcp ok
  check netpol "allowed by label: ... and UDP 8081" wait_for 20 np_is np-a client 8081 udp ok
  check netpol "by port: np-a/client does not reach TCP 9090 (not in its rules)" wait_for 20 np_is np-a client 9090 tcp blocked
  check netpol "by label: np-a/other (app=other) is still stopped" wait_for 20 np_is np-a other 8080 tcp blocked
  check netpol "by namespace: np-b/client (team=b) reaches TCP 9090" wait_for 20 np_is np-b client 9090 tcp ok
  check netpol "by namespace and port: np-b/client does not reach TCP 8080" wait_for 20 np_is np-b client 8080 tcp blocked
  check netpol "the enforcer's log names what it enforces" has "enforcing 3 NetworkPolicies" rk8s logs netpol -n 50

  # The enforcer killed: its rules stay (fail closed) and systemd starts it again.
  restarts=$(np_unit NRestarts)
  pid=$(np_unit MainPID)
  check netpol "SIGKILL to the enforcer (pid $pid)" kill -KILL "$pid"
  check netpol "while it is down the rules hold: np-a/other is still stopped" np_is np-a other 8080 tcp blocked
  check netpol "systemd restarts it (NRestarts above $restarts, active)" wait_for 30 eval "[ \"\$(np_unit NRestarts)\" -gt $restarts ] && [ \"\$(np_unit ActiveState)\" = active ]"
  check netpol "after the restart: still enforced (np-a/client TCP 8080 ok, np-a/other blocked)" wait_for 20 eval "np_is np-a client 8080 tcp ok && np_is np-a other 8080 tcp blocked"
  check netpol "systemctl --user stop rootless-k8s-netpol: status says policies are not enforced" \
    eval "as_user systemctl --user stop rootless-k8s-netpol.service && has 'network policy: not enforced (rootless-k8s-netpol.service is inactive' rk8s status"
  check netpol "started again: status says enforced" eval "as_user systemctl --user start rootless-k8s-netpol.service && wait_for 30 has 'network policy: enforced (3 policies' rk8s status"

  # Its weight: the enforcer's PSS beside the node's.
  fp=$(python3 "$HERE/lib/footprint.py" "$U")
  pss=$(tool json - '.components[rootless-k8s netpol].pssMiB' <<<"$fp") || pss=null
  total=$(tool json - .totalPssMiB <<<"$fp") || total=null
  info netpol "memory: the enforcer (rootless-k8s netpol) $pss MiB PSS of the node's $total MiB, enforcing 3 policies"
  report "{\"route\":\"$ROUTE\",\"networkPolicy\":{\"enforcerPssMiB\":$pss,\"nodePssMiB\":$total}}"

  # Every policy removed: the traffic is back.
  check netpol "kubectl delete networkpolicy --all -n np-a" eval "kc -n np-a delete networkpolicy --all >/dev/null"
  check netpol "removed: np-a/other reaches web TCP 8080 again" wait_for 20 np_is np-a other 8080 tcp ok
  check netpol "removed: np-a/client reaches TCP 9090 again" wait_for 20 np_is np-a client 9090 tcp ok
  check netpol "removed: np-b/client reaches TCP 8080 again" wait_for 20 np_is np-b client 8080 tcp ok
  # The worker's pods gone before it leaves: its uninstall drains it, and pods of namespaces being
  # deleted meanwhile kept the drain waiting past its end, so the Node stayed.
  check netpol "kubectl delete namespace np-a np-b (their pods gone)" eval "kc delete namespace np-a np-b --timeout=120s >/dev/null"
  worker_down netpol

  # Turned off and on again: a policy is then not enforced, and status says so.
  kc create namespace np-c >/dev/null 2>&1
  check netpol "kubectl apply: np-c/web and np-c/other on this node, and default deny in np-c" apply <<YAML
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: np-c, labels: {app: web}}
spec:
  containers: [{name: a, image: $agn, imagePullPolicy: Never, args: ["netexec", "--http-port=8080", "--udp-port=8081"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: np-c, labels: {app: other}}
spec:
  containers: [{name: c, image: $agn, imagePullPolicy: Never, args: ["pause"]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: np-c}
spec: {podSelector: {}, policyTypes: [Ingress]}
YAML
  check netpol "both run" wait_for "$TIMEOUT" eval "np_phase np-c web && np_phase np-c other"
  NP_WEB=$(kc -n np-c get pod web -o 'jsonpath={.status.podIP}')
  check netpol "enforced: np-c/other does not reach web" wait_for 20 np_is np-c other 8080 tcp blocked
  check netpol "install --no-network-policy" install_to "$STATE/netpol-off.log" "${FLAGS[@]}" --no-network-policy
  check netpol "status: network policy: not enforced (turned off with --no-network-policy)" has "network policy: not enforced (turned off with --no-network-policy)" rk8s status
  check netpol "the enforcer's unit is gone" test ! -e "$H/.config/systemd/user/rootless-k8s-netpol.service"
  check netpol "its rules went with it: np-c/other reaches web despite the policy" wait_for 20 np_is np-c other 8080 tcp ok
  check netpol "install without the flag: enforced again" install_to "$STATE/netpol-on.log" "${FLAGS[@]}"
  check netpol "... np-c/other is stopped again" wait_for 30 np_is np-c other 8080 tcp blocked
  kc delete namespace np-c --wait=false >/dev/null 2>&1
}
