# shellcheck shell=bash
# A shared host (issue 40): two users, each with a user manager of their own, on this host's one
# network stack, install with the defaults at the same moment and both end Ready; neither reads the
# other's files or gets into the other's API server; a NodePort both ask for is served for one and
# reported for the other; one purge leaves the other's node as it was.
# Sourced by test/e2e/scenarios.sh after lib/scenario-lib.sh and scenarios/multinode.sh (the second
# user $B_USER and its helpers: b_pid, on_b, b_state_clean, b_manager_down, second_host_down).
# shellcheck disable=SC2317,SC2034,SC2153 # functions called by name; globals shared across the files

SH_NP=30444 # the NodePort both users ask for
# The second user's manager on the host's own network stack (not the worker's namespace).
shared_b_up() {
  second_host_down
  if [ "$ROUTE" = host ]; then
    E2E_USER=$B_USER E2E_NETNS='' bash "$HERE/host-env.sh" up >/dev/null || return
    b_pid >/dev/null || { echo "no user manager for $B_USER" >&2; return 1; }
    return
  fi
  E2E_USER=$B_USER ensure_test_user || return
  systemctl start "user@$(id -u "$B_USER").service" || return
  wait_for 60 b_running || { echo "the user manager of $B_USER is not running" >&2; return 1; }
}
b_share() { echo "$B_HOME/.local/share/rootless-k8s"; }
b_config() { echo "$B_HOME/.config/rootless-k8s"; }
b_kc() { on_b "$(b_share)/versions/current/bin/kubectl" --kubeconfig "$(b_config)/admin.kubeconfig" "$@"; }
api_port_of() { sed -n 's|^ *server: https://127.0.0.1:\([0-9]*\)$|\1|p' "$1" | head -1; }
# refused_by KUBECONFIG PORT RUNNER KUBECTL: the kubeconfig's client certificate, sent to the API
# server on PORT (the client's CA check skipped, so that the server decides): refused with 401
# ("Unauthorized"; kubectl 1.36 words it "the server has asked for the client to provide credentials").
refused_by() {
  local kc=$1 port=$2 run=$3 kubectl=$4 tmp out
  tmp=$($run mktemp -d) || return
  $run sh -c "sed -e '/certificate-authority-data:/d' -e 's|^\\( *\\)server: https://127.0.0.1:[0-9]*\$|\\1server: https://127.0.0.1:$port\\n\\1insecure-skip-tls-verify: true|' '$kc' >'$tmp/kc'"
  out=$($run "$kubectl" --kubeconfig "$tmp/kc" get nodes 2>&1)
  $run rm -rf "$tmp"
  tail -1 <<<"$out"
  grep -Eq "Unauthorized|asked for the client to provide credentials" <<<"$out"
}
a_run() { as_user "$@"; }
cannot_read() { [ -f "$2" ] && ! "$1" cat "$2" >/dev/null 2>&1; } # cannot_read RUNNER FILE: it exists, and RUNNER cannot read it
cannot_list() { [ -d "$2" ] && ! "$1" ls "$2" >/dev/null 2>&1; }
np_pod() { # np_pod NAME: a netexec pod and a NodePort Service on $SH_NP
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default, labels: {app: $1}}
spec:
  containers:
  - name: web
    image: $(image_name agnhost)
    imagePullPolicy: Never
    args: ["netexec", "--http-port=8080"]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: shared, namespace: default}
spec:
  type: NodePort
  selector: {app: $1}
  ports: [{port: 80, targetPort: 8080, nodePort: $SH_NP}]
YAML
}
np_answer() { "$E2E_OPT/node" -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(5000) }).then((r) => r.text()).then((t) => process.stdout.write(t), () => process.exit(1))' "http://127.0.0.1:$SH_NP/hostname"; }
answers_as() { [ "$(np_answer 2>/dev/null)" = "$1" ]; }
failed_event() { "$@" get events -n default --field-selector involvedObject.name=shared -o 'jsonpath={range .items[*]}{.reason} {.message}{"\n"}{end}' 2>/dev/null | grep PortPublishFailed; }

scenario_shared_host() {
  local la=$STATE/shared-a.log lb=$STATE/shared-b.log pa pb ra rb bu fa fb pssa pssb moved f
  check shared-host "a second user ($B_USER) with a user manager of its own, on this host's network stack" shared_b_up || return
  B_HOME=$(getent passwd "$B_USER" | cut -d: -f6)
  bu=$(id -u "$B_USER")
  b_state_clean
  # Both at the same moment, with the defaults: each reads 6443 free, one claims it first.
  rk8s install "${FLAGS[@]}" >"$la" 2>&1 &
  pa=$!
  b_rk8s install "${FLAGS[@]}" >"$lb" 2>&1 &
  pb=$!
  wait "$pa"
  ra=$?
  wait "$pb"
  rb=$?
  check shared-host "$E2E_USER's install, started at the same moment: exit $ra" test "$ra" = 0 || tail -20 "$la" | sed 's/^/    | /'
  check shared-host "$B_USER's install, started at the same moment: exit $rb" test "$rb" = 0 || tail -20 "$lb" | sed 's/^/    | /'
  if [ "$ra" != 0 ] || [ "$rb" != 0 ]; then shared_host_down; return; fi
  fa=$(api_port_of "$CONFIG/admin.kubeconfig")
  fb=$(api_port_of "$(b_config)/admin.kubeconfig")
  moved=$(grep -h -m1 'Which port should the API server' "$la" "$lb")
  check shared-host "two API ports ($E2E_USER $fa, $B_USER $fb); the second install said so: ${moved:-nothing}" test -n "$fa" -a -n "$fb" -a "$fa" != "$fb" -a -n "$moved"
  check shared-host "$E2E_USER's node is Ready" wait_for 60 has ' Ready ' kc get nodes
  check shared-host "$B_USER's node is Ready" wait_for 60 has ' Ready ' b_kc get nodes

  # Each one's files and sockets are its own.
  check shared-host "$E2E_USER cannot read $B_USER's kubeconfig" cannot_read a_run "$(b_config)/admin.kubeconfig"
  check shared-host "$B_USER cannot read $E2E_USER's kubeconfig" cannot_read on_b "$CONFIG/admin.kubeconfig"
  check shared-host "$E2E_USER cannot read $B_USER's keys ($(b_config)/pki/sa.key)" cannot_read a_run "$(b_config)/pki/sa.key"
  check shared-host "$B_USER cannot read $E2E_USER's keys" cannot_read on_b "$CONFIG/pki/sa.key"
  check shared-host "$E2E_USER cannot reach $B_USER's sockets (/run/user/$bu is 0700)" cannot_list a_run "/run/user/$bu/rootless-k8s"
  check shared-host "$B_USER's API server refuses $E2E_USER's credentials" refused_by "$CONFIG/admin.kubeconfig" "$fb" a_run "$SHARE/versions/current/bin/kubectl"
  check shared-host "$E2E_USER's API server refuses $B_USER's credentials" refused_by "$(b_config)/admin.kubeconfig" "$fa" on_b "$(b_share)/versions/current/bin/kubectl"

  # The same NodePort for both: served for the one that publishes first, reported for the other.
  local imgs=()
  for f in "$IMAGES"/*.tar; do imgs+=("$f"); done
  check shared-host "image load on $E2E_USER's node" rk8s image load "${imgs[@]}"
  check shared-host "image load on $B_USER's node" b_rk8s image load "${imgs[@]}"
  np_pod web-a | kc apply -f - >/dev/null
  check shared-host "$E2E_USER's NodePort $SH_NP answers on the host" wait_for 90 answers_as web-a
  np_pod web-b | b_kc apply -f - >/dev/null
  check shared-host "$B_USER's pod is Running" wait_for 90 has Running b_kc get pod web-b
  check shared-host "$B_USER's Service gets the Event PortPublishFailed ($(failed_event b_kc | head -1))" wait_for 30 failed_event b_kc
  check shared-host "$B_USER's status names the port it could not publish" has "not published: tcp/$SH_NP for Service default/shared" b_rk8s status
  check shared-host "the port still answers for $E2E_USER" answers_as web-a
  # Running is not Ready: the Service has its endpoint once the pod's readiness probe (every 2 s) passed.
  check shared-host "$B_USER's Service works inside its cluster" wait_for 30 has web-b b_kc get --raw /api/v1/namespaces/default/services/shared:80/proxy/hostname

  pssa=$(pss_mib_of "$U")
  pssb=$(pss_mib_of "$bu")
  info shared-host "PSS: $E2E_USER's node $pssa MiB, $B_USER's $pssb MiB (with one pod each)"
  report "{\"route\":\"$ROUTE\",\"sharedHost\":{\"apiPorts\":[$fa,$fb],\"pssMiB\":{\"$E2E_USER\":$pssa,\"$B_USER\":$pssb},\"nodePortServedFor\":\"$E2E_USER\"}}"

  # One purge leaves the other's node, files and published ports as they were.
  receipt_files_stamp >"$STATE/shared-a.files"
  rkctl list-ports | awk 'NR > 1' | sort >"$STATE/shared-a.ports"
  check shared-host "$B_USER's uninstall --purge" b_rk8s uninstall --purge --yes
  check shared-host "$E2E_USER's node is still Ready" has ' Ready ' kc get nodes
  check shared-host "$E2E_USER's files are as they were (inode and mtime of every receipt file)" diff <(receipt_files_stamp) "$STATE/shared-a.files"
  check shared-host "$E2E_USER's published ports are as they were" diff <(rkctl list-ports | awk 'NR > 1' | sort) "$STATE/shared-a.ports"
  check shared-host "$E2E_USER's NodePort still answers" answers_as web-a
  check shared-host "nothing of $B_USER's node is left running" test -z "$(pgrep -u "$bu" -f 'rootlesskit|kube-apiserver|kubelet|etcd|containerd')"

  # A port another user takes while the node is stopped: start names the holder; install moves on.
  local holder lr=$STATE/shared-restart.log li=$STATE/shared-resume.log fn
  check shared-host "$E2E_USER's stop" rk8s stop
  # (SO_REUSEADDR: the stopped node's connections may linger in TIME_WAIT on the port)
  on_b python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(900)' "$fa" &
  holder=$!
  check shared-host "$B_USER listens on $fa now" wait_for 10 sh -c "awk '\$2 ~ /:$(printf '%04X' "$fa")\$/ && \$4 == \"0A\" && \$8 == $bu' /proc/net/tcp | grep -q ."
  rk8s start --timeout 120 >"$lr" 2>&1
  check shared-host "start with $fa taken by $B_USER fails naming the port and its holder: $(grep -m1 '^error:' "$lr")" grep -q "^error: RootlessKit could not publish the API server on 127.0.0.1:$fa: $B_USER (uid $bu) holds that port" "$lr"
  check shared-host "its fix is the install that moves on" grep -q "^fix: re-run \`rootless-k8s install\`: it moves the API server to a free port" "$lr"
  check shared-host "install (resumed) with $fa still taken by $B_USER: exit 0" install_to "$li" "${FLAGS[@]}"
  fn=$(api_port_of "$CONFIG/admin.kubeconfig")
  check shared-host "the question named the holder: $(grep -m1 'Which port' "$li")" grep -q "Port $fa is taken by $B_USER (uid $bu)\. Which port should the API server be published on? -> $fn (not asked)" "$li"
  check shared-host "the node is Ready on $fn" has ' Ready ' kc get nodes
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
  shared_host_down
}
shared_host_down() {
  pkill -u "$(id -u "$B_USER")" -f 'time.sleep\(900\)' 2>/dev/null
  rk8s uninstall --purge --yes >/dev/null 2>&1
  b_state_clean
  b_manager_down
}
