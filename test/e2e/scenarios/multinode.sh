# shellcheck shell=bash
# Two hosts: join, the worker, the overlay and Services across nodes (issue 37: one file per scenario group).
# Sourced by test/e2e/scenarios.sh after lib/scenario-lib.sh; its scenarios run by name.
# shellcheck disable=SC2317,SC2034,SC2153 # functions called by name; globals shared across the files

# --- joining the node's cluster from another host: tokens and the joiner's preflight (issue 14) -----
# `token create` on the node, then the line it prints run as the joiner would run it (here on the
# same host, through the host's own address and the published API port): every check passes. Then
# what must fail does, with its one line: a wrong CA hash, a wrong secret, a deleted token, an
# expired one, a node name already taken; and the token's holder gets a kubelet client
# certificate through TLS bootstrap: a CSR made with openssl, approved and signed by the
# controller-manager.
join_doctor() { # join_doctor RUNNER TOKEN URL HASH [FLAGS...]: doctor --join through RUNNER (as_user: this host, on_b: the second), the token in its environment
  local run=$1 token=$2 url=$3 hash=$4
  shift 4
  "$run" env ROOTLESS_K8S_TOKEN="$token" "$E2E_OPT/bin/rootless-k8s" doctor --join "$url" --ca-hash "$hash" "$@"
}
join_fails() { # join_fails RUNNER CHECK-ID PATTERN TOKEN URL HASH [FLAGS...]: exit 1, that check failed with PATTERN in its summary or fix
  local run=$1 id=$2 pattern=$3 out rc
  shift 3
  out=$(join_doctor "$run" "$@" --json 2>&1)
  rc=$?
  [ "$rc" = 1 ] || { echo "exit $rc: $out"; return 1; }
  # shellcheck disable=SC2016 # JavaScript, not shell
  "$E2E_OPT/node" -e '
    const [id, pattern] = process.argv.slice(1);
    const c = JSON.parse(require("fs").readFileSync(0, "utf8")).checks.find((x) => x.id === id);
    console.log(c ? `${c.status}: ${c.summary}` : `no check ${id}`);
    process.exit(c && c.status === "fail" && new RegExp(pattern).test(`${c.summary}\n${(c.fix?.user ?? []).join("\n")}`) ? 0 : 1);' "$id" "$pattern" <<<"$out"
}
anonymous_get() { # anonymous_get URL: the body, over TLS that trusts nothing (as a joiner's first read)
  # shellcheck disable=SC2016 # JavaScript, not shell
  NODE_TLS_REJECT_UNAUTHORIZED=0 "$E2E_OPT/node" --no-warnings -e 'fetch(process.argv[1]).then((r) => r.text()).then((t) => process.stdout.write(t))' "$1"
}
# A second host for the joiner: its own user and its own network namespace, linked to this host by
# a veth pair (198.51.100.1 here, .2 there; its default route goes through this host), as two
# machines on one link. The joiner reaches the node at this host's own address, as on a LAN.
# The user (k8sdev2, with its own subordinate ids) gets its own systemd --user manager running in
# that namespace, so a whole node can run there: every unit it starts inherits the namespace. On
# the host route test/e2e/host-env.sh starts it (E2E_USER, E2E_NETNS); in the VM guest, where
# systemd is PID 1 (and host-env.sh is not copied in), it is the system's own user@UID.service,
# put in the namespace by a drop-in (NetworkNamespacePath=).
B_USER=${E2E_USER}2
B_NS=rk8s-e2e-b
b_env() { E2E_USER=$B_USER E2E_NETNS=$B_NS bash "$HERE/host-env.sh" "$@"; }
# b_pid: the second host's user manager's pid, asked each time (check runs commands in a subshell,
# where a variable set by second_host_up would be lost).
b_pid() {
  local p
  if [ "$ROUTE" = host ]; then p=$(b_env pid 2>/dev/null)
  else p=$(systemctl show -p MainPID --value "user@$(id -u "$B_USER" 2>/dev/null).service" 2>/dev/null); fi
  [ -n "$p" ] && [ "$p" != 0 ] && echo "$p"
}
b_dropin() { echo "/run/systemd/system/user@$(id -u "$B_USER").service.d"; }
b_running() { case "$(on_b systemctl --user is-system-running 2>/dev/null)" in running | degraded) return 0 ;; esac; return 1; }
b_manager_up() {
  if [ "$ROUTE" = host ]; then
    b_env up || return # the user and its subordinate ids (ensure_test_user) first
    b_pid >/dev/null || { echo "no user manager for $B_USER" >&2; return 1; }
    return
  fi
  E2E_USER=$B_USER ensure_test_user || return
  mkdir -p "$(b_dropin)" &&
    printf '[Service]\nNetworkNamespacePath=/run/netns/%s\n' "$B_NS" >"$(b_dropin)/50-rk8s-e2e-netns.conf" &&
    systemctl daemon-reload && systemctl start "user@$(id -u "$B_USER").service" || return
  b_pid >/dev/null || { echo "user@$(id -u "$B_USER").service has no main pid" >&2; return 1; }
  wait_for 60 b_running || { echo "the user manager of $B_USER is not running: $(on_b systemctl --user is-system-running 2>&1)" >&2; return 1; }
}
b_manager_down() {
  id "$B_USER" >/dev/null 2>&1 || return 0
  if [ "$ROUTE" = host ]; then b_env down >/dev/null 2>&1; return 0; fi
  systemctl stop "user@$(id -u "$B_USER").service" 2>/dev/null
  [ -d "$(b_dropin)" ] && rm -rf "$(b_dropin)" && systemctl daemon-reload
  return 0
}
second_host_up() {
  second_host_down
  ip netns add "$B_NS" &&
    ip link add rk8s-e2e-a type veth peer name rk8s-e2e-b netns "$B_NS" &&
    ip addr add 198.51.100.1/24 dev rk8s-e2e-a && ip link set rk8s-e2e-a up &&
    ip -n "$B_NS" addr add 198.51.100.2/24 dev rk8s-e2e-b && ip -n "$B_NS" link set rk8s-e2e-b up &&
    ip -n "$B_NS" link set lo up && ip -n "$B_NS" route add default via 198.51.100.1 &&
    b_manager_up
}
second_host_down() { # B's manager first (its units hold the namespace), then the link and the namespace
  b_manager_down
  ip netns del "$B_NS" 2>/dev/null
  ip link del rk8s-e2e-a 2>/dev/null
  return 0
}
on_b() { # on_b CMD...: CMD as the second host's user, through its manager's mount and network namespaces (as as_user)
  local pid
  pid=$(b_pid) || { echo "the second host is not up (no user manager of $B_USER)" >&2; return 1; }
  E2E_USER=$B_USER E2E_NS_PID=$pid as_user "$@"
}
b_rk8s() { on_b "$E2E_OPT/bin/rootless-k8s" "$@"; } # b_rk8s ARGS...: the tool under test, as the second host's user
csr_issued() { [ -n "$(kc get csr "$1" -o 'jsonpath={.status.certificate}' 2>/dev/null)" ]; }
# The control plane advertises its host's first address (install --node-ip), as token create asks
# for: pods on other hosts reach the `kubernetes` Service and the node there. unadvertise: back to
# the namespace's address, the default the later scenarios expect.
kubernetes_endpoints() { kc get endpointslices -l kubernetes.io/service-name=kubernetes -o 'jsonpath={range .items[*].endpoints[*]}{.addresses[0]} {end}' | xargs; }
kubernetes_endpoint_is_host() { test "$(kubernetes_endpoints)" = "$(receipt_value '.plan.pki.hostAddresses[0]')"; }
advertise_host() {
  local ip
  ip=$(receipt_value '.plan.pki.hostAddresses[0]')
  [ "$(receipt_value '.plan.node.ip')" = "$ip" ] && return 0
  install_to "$STATE/advertise.log" "${FLAGS[@]}" --node-ip "$ip"
}
unadvertise_host() {
  [ -z "$(receipt_value '.plan.node.ip')" ] && return 0
  install_to "$STATE/unadvertise.log" "${FLAGS[@]}"
}
scenario_join() {
  local out line token url hash id rc csr ca
  out=$(rk8s token create --description "e2e join" 2>&1)
  rc=$?
  check join "token create on a control plane that advertises its namespace's address: exit $rc (3), naming install --node-ip ($(grep -m1 '^fix:' <<<"$out"))" \
    test "$rc" = 3 -a -n "$(grep 'rootless-k8s install --node-ip' <<<"$out")"
  check join "install --node-ip $(receipt_value '.plan.pki.hostAddresses[0]'): the control plane advertises its host's address" advertise_host || return
  check join "... its Node's InternalIP: $(kc get nodes -o 'jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}')" \
    test "$(kc get nodes -o 'jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}')" = "$(receipt_value '.plan.pki.hostAddresses[0]')"
  # The API server's old address leaves the endpoints once its lease expires (the lease reconciler's 15 s).
  check join "... and, once the old address's lease expired, the only endpoint of the \`kubernetes\` Service" \
    wait_for 90 kubernetes_endpoint_is_host
  info join "the \`kubernetes\` Service's endpoints: $(kubernetes_endpoints)"
  out=$(rk8s token create --description "e2e join" 2>"$STATE/token-create.err")
  rc=$?
  check join "token create: exit $rc, two lines to copy ($(head -1 "$STATE/token-create.err"))" test "$rc" = 0 || { sed 's/^/    | /' "$STATE/token-create.err"; return; }
  check join "token create started the overlay agent and the CSR approver, which a single node does without (#33)" on_demand_active
  check join "the second line is the join itself: ROOTLESS_K8S_TOKEN=<token> rootless-k8s join https://<address>:<port> --ca-hash sha256:<hex>" \
    grep -Eq '^ROOTLESS_K8S_TOKEN=[a-z0-9]{6}\.[a-z0-9]{16} rootless-k8s join https://[0-9.]+:[0-9]+ --ca-hash sha256:[0-9a-f]{64}$' <<<"$(tail -1 <<<"$out")"
  line=$(tail -2 <<<"$out" | head -1)
  read -r token _ _ _ url _ hash <<<"$line"
  token=${token#ROOTLESS_K8S_TOKEN=}
  id=${token%%.*}
  check join "the line reads ROOTLESS_K8S_TOKEN=<token> rootless-k8s doctor --join https://<host address>:<port> --ca-hash sha256:<hex> ($url)" \
    grep -Eq '^ROOTLESS_K8S_TOKEN=[a-z0-9]{6}\.[a-z0-9]{16} rootless-k8s doctor --join https://[0-9.]+:[0-9]+ --ca-hash sha256:[0-9a-f]{64}$' <<<"$line"
  check join "the URL is the host's own address, not loopback or the node's in the namespace ($(receipt_value .plan.network.namespaceIP))" \
    lacks "//127\.\|//$(receipt_value .plan.network.namespaceIP):" echo "$url"
  check join "the CA hash is the pin of the node's CA (openssl's SubjectPublicKeyInfo digest)" \
    test "$hash" = "sha256:$(kc config view --raw -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}' | base64 -d | openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)"
  out=$(join_doctor as_user "$token" "$url" "$hash" --node-name e2e-joiner 2>&1)
  rc=$?
  check join "the printed line's preflight passes: doctor --join exit $rc" test "$rc" = 0
  printf '%s\n' "$out" | sed 's/^/    | /'
  check join "a second host (user $B_USER, its own network namespace at 198.51.100.2, linked by veth)" second_host_up
  out=$(join_doctor on_b "$token" "$url" "$hash" --node-name e2e-joiner 2>&1)
  rc=$?
  check join "from the second host the same line's preflight passes: exit $rc" test "$rc" = 0
  printf '%s\n' "$out" | sed 's/^/    | /'
  ip link set rk8s-e2e-a down
  check join "the link cut: the second host's preflight fails on reaching the API server, naming the port" join_fails on_b join-reach "TCP port" "$token" "$url" "$hash" --node-name e2e-joiner
  ip link set rk8s-e2e-a up
  check join "the link back: it passes again" wait_for 30 join_doctor on_b "$token" "$url" "$hash" --node-name e2e-joiner
  second_host_down
  check join "cluster-info is readable without credentials (anonymous)" has '"cluster-info"' anonymous_get "$url/api/v1/namespaces/kube-public/configmaps/cluster-info"
  check join "token list shows token $id with its description" has "^$id .*e2e join" rk8s token list
  check join "a wrong CA hash: exit 1, the pin check says so" join_fails as_user join-ca-hash "not the --ca-hash given" "$token" "$url" "sha256:$(printf '0%.0s' $(seq 64))" --node-name e2e-joiner
  check join "a wrong secret: exit 1, the token check says so" join_fails as_user join-token "does not match the token's secret" "$id.ffffffffffffffff" "$url" "$hash" --node-name e2e-joiner
  check join "the node's own name: exit 1, already in the cluster" join_fails as_user join-node-name "already in the cluster" "$token" "$url" "$hash" --node-name "$(kc get nodes -o 'jsonpath={.items[0].metadata.name}')"
  # TLS bootstrap with the token: a kubelet client CSR, approved and signed by the controller-manager.
  ca=$SCRATCH/join-ca.crt
  kc config view --raw -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$ca"
  chmod 644 "$ca"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$SCRATCH/join.key" -subj "/O=system:nodes/CN=system:node:e2e-joiner" -out "$SCRATCH/join.csr" 2>/dev/null
  csr=$(base64 -w0 <"$SCRATCH/join.csr")
  printf 'apiVersion: v1\nkind: Config\n' >"$SCRATCH/empty.kubeconfig"
  chown "$E2E_USER" "$SCRATCH/empty.kubeconfig"
  check join "the token's holder creates a kubelet client CSR (as system:bootstrap:$id)" as_user "$SHARE/versions/current/bin/kubectl" --kubeconfig "$SCRATCH/empty.kubeconfig" \
    --server "$url" --certificate-authority "$ca" --token "$token" create -f - <<YAML
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: e2e-joiner}
spec:
  request: $csr
  signerName: kubernetes.io/kube-apiserver-client-kubelet
  usages: [digital signature, client auth]
YAML
  check join "the controller-manager approves it (AutoApproved) and signs it" wait_for 60 csr_issued e2e-joiner
  check join "approved by csrapproving for the token's group: $(kc get csr e2e-joiner -o 'jsonpath={.status.conditions[0].reason}')" \
    test "$(kc get csr e2e-joiner -o 'jsonpath={.status.conditions[0].reason}')" = AutoApproved
  kc get csr e2e-joiner -o 'jsonpath={.status.certificate}' | base64 -d >"$SCRATCH/join.crt"
  check join "the certificate is system:node:e2e-joiner's, issued by the node's CA" openssl verify -CAfile "$ca" "$SCRATCH/join.crt"
  check join "its subject is O=system:nodes, CN=system:node:e2e-joiner" has 'CN *= *system:node:e2e-joiner' openssl x509 -noout -subject -in "$SCRATCH/join.crt"
  kc delete csr e2e-joiner >/dev/null 2>&1
  check join "token delete $id" rk8s token delete "$id"
  check join "a deleted token: exit 1 once the signer drops its signature (unknown, expired or deleted)" wait_for 60 join_fails as_user join-token "unknown, expired or deleted" "$token" "$url" "$hash" --node-name e2e-joiner
  out=$(rk8s token create --ttl 5s 2>/dev/null | tail -1)
  read -r token _ <<<"$out"
  token=${token#ROOTLESS_K8S_TOKEN=}
  sleep 6
  check join "an expired token (--ttl 5s, 6 s later): exit 1, the token check fails" join_fails as_user join-token "." "$token" "$url" "$hash" --node-name e2e-joiner
  check join "token list no longer shows the deleted token $id" lacks "^$id " rk8s token list
  # The worker scenario joins this control plane next; otherwise back to the default now.
  case " $SCENARIOS " in *" worker "*) ;; *) check join "install without --node-ip: back to the namespace's address" unadvertise_host ;; esac
}

# --- a second host's node joins as a worker (issue 14) ----------------------------------------------
# The second host (its own user and user manager in its own network namespace, linked by veth) runs
# the join line token create prints: the preflight, then its own doctor and plan, the runtime, the
# kubelet (TLS bootstrap with the token) and kube-proxy. Checked from the first node's admin: the
# worker is Ready with its host's address, has its own pod range, its kubelet's serving certificate
# was approved by the control plane's approver; a pod scheduled there runs, its logs and exec go
# through the worker's published kubelet port. A wrong token writes nothing; the worker's upgrade
# refuses to pass the control plane's version; cutting the link makes the Node NotReady and it
# comes back; uninstall drains the worker and deletes its Node, and the first node stays healthy.
B_HOME=
b_state_clean() { # nothing of an earlier run's worker on the second host: units, receipt, data
  [ -n "$B_HOME" ] || return 0
  on_b systemctl --user stop rootless-k8s.target >/dev/null 2>&1
  rm -rf "$B_HOME/.local/share/rootless-k8s" "$B_HOME/.config/rootless-k8s" "$B_HOME/.cache/rootless-k8s" "$B_HOME/.local/state/rootless-k8s"
  rm -f "$B_HOME"/.config/systemd/user/rootless-k8s* "$B_HOME"/.config/systemd/user/default.target.wants/rootless-k8s*
  on_b systemctl --user daemon-reload >/dev/null 2>&1
  return 0
}
start_b_mirror() {
  rm -f "$STATE/b-mirror.port"
  setsid "$E2E_OPT/node" "$E2E_OPT/lib/serve-mirror.mjs" --dir "$E2E_OPT/mirror" --host 198.51.100.1 --port-file "$STATE/b-mirror.port" \
    --log "$STATE/b-mirror.log" >"$STATE/b-mirror.out" 2>&1 </dev/null &
  echo $! >"$STATE/b-mirror.pid" # a file: check runs this in a subshell, where a variable would be lost
  for _ in $(seq 1 100); do [ -s "$STATE/b-mirror.port" ] && break; sleep 0.1; done
  [ -s "$STATE/b-mirror.port" ]
}
# The second host's mirror inherits the lock run.sh holds (flock): it must never outlive the scenario.
stop_b_mirror() { [ -s "$STATE/b-mirror.pid" ] && kill "$(cat "$STATE/b-mirror.pid")" 2>/dev/null; rm -f "$STATE/b-mirror.pid"; return 0; }
b_join() { # b_join TOKEN URL HASH LOG [FLAGS...]: the join line, run on the second host as its user
  local token=$1 url=$2 hash=$3 log=$4
  shift 4
  on_b env ROOTLESS_K8S_TOKEN="$token" "$E2E_OPT/bin/rootless-k8s" join "$url" --ca-hash "$hash" --yes --node-name e2e-worker \
    --manifest "$MANIFESTS/k8s-$V_INSTALL.json" --mirror "http://198.51.100.1:$(cat "$STATE/b-mirror.port")" --timeout "$TIMEOUT" "$@" >"$log" 2>&1
}
b_node_kubectl() { on_b "$B_HOME/.local/share/rootless-k8s/versions/current/bin/kubectl" --kubeconfig "$B_HOME/.config/rootless-k8s/kubelet.kubeconfig" "$@" 2>&1; }
node_ready_is() { [ "$(kc get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = "$2" ]; }
serving_csr_approved() { kc get csr -o 'jsonpath={range .items[*]}{.spec.signerName} {.spec.username} {.status.conditions[0].reason} {.status.certificate}{"\n"}{end}' | grep -q "^kubernetes.io/kubelet-serving system:node:$1 RootlessK8sApproved ."; }
# from_pod POD URL [CURL-FLAGS...]: what a pod's curl reads (the e2e namespace).
from_pod() { kc -n e2e exec "$1" -- curl -sS --max-time 5 "${@:2}" 2>&1; }
svc_ip() { kc -n e2e get service "$1" -o 'jsonpath={.spec.clusterIP}'; }
udp_published() { # udp_published NETNS|- ADDR: something listens on UDP ADDR:8472 in that network namespace
  if [ "$1" = - ]; then ss -Hlun "sport = :8472" | grep -q "$2:8472"; else ip netns exec "$1" ss -Hlun "sport = :8472" | grep -q "$2:8472"; fi
}
# The Services across the hosts (issue 36), 30 requests each, each a new connection or a new UDP
# socket: TCP and UDP through a ClusterIP to the pod on the other node, both ways; TCP and UDP
# through the worker pod's NodePorts from both hosts; DNS from the worker's pod with CoreDNS on the
# first node, and from the first node's pod with CoreDNS moved to the worker.
CROSS_TRIES=30
# dial_answers FROM HOST PORT PROTO NAME: of CROSS_TRIES requests FROM's netexec sends to HOST:PORT,
# how many NAME answered (agnhost's /dial, as the conformance tests ask).
dial_answers() {
  local proto=$4
  [ "$proto" = tcp ] && proto=http # netexec's /dial speaks HTTP over TCP (its "tcp" is a bare line, which its HTTP port does not answer)
  kc -n e2e exec "$1" -- curl -sS --max-time 300 "http://127.0.0.1:8080/dial?request=hostname&protocol=$proto&host=$2&port=$3&tries=$CROSS_TRIES" 2>&1 | grep -o "\"$5\"" | wc -l
}
http_answers() { local i n=0; for ((i = 0; i < CROSS_TRIES; i++)); do answers "$1" "$2" && n=$((n + 1)); done; echo "$n"; }
udp_answers() { # udp_answers HOST PORT NAME: of CROSS_TRIES datagrams from the host, how many NAME answered
  local out
  out=$(tool udp "$1" "$2" hostname "$CROSS_TRIES")
  if [[ $out =~ ^([0-9]+)/[0-9]+\ answered:\ ?($3)?$ ]]; then echo "${BASH_REMATCH[1]}"; else echo 0; fi
}
# dns_answers POD NAME: of CROSS_TRIES lookups of NAME in POD (one try of 2 s each: the pods' dnsConfig), how many resolved
dns_answers() {
  kc -n e2e exec "$1" -- sh -c "n=0; i=0; while [ \$i -lt $CROSS_TRIES ]; do getent hosts $2 >/dev/null && n=\$((n + 1)); i=\$((i + 1)); done; echo \$n" 2>&1 | tail -1
}
# coredns_on NODE: CoreDNS's one pod runs on NODE, Ready (the Service's endpoint), the old one gone
coredns_on() { [ "$(kc -n kube-system get pods -l k8s-app=kube-dns -o 'jsonpath={range .items[*]}{.spec.nodeName} {.status.phase} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null)" = "$1 Running True" ]; }
cross_node_services() {
  local a_ip=$1 first=$2 n wip fip npt npu name=on-first.e2e.svc.cluster.local.
  wip=$(svc_ip on-worker)
  fip=$(svc_ip on-first)
  for proto in tcp udp; do
    wait_for 30 eval "[ \"\$(CROSS_TRIES=1 dial_answers on-first $wip 80 $proto on-worker)\" = 1 ]"
    n=$(dial_answers on-first "$wip" 80 "$proto" on-worker)
    check worker "${proto^^} through a ClusterIP ($wip:80) to the pod on the other node (first → worker): $n/$CROSS_TRIES answered" test "$n" = "$CROSS_TRIES"
    n=$(dial_answers on-worker "$fip" 80 "$proto" on-first)
    check worker "${proto^^} through a ClusterIP ($fip:80) to the pod on the other node (worker → first): $n/$CROSS_TRIES answered" test "$n" = "$CROSS_TRIES"
  done
  npt=$(kc -n e2e get service on-worker -o 'jsonpath={.spec.ports[?(@.name=="tcp")].nodePort}')
  npu=$(kc -n e2e get service on-worker -o 'jsonpath={.spec.ports[?(@.name=="udp")].nodePort}')
  for h in "$a_ip" 198.51.100.2; do
    n=$(http_answers "http://$h:$npt/hostname" on-worker)
    check worker "TCP through the NodePort $h:$npt from the host to the worker's pod: $n/$CROSS_TRIES answered" test "$n" = "$CROSS_TRIES"
    wait_for 30 tool udp "$h" "$npu" hostname 1 >/dev/null
    n=$(udp_answers "$h" "$npu" on-worker)
    check worker "UDP through the NodePort $h:$npu from the host to the worker's pod: $n/$CROSS_TRIES answered ($(tool udp "$h" "$npu" hostname 1))" test "$n" = "$CROSS_TRIES"
  done
  check worker "CoreDNS runs on the first node ($first)" wait_for 60 coredns_on "$first"
  n=$(dns_answers on-worker "$name")
  check worker "DNS from the worker's pod with CoreDNS on the first node: $n/$CROSS_TRIES resolved $name" test "$n" = "$CROSS_TRIES"
  if check worker "CoreDNS moved to the worker (a nodeSelector)" coredns_to e2e-worker; then
    wait_for 30 eval "[ \"\$(CROSS_TRIES=1 dns_answers on-first $name)\" = 1 ]" # kube-proxy's rules for the new endpoint
    n=$(dns_answers on-first "$name")
    check worker "DNS from the first node's pod with CoreDNS on the worker: $n/$CROSS_TRIES resolved $name" test "$n" = "$CROSS_TRIES"
  fi
  check worker "CoreDNS back on the first node, as installed" coredns_back "$first"
}
# overlay_throughput FIRST: iperf3 (the benchmark's image, test/bench/lib/iperf3-image.mjs), TCP
# and UDP (unlimited rate) for E2E_IPERF_SECONDS (5) each, from a pod on the first node to a pod on
# the worker (across the overlay) and to another pod on the first node (the reference, in the same
# run); the receiver's rates and their ratios go to report.json (routes.<route>.overlay). Asserts
# nothing about speed; a transfer that fails is a failure.
iperf_gbps() { # iperf_gbps FILE: the receiver's rate in Gbit/s and, for UDP, the datagrams lost (%)
  # shellcheck disable=SC2016 # JavaScript, not shell
  "$E2E_OPT/node" -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    if (r.error) { console.error(r.error); process.exit(1); }
    const s = r.end.sum_received ?? r.end.sum;
    const lost = r.end.sum?.lost_percent;
    console.log(`${(s.bits_per_second / 1e9).toFixed(3)} ${lost === undefined ? "" : lost.toFixed(1)}`.trim());' "$1"
}
overlay_throughput() {
  local first=$1 gen=$HERE/../bench/lib/iperf3-image.mjs tar=$STATE/iperf3.tar img t=${E2E_IPERF_SECONDS:-5} ipb ipr proto flags key
  local -A R
  if [ ! -f "$gen" ]; then info worker "overlay throughput: not measured on this route (no test/bench/lib/iperf3-image.mjs here)"; return; fi
  img=$("$E2E_OPT/node" "$gen" --debs "$E2E_CACHE/debs-images" --out "$tar" 2>"$STATE/iperf3-image.log") || { fail worker "the iperf3 image: $(tail -1 "$STATE/iperf3-image.log")"; return; }
  chmod 644 "$tar"
  check worker "the iperf3 image ($img) loaded on both nodes" eval "rk8s image load $tar >/dev/null && on_b $E2E_OPT/bin/rootless-k8s image load $tar >/dev/null" || return
  check worker "iperf3 servers: iperf-b on the worker, iperf-ref beside the client iperf-a on the first node" apply <<YAML || return
apiVersion: v1
kind: Pod
metadata: {name: iperf-a, namespace: e2e}
spec:
  nodeSelector: {kubernetes.io/hostname: $first}
  containers: [{name: iperf3, image: $img, imagePullPolicy: Never, args: ["-s"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: iperf-ref, namespace: e2e}
spec:
  nodeSelector: {kubernetes.io/hostname: $first}
  containers: [{name: iperf3, image: $img, imagePullPolicy: Never, args: ["-s"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: iperf-b, namespace: e2e}
spec:
  nodeSelector: {kubernetes.io/hostname: e2e-worker}
  containers: [{name: iperf3, image: $img, imagePullPolicy: Never, args: ["-s"]}]
YAML
  check worker "... all three Running" wait_for "$TIMEOUT" eval "phase_is iperf-a Running && phase_is iperf-ref Running && phase_is iperf-b Running" || return
  ipb=$(kc -n e2e get pod iperf-b -o 'jsonpath={.status.podIP}')
  ipr=$(kc -n e2e get pod iperf-ref -o 'jsonpath={.status.podIP}')
  for proto in tcp udp; do
    flags=()
    [ "$proto" = udp ] && flags=(-u -b 0)
    for key in cross same; do
      local to=$ipb
      [ "$key" = same ] && to=$ipr
      kc -n e2e exec iperf-a -- iperf3 -c "$to" -t "$t" -J "${flags[@]}" >"$STATE/iperf-$key-$proto.json" 2>>"$STATE/iperf3.log"
      R[$key-$proto]=$(iperf_gbps "$STATE/iperf-$key-$proto.json" 2>>"$STATE/iperf3.log") || R[$key-$proto]=
      check worker "iperf3 ${proto^^} for ${t} s from iperf-a to $to ($([ "$key" = cross ] && echo "the worker, across the overlay" || echo "the same node")): ${R[$key-$proto]:-failed} (Gbit/s${flags[*]:+, % lost})" \
        test -n "${R[$key-$proto]}"
    done
  done
  local ct=${R[cross-tcp]%% *} st=${R[same-tcp]%% *} cu=${R[cross-udp]%% *} su=${R[same-udp]%% *}
  if [ -n "$ct" ] && [ -n "$st" ] && [ -n "$cu" ] && [ -n "$su" ]; then
    local rt ru
    rt=$(awk -v a="$ct" -v b="$st" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
    ru=$(awk -v a="$cu" -v b="$su" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
    info worker "the overlay: TCP ${ct} Gbit/s across nodes vs ${st} on one node (ratio $rt); UDP ${cu} vs ${su} (ratio $ru; lost ${R[cross-udp]#* }% vs ${R[same-udp]#* }%)"
    report "{\"route\":\"$ROUTE\",\"overlay\":{\"seconds\":$t,\"tcpGbps\":{\"crossNode\":$ct,\"sameNode\":$st,\"ratio\":$rt},\"udpGbps\":{\"crossNode\":$cu,\"sameNode\":$su,\"ratio\":$ru,\"crossLostPercent\":${R[cross-udp]#* },\"sameLostPercent\":${R[same-udp]#* }}}}"
  fi
  kc -n e2e delete pod iperf-a iperf-ref iperf-b --wait=false >/dev/null 2>&1
}
# coredns_to NODE: CoreDNS pinned to NODE (a nodeSelector), Ready there. coredns_back FIRST: the
# template as installed (no nodeSelector) and its pod on FIRST: the worker cordoned meanwhile, so
# the rollout's new pod cannot land there.
coredns_to() {
  kc -n kube-system patch deploy coredns --type merge -p "{\"spec\":{\"template\":{\"spec\":{\"nodeSelector\":{\"kubernetes.io/hostname\":\"$1\"}}}}}" >/dev/null &&
    wait_for 120 coredns_on "$1"
}
coredns_back() {
  local rc=0
  kc cordon e2e-worker >/dev/null
  kc -n kube-system patch deploy coredns --type merge -p '{"spec":{"template":{"spec":{"nodeSelector":{"kubernetes.io/hostname":null}}}}}' >/dev/null
  wait_for 120 coredns_on "$1" || rc=1
  kc uncordon e2e-worker >/dev/null
  return "$rc"
}
scenario_worker() {
  local out token url hash rc log=$STATE/worker-join.log agn pod fpod ip t0 first np a_ip
  agn=$(image_name agnhost) || { fail worker "no agnhost image in $IMAGES/images.json"; return; }
  first=$(kc get nodes -o 'jsonpath={.items[0].metadata.name}')
  check worker "the control plane advertises its host's address (install --node-ip)" advertise_host || return
  a_ip=$(receipt_value '.plan.node.ip')
  out=$(rk8s token create --description "e2e worker" 2>/dev/null | tail -1)
  read -r token _ _ url _ hash <<<"$out"
  token=${token#ROOTLESS_K8S_TOKEN=}
  check worker "token create printed the join line ($url)" test -n "$hash" || return
  check worker "a second host (user $B_USER, its own user manager in network namespace $B_NS at 198.51.100.2)" second_host_up || return
  B_HOME=$(getent passwd "$B_USER" | cut -d: -f6)
  b_state_clean
  check worker "a mirror for the second host on this host's end of the link (198.51.100.1)" start_b_mirror || return
  b_join "${token%%.*}.ffffffffffffffff" "$url" "$hash" "$STATE/worker-badtoken.log"
  rc=$?
  check worker "a wrong token: join exit $rc (3), the token check named ($(grep -m1 '^error:' "$STATE/worker-badtoken.log"))" \
    test "$rc" = 3 -a -n "$(grep -l 'join-token' "$STATE/worker-badtoken.log")"
  check worker "... and nothing was written on the second host (no receipt, no unit, no config)" \
    test ! -e "$B_HOME/.local/share/rootless-k8s/receipt.json" -a ! -e "$B_HOME/.config/systemd/user/rootless-k8s.target" -a ! -e "$B_HOME/.config/rootless-k8s"
  b_join "$token" "$url" "sha256:$(printf '0%.0s' $(seq 64))" "$STATE/worker-badhash.log"
  rc=$?
  check worker "a wrong CA hash: join exit $rc (3), nothing written" test "$rc" = 3 -a ! -e "$B_HOME/.config/rootless-k8s"
  t0=$(ts)
  b_join "$token" "$url" "$hash" "$log"
  rc=$?
  check worker "the join line on the second host: exit $rc, $(grep -m1 'joined' "$log" | sed 's/^[^A-Za-z]*//') ($(elapsed "$t0") s)" test "$rc" = 0 || { tail -40 "$log" | sed 's/^/    | /'; b_rk8s logs kubelet -n 30 2>&1 | sed 's/^/    | /'; second_host_down; return; }
  check worker "join waited for the first node to answer through the overlay: $(grep -m1 'reach the other nodes' "$log" | sed 's/^[^A-Za-z]*//')" \
    grep -q "reach the other nodes' through the overlay (UDP 8472): $first " "$log"
  check worker "both Nodes are Ready with the real kubelet ($(kc get nodes -o 'jsonpath={range .items[*]}{.metadata.name}={.status.nodeInfo.kubeletVersion} {end}'))" \
    node_ready_is e2e-worker True
  node_ready_is "$first" True || fail worker "the first node $first is not Ready"
  ip=$(kc get node e2e-worker -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')
  check worker "the worker advertises its host's address, not its namespace's: InternalIP $ip" test "$ip" = 198.51.100.2
  check worker "its pod range comes from the controller-manager: $(kc get node e2e-worker -o 'jsonpath={.spec.podCIDR}') (the first node: $(kc get node "$first" -o 'jsonpath={.spec.podCIDR}'))" \
    test -n "$(kc get node e2e-worker -o 'jsonpath={.spec.podCIDR}')" -a "$(kc get node e2e-worker -o 'jsonpath={.spec.podCIDR}')" != "$(kc get node "$first" -o 'jsonpath={.spec.podCIDR}')"
  check worker "its kubelet client certificate came through TLS bootstrap (a CSR by system:bootstrap:${token%%.*}, AutoApproved)" \
    has "system:bootstrap:${token%%.*} AutoApproved" kc get csr -o 'jsonpath={range .items[*]}{.spec.username} {.status.conditions[0].reason}{"\n"}{end}'
  check worker "its kubelet serving certificate was approved by the control plane's approver (RootlessK8sApproved) and signed" wait_for 60 serving_csr_approved e2e-worker
  check worker "the join token's kubeconfig is gone from the worker once Ready" test ! -e "$B_HOME/.config/rootless-k8s/kubelet-bootstrap.kubeconfig"
  check worker "no key of the cluster on the worker: only the CA's certificate and the kubelet's own pair" \
    test -z "$(find "$B_HOME/.config/rootless-k8s/pki" -name '*.key' 2>/dev/null)"
  check worker "rootless-k8s status on the worker: exit 0" b_rk8s status
  check worker "the worker's own credential may delete no other Node (NodeRestriction): $(b_node_kubectl delete node "$first" --dry-run=server | tail -1 | cut -c1-140)" \
    has "not allowed to modify node \"$first\"" b_node_kubectl delete node "$first" --dry-run=server
  check worker "rootless-k8s image load on the worker (pause, agnhost, coredns)" b_rk8s image load "$IMAGES/pause.tar" "$IMAGES/agnhost.tar" "$IMAGES/coredns.tar"
  kc create namespace e2e >/dev/null 2>&1
  check worker "a pod scheduled on the worker (nodeSelector kubernetes.io/hostname: e2e-worker)" apply <<YAML || return
apiVersion: v1
kind: Pod
metadata: {name: on-worker, namespace: e2e, labels: {app: on-worker}}
spec:
  dnsConfig: {options: [{name: attempts, value: "1"}, {name: timeout, value: "2"}]}
  nodeSelector: {kubernetes.io/hostname: e2e-worker}
  containers:
  - name: web
    image: $agn
    imagePullPolicy: Never
    args: ["netexec", "--http-port=8080", "--udp-port=8081"]
YAML
  check worker "it runs there" wait_for "$TIMEOUT" phase_is on-worker Running
  pod=$(kc -n e2e get pod on-worker -o 'jsonpath={.status.podIP}')
  check worker "its IP $pod is of the worker's pod range" test "${pod%.*}" = "$(kc get node e2e-worker -o 'jsonpath={.spec.podCIDR}' | cut -d. -f1-3)"
  check worker "kubectl logs through the worker's kubelet (its published port, its approved serving certificate)" has "Started HTTP server" kc -n e2e logs on-worker
  check worker "kubectl exec through the worker's kubelet (the pod's hostname)" has "^on-worker$" kc -n e2e exec on-worker -- hostname
  # The pod network across the hosts: the overlay (VXLAN through RootlessKit's published UDP port).
  check worker "a pod on the first node ($first), and a ClusterIP Service and a NodePort Service for each pod" apply <<YAML || return
apiVersion: v1
kind: Pod
metadata: {name: on-first, namespace: e2e, labels: {app: on-first}}
spec:
  dnsConfig: {options: [{name: attempts, value: "1"}, {name: timeout, value: "2"}]}
  nodeSelector: {kubernetes.io/hostname: $first}
  containers:
  - name: web
    image: $agn
    imagePullPolicy: Never
    args: ["netexec", "--http-port=8080", "--udp-port=8081"]
---
apiVersion: v1
kind: Service
metadata: {name: on-first, namespace: e2e}
spec:
  selector: {app: on-first}
  ports: [{name: tcp, port: 80, targetPort: 8080}, {name: udp, port: 80, targetPort: 8081, protocol: UDP}]
---
apiVersion: v1
kind: Service
metadata: {name: on-worker, namespace: e2e}
spec:
  type: NodePort
  selector: {app: on-worker}
  ports: [{name: tcp, port: 80, targetPort: 8080}, {name: udp, port: 80, targetPort: 8081, protocol: UDP}]
YAML
  check worker "it runs there" wait_for "$TIMEOUT" phase_is on-first Running
  fpod=$(kc -n e2e get pod on-first -o 'jsonpath={.status.podIP}')
  check worker "the overlay's UDP port 8472 is published on both hosts while they are two ($a_ip, 198.51.100.2)" \
    wait_for 30 eval "udp_published - $a_ip && udp_published $B_NS 198.51.100.2"
  check worker "the first node's pod reaches the worker's pod by its IP $pod (across the hosts: $(from_pod on-first "http://$pod:8080/hostname"))" \
    wait_for 30 has "^on-worker$" from_pod on-first "http://$pod:8080/hostname"
  check worker "the worker's pod reaches the first node's pod by its IP $fpod ($(from_pod on-worker "http://$fpod:8080/hostname"))" \
    has "^on-first$" from_pod on-worker "http://$fpod:8080/hostname"
  check worker "... and that pod sees the worker's pod's own address as the client, no NAT between pods ($(from_pod on-worker "http://$fpod:8080/clientip"))" \
    has "^$pod:" from_pod on-worker "http://$fpod:8080/clientip"
  check worker "the first node's pod reaches the worker's pod through a ClusterIP Service ($(svc_ip on-worker))" \
    has "^on-worker$" from_pod on-first "http://$(svc_ip on-worker)/hostname"
  check worker "the worker's pod reaches the first node's pod through a ClusterIP Service ($(svc_ip on-first))" \
    has "^on-first$" from_pod on-worker "http://$(svc_ip on-first)/hostname"
  check worker "the worker's pod resolves a Service name through the cluster's DNS (CoreDNS on the first node)" \
    has "on-first.e2e.svc" kc -n e2e exec on-worker -- getent hosts on-first.e2e.svc.cluster.local
  # /readyz: anonymous requests reach the health endpoints only (and cluster-info), not /version.
  check worker "the worker's pod reaches the API server through the \`kubernetes\` Service (its endpoint: the control plane's host address $a_ip)" \
    wait_for 30 has '^ok$' from_pod on-worker "https://kubernetes.default.svc/readyz" -k
  np=$(kc -n e2e get service on-worker -o 'jsonpath={.spec.ports[0].nodePort}')
  check worker "the NodePort $np answers on the first host ($a_ip) with the worker's pod" wait_for 30 answers "http://$a_ip:$np/hostname" on-worker
  check worker "the NodePort $np answers on the second host (198.51.100.2), published by the worker's own publisher" \
    wait_for 30 answers "http://198.51.100.2:$np/hostname" on-worker
  cross_node_services "$a_ip" "$first"
  overlay_throughput "$first"
  out=$(b_rk8s upgrade --yes --manifest "$MANIFESTS/k8s-$V_UPGRADE.json" --mirror "http://198.51.100.1:$(cat "$STATE/b-mirror.port")" 2>&1)
  rc=$?
  check worker "the worker's upgrade to $V_UPGRADE refuses to pass the control plane's $V_INSTALL: exit $rc, $(grep -m1 refusing <<<"$out")" \
    test "$rc" = 3 -a -n "$(grep 'newer than its control plane' <<<"$out")"
  check worker "... and the worker still runs $V_INSTALL, Ready" node_ready_is e2e-worker True
  ip link set rk8s-e2e-a down
  t0=$(ts)
  sleep 30
  check worker "the link cut for 30 s: the worker's Node is still Ready (within Kubernetes' grace period, 50 s)" node_ready_is e2e-worker True
  check worker "the link still cut: the worker's Node goes NotReady (status Unknown)" wait_for 120 node_ready_is e2e-worker Unknown
  info worker "NotReady (Unknown) $(elapsed "$t0") s after the cut"
  ip link set rk8s-e2e-a up
  t0=$(ts)
  check worker "the link back: Ready again" wait_for 120 node_ready_is e2e-worker True
  info worker "Ready $(elapsed "$t0") s after the link came back"
  check worker "the first node stayed Ready meanwhile" node_ready_is "$first" True
  out=$(b_rk8s uninstall --yes 2>&1)
  rc=$?
  check worker "uninstall on the worker: exit $rc, drained and its Node deleted ($(grep -m1 'deleted from' <<<"$out" | sed 's/^ *//'))" \
    test "$rc" = 0 -a -n "$(grep 'Node e2e-worker deleted' <<<"$out")"
  printf '%s\n' "$out" | sed 's/^/    | /'
  check worker "the cluster has no Node e2e-worker any more" lacks e2e-worker kc get nodes -o name
  check worker "the pod that ran there was evicted" wait_for 60 lacks on-worker kc -n e2e get pods -o name
  check worker "the first node is still Ready" node_ready_is "$first" True
  check worker "no rootless-k8s unit is left on the second host" lacks rootless-k8s on_b systemctl --user list-units --all --no-legend 'rootless-k8s*'
  check worker "alone again, the first host no longer publishes the overlay's UDP port" wait_for 30 eval "! udp_published - $a_ip"
  kc -n e2e delete pod on-first --wait=false >/dev/null 2>&1
  kc -n e2e delete service on-first on-worker >/dev/null 2>&1
  worker_down worker
}

# worker_up SCOPE: the second host's node joins this control plane as worker e2e-worker, with every
# image this route has (the node's and the conformance suite's) loaded there too, and stays: the
# conformance scenario runs its multinode list on the two nodes. worker_down SCOPE undoes it.
worker_up() {
  local scope=$1 out token url hash rc log=$STATE/$1-worker-join.log imgs=() f
  check "$scope" "the control plane advertises its host's address (install --node-ip)" advertise_host || return 1
  out=$(rk8s token create --description "e2e $scope" 2>/dev/null | tail -1)
  read -r token _ _ url _ hash <<<"$out"
  token=${token#ROOTLESS_K8S_TOKEN=}
  check "$scope" "token create printed the join line ($url)" test -n "$hash" || return 1
  check "$scope" "a second host (user $B_USER, network namespace $B_NS at 198.51.100.2)" second_host_up || return 1
  B_HOME=$(getent passwd "$B_USER" | cut -d: -f6)
  b_state_clean
  check "$scope" "a mirror for the second host (198.51.100.1)" start_b_mirror || return 1
  b_join "$token" "$url" "$hash" "$log"
  rc=$?
  check "$scope" "the second host joins as worker e2e-worker: exit $rc ($log)" test "$rc" = 0 || { tail -30 "$log" | sed 's/^/    | /'; return 1; }
  check "$scope" "both Nodes are Ready" wait_for 60 node_ready_is e2e-worker True || return 1
  for f in "$IMAGES"/*.tar "$CONF"/images/*.tar; do [ -e "$f" ] && imgs+=("$f"); done
  check "$scope" "rootless-k8s image load on the worker (${#imgs[@]} archives)" b_rk8s image load "${imgs[@]}"
}
worker_down() {
  local scope=$1
  if [ -n "$B_HOME" ] && [ -e "$B_HOME/.local/share/rootless-k8s/receipt.json" ]; then
    check "$scope" "uninstall on the worker: drained and its Node deleted" b_rk8s uninstall --yes
    # Its kubelet stops before the Node is deleted: a running one registered it anew (issue 44's run).
    check "$scope" "the cluster has no Node e2e-worker after the worker's uninstall" lacks e2e-worker kc get nodes -o name
  fi
  stop_b_mirror
  b_state_clean
  second_host_down
  check "$scope" "install without --node-ip: the first node back to its namespace's address" unadvertise_host
}
