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

# The nftables path on a real node (issue 44): where the host has no iptables (Fedora, Arch, RHEL 9
# without the iptables package), kube-proxy runs in nftables mode and the enforcer writes its rules
# as an nftables table of its own (ip rootless_k8s_netpol). Here a second user's manager gets a mount
# namespace without iptables: /dev/null bound over the xtables binaries that every iptables command
# is a link to (host route: inside the manager's own mount namespace; VM route: BindReadOnlyPaths= in
# a drop-in of user@UID.service). One node, its pods on its bridge.
NFT_XTABLES=(/usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi)
nft_b_up() {
  local b pid
  if [ "$ROUTE" = host ]; then
    shared_b_up || return
    pid=$(b_pid) || return
    for b in "${NFT_XTABLES[@]}"; do [ ! -e "$b" ] || nsenter -t "$pid" -m mount --bind /dev/null "$b" || return; done
    return
  fi
  second_host_down
  E2E_USER=$B_USER ensure_test_user || return
  mkdir -p "$(b_dropin)" && {
    echo '[Service]'
    for b in "${NFT_XTABLES[@]}"; do [ ! -e "$b" ] || echo "BindReadOnlyPaths=/dev/null:$b"; done
  } >"$(b_dropin)/50-rk8s-e2e-no-iptables.conf" && systemctl daemon-reload || return
  systemctl start "user@$(id -u "$B_USER").service" || return
  wait_for 60 b_running || { echo "the user manager of $B_USER is not running" >&2; return 1; }
}
# nft_is POD HOST:PORT PROTO WANT: POD (in namespace nft) reaches HOST:PORT ("ok") or not ("blocked":
# agnhost says TIMEOUT or REFUSED, as upstream's Netpol tests read it; a failed exec is neither)
nft_is() {
  local out got=ok
  if ! out=$(b_kc -n nft exec "$1" -- /agnhost connect "$2" --protocol="$3" --timeout=2s 2>&1); then
    if grep -qE 'TIMEOUT|REFUSED' <<<"$out"; then got=blocked; else got="error: $out"; fi
  fi
  [ "$got" = "$4" ] || { echo "$got" >&2; return 1; }
}
nft_phase() { [ "$(b_kc -n nft get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null)" = Running ]; }
nft_in_node() { on_b "$(b_share)/libexec/rootless-k8s-enter" "$@"; } # a command inside B's node namespaces

scenario_netpol_nft() {
  local log=$STATE/netpol-nft.log agn web svc rc
  agn=$(image_name agnhost) || { fail netpol-nft "no agnhost image in $IMAGES/images.json"; return; }
  B_HOME=$(getent passwd "$B_USER" | cut -d: -f6)
  check netpol-nft "$B_USER's user manager, in a mount namespace where iptables is not installed (xtables bound to /dev/null)" nft_b_up ||
    { b_node_down; return; }
  B_HOME=$(getent passwd "$B_USER" | cut -d: -f6)
  b_state_clean
  check netpol-nft "there, iptables does not run and nft does ($(on_b nft --version 2>&1))" eval "! on_b iptables -V >/dev/null 2>&1 && on_b nft --version >/dev/null"
  b_rk8s install --yes --kubernetes-version "${V_INSTALL%.*}" --timeout "$TIMEOUT" "${SOURCE[@]}" >"$log" 2>&1
  rc=$?
  check netpol-nft "install exits 0 and the node is Ready (exit $rc)" eval "[ $rc = 0 ] && has ' Ready ' b_kc get nodes" ||
    { tail -20 "$log" | sed 's/^/    | /'; b_node_down; return; }
  check netpol-nft "the plan: kube-proxy in nftables mode ($(b_receipt .plan.proxy.mode)), the enforcer's rules in nftables ($(b_receipt .plan.networkPolicy.backend))" \
    test "$(b_receipt .plan.proxy.mode) $(b_receipt .plan.networkPolicy.backend) $(b_receipt .plan.networkPolicy.enforced)" = "nftables nftables true"
  check netpol-nft "status: network policy: enforced" wait_for 60 has "network policy: enforced" b_rk8s status
  check netpol-nft "image load (pause, agnhost)" b_rk8s image load "$IMAGES/pause.tar" "$IMAGES/agnhost.tar"
  b_kc create namespace nft >/dev/null 2>&1
  check netpol-nft "kubectl apply: web (TCP 8080, UDP 8081) with a ClusterIP Service, client and other beside it" eval "b_kc apply -f - >/dev/null" <<YAML || { b_node_down; return; }
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: nft, labels: {app: web}}
spec:
  containers: [{name: a, image: $agn, imagePullPolicy: Never, args: ["netexec", "--http-port=8080", "--udp-port=8081"]}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: nft}
spec:
  selector: {app: web}
  ports: [{name: tcp, protocol: TCP, port: 80, targetPort: 8080}, {name: udp, protocol: UDP, port: 81, targetPort: 8081}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: nft, labels: {app: client}}
spec:
  containers: [{name: c, image: $agn, imagePullPolicy: Never, args: ["pause"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: nft, labels: {app: other}}
spec:
  containers: [{name: c, image: $agn, imagePullPolicy: Never, args: ["pause"]}]
YAML
  check netpol-nft "the three pods run" wait_for "$TIMEOUT" eval "nft_phase web && nft_phase client && nft_phase other" || { b_node_down; return; }
  web=$(b_kc -n nft get pod web -o 'jsonpath={.status.podIP}')
  svc=$(b_kc -n nft get service web -o 'jsonpath={.spec.clusterIP}')
  check netpol-nft "no policy: client reaches web $web TCP 8080 and UDP 8081" wait_for 30 eval "nft_is client $web:8080 tcp ok && nft_is client $web:8081 udp ok"
  check netpol-nft "kube-proxy's nftables rules: client reaches the Service $svc on TCP 80 and UDP 81" wait_for 30 eval "nft_is client $svc:80 tcp ok && nft_is client $svc:81 udp ok"
  check netpol-nft "kube-proxy's table is in the node's namespace (nft list table ip kube-proxy)" nft_in_node nft list table ip kube-proxy
  check netpol-nft "kubectl apply: web lets in app=client on TCP 8080 only" eval "b_kc apply -f - >/dev/null" <<YAML
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-in, namespace: nft}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {app: client}}}]
    ports: [{protocol: TCP, port: 8080}]
YAML
  check netpol-nft "the enforcer's table is there: nft list table ip rootless_k8s_netpol" wait_for 20 nft_in_node nft list table ip rootless_k8s_netpol
  check netpol-nft "enforced: other no longer reaches web TCP 8080 (over the bridge)" wait_for 20 nft_is other "$web:8080" tcp blocked
  check netpol-nft "enforced: client still reaches web TCP 8080, and through the Service" wait_for 20 eval "nft_is client $web:8080 tcp ok && nft_is client $svc:80 tcp ok"
  check netpol-nft "enforced: client does not reach UDP 8081 (not in the policy's ports)" wait_for 20 nft_is client "$web:8081" udp blocked
  check netpol-nft "kubectl delete networkpolicy web-in" eval "b_kc -n nft delete networkpolicy web-in >/dev/null"
  check netpol-nft "removed: other reaches web TCP 8080 again, client UDP 8081 again" wait_for 20 eval "nft_is other $web:8080 tcp ok && nft_is client $web:8081 udp ok"
  check netpol-nft "uninstall --purge" b_rk8s uninstall --purge --yes
  b_node_down
}
