# shellcheck shell=bash
# Workloads on the node: pods, Services, cluster DNS, storage, metrics, resource limits (issue 37: one file per scenario group).
# Sourced by test/e2e/scenarios.sh after lib/scenario-lib.sh; its scenarios run by name.
# shellcheck disable=SC2317,SC2034,SC2153 # functions called by name; globals shared across the files

# A Deployment of two replicas of agnhost's netexec reaches Running; kubectl logs, exec and
# port-forward work against it.
scenario_workloads() {
  local agn bb
  if ! agn=$(image_name agnhost) || ! bb=$(image_name busybox); then fail workloads "no agnhost/busybox image in $IMAGES/images.json"; return; fi
  kc create namespace e2e >/dev/null 2>&1
  check workloads "kubectl apply: Deployment web (2 replicas of $agn netexec) and a busybox client pod" apply <<YAML || return
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
      - name: web
        image: $agn
        imagePullPolicy: Never
        args: ["netexec", "--http-port=8080"]
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: e2e}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 1000}
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: c
    image: $bb
    imagePullPolicy: Never
    command: ["sh", "-c", "echo written by uid 1000 > /data/by-1000; exec sleep 86400"]
    volumeMounts: [{name: data, mountPath: /data}]
YAML
  check workloads "the Deployment's 2 replicas are available (kubectl rollout status)" kc -n e2e rollout status deploy/web --timeout="${TIMEOUT}s"
  check workloads "the client pod is Running" wait_for "$TIMEOUT" phase_is client Running
  local running
  running=$(kc -n e2e get pods -l app=web -o 'jsonpath={range .items[*]}{.status.phase}{" "}{.status.podIP}{"\n"}{end}' 2>&1)
  info workloads "web pods: $(tr '\n' ';' <<<"$running")"
  check workloads "both replicas Running with pod IPs" test "$(grep -c '^Running [0-9]' <<<"$running")" = 2
  check workloads "kubectl logs shows netexec's start" logs_show_netexec
  local out
  out=$(kc -n e2e exec client -- sh -c 'id -u; cat /proc/1/cmdline | tr "\0" " "' 2>&1)
  check workloads "kubectl exec runs in the container as its uid 1000 (uid/cmdline: $(tr '\n' ' ' <<<"$out"))" grep -qz "^1000.sleep 86400" <<<"$out"
  local pf=$SCRATCH/port-forward.log port=18080
  as_user "$SHARE/versions/current/bin/kubectl" --kubeconfig "$CONFIG/admin.kubeconfig" -n e2e port-forward deploy/web "$port:8080" >"$pf" 2>&1 &
  local pfpid=$!
  wait_for 30 grep -q "Forwarding from" "$pf"
  out=$(as_user "$E2E_OPT/node" -e 'fetch(process.argv[1]).then((r) => r.text()).then((t) => console.log(t), (e) => { console.log(String(e)); process.exit(1); })' "http://127.0.0.1:$port/hostname" 2>&1)
  kill "$pfpid" 2>/dev/null
  wait "$pfpid" 2>/dev/null
  check workloads "kubectl port-forward: 127.0.0.1:$port on the host reaches a replica (/hostname: $out)" grep -q '^web-' <<<"$out"
}

# A ClusterIP Service answers from another pod, through the real kube-proxy in the namespace.
scenario_services() {
  check services "kubectl apply: ClusterIP Service web (80 -> 8080)" apply <<YAML || return
apiVersion: v1
kind: Service
metadata: {name: web, namespace: e2e}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
YAML
  local ip out seen=""
  ip=$(kc -n e2e get svc web -o 'jsonpath={.spec.clusterIP}')
  # (No wget -T: Debian 12's busybox-static 1.35 segfaults with it; the timeout applet bounds each try.)
  info services "Service web has ClusterIP $ip (service CIDR $(receipt_value .plan.cidrs.services))"
  for _ in $(seq 1 60); do
    out=$(kc -n e2e exec client -- timeout 5 wget -qO- "http://$ip/hostname" 2>&1) && [[ $out == web-* ]] && break
    sleep 1
  done
  check services "the client pod reaches the Service's ClusterIP $ip:80 -> a replica ($out)" grep -q '^web-' <<<"$out"
  # Several requests: kube-proxy spreads them over both replicas.
  for _ in $(seq 1 20); do seen+="$(kc -n e2e exec client -- timeout 5 wget -qO- "http://$ip/hostname" 2>/dev/null) "; done
  check services "requests through the Service reach both replicas ($(tr ' ' '\n' <<<"$seen" | sort -u | tr '\n' ' '))" test "$(tr ' ' '\n' <<<"$seen" | grep '^web-' | sort -u | wc -l)" = 2
  # What kube-proxy does not translate must not leave the namespace through the network driver (this
  # machine's network even accepts it): a port the Service lacks is refused (kube-proxy's nftables
  # mode rejects it, the child script's guard in iptables mode), and so, in iptables mode, is an
  # address of the range no Service holds (nftables mode drops it).
  out=$(kc -n e2e exec client -- timeout 5 wget -qO- "http://$ip:81/" 2>&1)
  check services "a port Service web does not have ($ip:81) is refused inside the node ($out)" grep -q "Connection refused" <<<"$out"
  local unheld mode
  mode=$(receipt_value .plan.proxy.mode)
  unheld=$(receipt_value .plan.cidrs.services | sed 's|\.[0-9]*/.*|.7|')
  if kc get svc -A -o 'jsonpath={..clusterIP}' | tr ' ' '\n' | grep -qx "$unheld"; then unheld=${unheld%.7}.8; fi
  local rc=0
  out=$(kc -n e2e exec client -- timeout 5 wget -qO- "http://$unheld:80/" 2>&1) || rc=$?
  if [ "$mode" = iptables ]; then
    check services "an address no Service holds ($unheld:80) is refused inside the node ($out)" grep -q "Connection refused" <<<"$out"
  else
    check services "an address no Service holds ($unheld:80) does not connect (kube-proxy $mode drops it; exit $rc: $out)" test "$rc" -ne 0
  fi
}

# Cluster DNS: the dns add-on's CoreDNS (the image built from its Go module and loaded, pinned by
# digest in the e2e manifest) answers at the plan's address; pods resolve Service names.
coredns_available() { [ "$(kc -n kube-system get deploy coredns -o 'jsonpath={.status.availableReplicas}' 2>/dev/null)" = 1 ]; }
client_resolves() { # client_resolves NAME IP: busybox nslookup through the pod's resolv.conf gives IP
  kc -n e2e exec client -- timeout 5 nslookup "$1" 2>/dev/null | grep -q "Address.*[^0-9]$2\($\|[^0-9]\)"
}
scenario_dns() {
  local dns_ip svc_ip image first out
  dns_ip=$(receipt_value .plan.addons.dns.serviceIP)
  image=$(receipt_value .plan.addons.dns.image.ref)
  check dns "the CoreDNS Deployment is available (image $image)" wait_for 300 coredns_available || {
    kc -n kube-system get pods -o wide 2>&1 | sed 's/^/    | /'
    return
  }
  check dns "the kube-dns Service holds the plan's address $dns_ip" test "$(kc -n kube-system get svc kube-dns -o 'jsonpath={.spec.clusterIP}')" = "$dns_ip"
  check dns "the running CoreDNS is the pinned image ($(kc -n kube-system get pods -l k8s-app=kube-dns -o 'jsonpath={.items[0].spec.containers[0].image}'))" \
    test "$(kc -n kube-system get pods -l k8s-app=kube-dns -o 'jsonpath={.items[0].spec.containers[0].image}')" = "$image"
  out=$(kc -n e2e exec client -- cat /etc/resolv.conf 2>&1)
  check dns "a pod's resolv.conf names it, with the cluster's search path ($(tr '\n' ';' <<<"$out"))" grep -q "nameserver $dns_ip" <<<"$out"
  svc_ip=$(kc -n e2e get svc web -o 'jsonpath={.spec.clusterIP}')
  check dns "web.e2e.svc.cluster.local resolves to the Service's ClusterIP $svc_ip" wait_for 60 client_resolves web.e2e.svc.cluster.local "$svc_ip"
  first=$(receipt_value .plan.cidrs.firstServiceIP)
  check dns "kubernetes.default.svc.cluster.local resolves to the API server's Service address $first" client_resolves kubernetes.default.svc.cluster.local "$first"
  out=$(kc -n e2e exec client -- timeout 5 wget -qO- http://web/hostname 2>&1)
  check dns "the client reaches http://web/hostname by the Service's short name ($out)" grep -q '^web-' <<<"$out"
  check dns "status shows the add-on ready" has 'add-on dns .*ready, 1/1' rk8s status
}

# Storage: the storage add-on's default StorageClass (local-path-provisioner built from its Go
# module, its helper the busybox image) gives a claim a folder below the node's data; a pod's
# files there belong to the user's subordinate ids; deleting the claim removes the folder.
provisioner_available() { [ "$(kc -n local-path-storage get deploy local-path-provisioner -o 'jsonpath={.status.availableReplicas}' 2>/dev/null)" = 1 ]; }
pvc_bound() { [ "$(kc -n e2e get pvc data -o 'jsonpath={.status.phase}' 2>/dev/null)" = Bound ]; }
vol_written() { has '^stored$' kc -n e2e logs vol; }
scenario_storage() {
  local bb pv path start want got
  bb=$(image_name busybox) || { fail storage "no busybox image"; return; }
  check storage "local-path is the default StorageClass" \
    test "$(kc get storageclass local-path -o 'jsonpath={.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}' 2>&1)" = true
  check storage "the provisioner is available ($(receipt_value .plan.addons.storage.image.ref))" wait_for 300 provisioner_available || {
    kc -n local-path-storage get pods -o wide 2>&1 | sed 's/^/    | /'
    return
  }
  check storage "kubectl apply: a claim of the default class, and a pod (uid 1000) that writes to it" apply <<YAML || return
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: e2e}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 16Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: vol, namespace: e2e}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 1000}
  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]
  containers:
  - name: c
    image: $bb
    imagePullPolicy: Never
    command: ["sh", "-c", "echo hello > /d/hello && echo stored && exec sleep 86400"]
    volumeMounts: [{name: d, mountPath: /d}]
YAML
  check storage "the claim is Bound" wait_for "$TIMEOUT" pvc_bound || { kc -n e2e describe pvc data 2>&1 | tail -8 | sed 's/^/    | /'; return; }
  check storage "the pod wrote to its volume" wait_for "$TIMEOUT" vol_written
  pv=$(kc -n e2e get pvc data -o 'jsonpath={.spec.volumeName}')
  path=$(kc get pv "$pv" -o 'jsonpath={.spec.hostPath.path}')
  check storage "the volume is a folder below the node's data: $path" test "${path#"$(receipt_value .plan.addons.storage.path)"/}" != "$path"
  IFS=: read -r _ start _ < <(grep "^$E2E_USER:" /etc/subuid | head -1)
  want=$((start + 999))
  got=$(stat -c %u "$path/hello" 2>&1)
  check storage "the file the pod wrote as uid 1000 is on the host, owned by subordinate id $want ($got)" test "$got" = "$want"
  kc -n e2e delete pod vol --wait=true >/dev/null 2>&1
  kc -n e2e delete pvc data --wait=true >/dev/null 2>&1
  check storage "deleting the claim removes its folder (reclaim policy Delete)" wait_for 120 test ! -e "$path"
}

# Metrics: the metrics add-on's metrics-server (built from its Go module, pinned by digest) serves
# metrics.k8s.io through the aggregation layer (front-proxy CA, requestheader flags), reading the
# kubelet over TLS verified with the cluster CA. kubectl top nodes answers in both modes; kubectl top
# pods answers in mode delegated, and in mode none answers as the plan says (figures: nodes).
metrics_server_available() { [ "$(kc -n kube-system get deploy metrics-server -o 'jsonpath={.status.availableReplicas}' 2>/dev/null)" = 1 ]; }
top_nodes() { has "^$(receipt_value .plan.node.name)  *[0-9][0-9]*m  *[0-9][0-9]*%  *[0-9][0-9]*Mi  *[0-9][0-9]*%" kc top nodes --no-headers; }
# shared_memory_figures TOP: two pods or more, and their memory figures within 5% of each other.
shared_memory_figures() { awk '{ m = $3 + 0; if (NR == 1 || m > hi) hi = m; if (NR == 1 || m < lo) lo = m } END { exit !(NR >= 2 && hi > 0 && (hi - lo) * 20 <= hi) }' <<<"$1"; }
top_pod_client() { has '^client  *[0-9][0-9]*m  *[0-9][0-9]*Mi' kc -n e2e top pods --no-headers; }
scenario_metrics() {
  local figures out
  figures=$(receipt_value .plan.addons.metrics.figures)
  check metrics "the metrics-server Deployment is available ($(receipt_value .plan.addons.metrics.image.ref))" wait_for 300 metrics_server_available || {
    kc -n kube-system get pods -l k8s-app=metrics-server -o wide 2>&1 | sed 's/^/    | /'
    kc -n kube-system logs deploy/metrics-server --tail=20 2>&1 | sed 's/^/    | /'
    return
  }
  check metrics "the APIService v1beta1.metrics.k8s.io is Available (the aggregation layer reaches it)" \
    test "$(kc get apiservice v1beta1.metrics.k8s.io -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}')" = True
  check metrics "kubectl top nodes answers with the node's CPU and memory" wait_for 120 top_nodes || {
    kc top nodes 2>&1 | sed 's/^/    | /'
    kc -n kube-system logs deploy/metrics-server --tail=20 2>&1 | sed 's/^/    | /'
  }
  out=$(kc top nodes --no-headers 2>&1)
  info metrics "kubectl top nodes: $out"
  if [ "$figures" = nodes-and-pods ]; then
    check metrics "kubectl top pods answers for the client pod (mode $MODE)" wait_for 120 top_pod_client || kc -n e2e top pods 2>&1 | sed 's/^/    | /'
  else
    wait_for 120 top_pod_client
    out=$(kc -n e2e top pods --no-headers 2>&1)
    check metrics "mode $MODE: kubectl top pods shows no pod's own figure, as the plan says (figures: $figures): every pod has the memory of the one cgroup they share ($(awk '{ print $1, $3 }' <<<"$out" | tr '\n' ';'))" \
      shared_memory_figures "$out"
    check metrics "doctor names per-pod metrics among what mode none gives up" doctor_gives_up 'no per-pod metrics'
  fi
  check metrics "status shows the add-on ready" has 'add-on metrics .*ready, 1/1' rk8s status
}

# Limits: in mode delegated a pod's cgroup carries memory.max and cpu.max and exceeding the memory
# limit OOM-kills it; in mode none it runs unlimited, which is what doctor says none gives up.
scenario_limits() {
  local bb
  bb=$(image_name busybox) || { fail limits "no busybox image"; return; }
  kc create namespace e2e >/dev/null 2>&1
  check limits "kubectl apply: pod limits (memory 64Mi, cpu 250m) and pod hog (memory 32Mi, allocates ~100 MB)" apply <<YAML || return
apiVersion: v1
kind: Pod
metadata: {name: limits, namespace: e2e}
spec:
  containers:
  - name: c
    image: $bb
    imagePullPolicy: Never
    command: ["sleep", "86400"]
    resources: {limits: {memory: 64Mi, cpu: 250m}}
---
apiVersion: v1
kind: Pod
metadata: {name: hog, namespace: e2e}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: $bb
    imagePullPolicy: Never
    command: ["sh", "-c", "x=\$(head -c 100000000 /dev/zero | tr '\\\\0' a); echo survived \${#x} bytes"]
    resources: {limits: {memory: 32Mi}}
YAML
  check limits "the limits pod is Running" wait_for "$TIMEOUT" phase_is limits Running
  local mem cpu reason qos uid parent qos_dirs
  qos=$(kc -n e2e get pod limits -o 'jsonpath={.status.qosClass}' 2>&1)
  uid=$(kc -n e2e get pod limits -o 'jsonpath={.metadata.uid}' 2>&1)
  parent=$(pod_cgroup_parent "$uid")
  qos_dirs=$(qos_cgroups)
  check limits "the limits pod (limits alone: its requests default to them) is of QoS class Guaranteed: $qos" test "$qos" = Guaranteed
  mem=$(kc -n e2e exec limits -- cat /sys/fs/cgroup/memory.max 2>&1)
  cpu=$(kc -n e2e exec limits -- cat /sys/fs/cgroup/cpu.max 2>&1)
  wait_for "$TIMEOUT" hog_done
  reason=$(kc -n e2e get pod hog -o 'jsonpath={.status.containerStatuses[0].state.terminated.reason}' 2>&1)
  if [ "$MODE" = delegated ]; then
    check limits "the pod's cgroup carries memory.max = 67108864 (64Mi): $mem" test "$mem" = 67108864
    check limits "the pod's cgroup carries cpu.max = 25000 100000 (250m): $cpu" test "$cpu" = "25000 100000"
    check limits "exceeding its 32Mi memory limit OOM-kills the hog (reason: $reason)" test "$reason" = OOMKilled
    check limits "the Guaranteed pod's own cgroup sits directly in the kubelet's kubepods cgroup (its parent: ${parent:-no pod cgroup found})" \
      test "${parent%.slice}" = kubepods
    check limits "the kubelet's Burstable QoS cgroup exists (QoS cgroups: $(awk -F/ '{ print $NF }' <<<"$qos_dirs" | sort | paste -sd' '))" qos_tier burstable "$qos_dirs"
    check limits "the kubelet's BestEffort QoS cgroup exists" qos_tier besteffort "$qos_dirs"
  else
    check limits "mode none: no memory.max is enforced in the pod's view ($(head -c 60 <<<"$mem"))" no_number "$mem"
    local log
    log=$(kc -n e2e logs hog 2>&1)
    check limits "mode none: the hog ran past its 32Mi limit unharmed, as doctor says none gives up per-pod limits (reason: $reason; log: $log)" \
      test "$reason|$log" = "Completed|survived 100000000 bytes"
    check limits "doctor names per-pod limits among what mode none gives up" doctor_gives_up 'per-pod.*limit'
    check limits "mode none: no QoS cgroup anywhere under /sys/fs/cgroup, and no cgroup of the Guaranteed pod's own ($(head -3 <<<"$qos_dirs" | paste -sd' ')${parent:+; pod cgroup in $parent})" \
      test -z "$qos_dirs$parent"
    check limits "doctor names QoS cgroups among what mode none gives up" doctor_gives_up 'no QoS cgroups'
  fi
  kc -n e2e delete pod hog --wait=false >/dev/null 2>&1
}

# A full node (issue 45): as many pods as the kubelet allows (its allocatable pods, 110 by default)
# on a stock kernel, three times over. The keys the user's uid holds (/proc/key-users, against
# kernel.keys.maxkeys: 200 for a user who is not root) stay near their baseline, since containers
# keep the node's own session keyring; before that, about 97 pods was the ceiling.
keys_used() { awk -v u="$U:" '$1 == u { split($4, q, "/"); print q[1]; f = 1 } END { if (!f) print 0 }' /proc/key-users; }
keys_max() { awk -v u="$U:" '$1 == u { split($4, q, "/"); print q[2] }' /proc/key-users; }
# The user's PSS in MiB: every process of the test user (the node's, the pods').
user_pss_mib() { pss_mib_of "$U"; }
# What the user's processes hold of the per-user limits a full node meets (#45): "threads fds
# inotify-instances inotify-watches", summed over every process of the test user (as root).
user_counts() {
  python3 - "$U" <<'PY'
import os, sys
uid = int(sys.argv[1]); th = fd = ii = iw = 0
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        if os.stat(f"/proc/{p}").st_uid != uid: continue
        th += int(next(l for l in open(f"/proc/{p}/status") if l.startswith("Threads:")).split()[1])
        for f in os.listdir(f"/proc/{p}/fd"):
            fd += 1
            if os.readlink(f"/proc/{p}/fd/{f}") == "anon_inode:inotify":
                ii += 1
                iw += sum(1 for l in open(f"/proc/{p}/fdinfo/{f}") if l.startswith("inotify wd:"))
    except (OSError, StopIteration):
        pass
print(th, fd, ii, iw)
PY
}
node_pods() { kc get pods -A --field-selector "spec.nodeName=$1" -o name 2>/dev/null | grep -c .; }
scale_available() { [ "$(kc -n e2e-scale get deploy fill -o 'jsonpath={.status.availableReplicas}' 2>/dev/null)" = "$1" ]; }
scale_gone() { ! kc -n e2e-scale get pods -o name 2>/dev/null | grep -q .; }
# The waiting reasons of the fill pods that are not running, counted (RunContainerError, ...).
scale_failures() { kc -n e2e-scale get pods -o 'jsonpath={range .items[*]}{.status.containerStatuses[0].state.waiting.reason}{"\n"}{end}' | grep -v '^$\|^ContainerCreating$' | sort | uniq -c | tr -s ' \n' ' '; }

scenario_scale() {
  local node max have n bb keys0 max_keys pss0 pss1 t0 secs i times=() keys_peak=0 k c0 c1
  node=$(receipt_value .plan.node.name)
  bb=$(image_name busybox) || { fail scale "no busybox image"; return; }
  max=$(kc get node "$node" -o 'jsonpath={.status.allocatable.pods}')
  kc delete namespace e2e-scale --wait=true >/dev/null 2>&1
  kc create namespace e2e-scale >/dev/null
  have=$(node_pods "$node")
  n=$((max - have))
  keys0=$(keys_used)
  max_keys=$(keys_max)
  pss0=$(user_pss_mib)
  c0=$(user_counts)
  info scale "the node allows $max pods and runs $have: filling it with $n; the user's keys $keys0 of ${max_keys:-?} (kernel.keys.maxkeys), PSS $pss0 MiB"
  for i in 1 2 3; do
    t0=$(ts)
    check scale "round $i: a Deployment of $n pods (busybox sleep) applied" apply_sleepers e2e-scale fill "$n" "$bb" || return
    if ! check scale "round $i: all $n pods Running (the node at its $max)" wait_for 600 scale_available "$n"; then
      info scale "round $i: not running: $(scale_failures); the user's keys $(keys_used) of ${max_keys:-?}"
      kc -n e2e-scale get events --field-selector type=Warning 2>&1 | tail -5 | sed 's/^/    | /'
      kc delete namespace e2e-scale --wait=false >/dev/null 2>&1
      return
    fi
    secs=$(elapsed "$t0")
    times+=("$secs")
    k=$(keys_used)
    [ "$k" -gt "$keys_peak" ] && keys_peak=$k
    if [ "$i" = 1 ]; then pss1=$(user_pss_mib); c1=$(user_counts); fi
    check scale "round $i: no container failed to start (waiting reasons: $(scale_failures))" test -z "$(scale_failures)"
    check scale "round $i: the user's keys stay near their baseline with the node full ($k; $keys0 before, maxkeys ${max_keys:-?})" test "$k" -le $((keys0 + 10))
    info scale "round $i: $n pods Running in $secs s ($(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.1f", n / s }') pods/s)"
    kc -n e2e-scale delete deploy fill --wait=false >/dev/null
    check scale "round $i: the pods are gone after the Deployment is deleted" wait_for 300 scale_gone
  done
  check scale "the user's keys are back to their baseline ($(keys_used); $keys0 before)" test "$(keys_used)" -le $((keys0 + 2))
  kc delete namespace e2e-scale --wait=false >/dev/null 2>&1
  local per
  per=$(awk -v a="$pss0" -v b="$pss1" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }')
  info scale "PSS: $pss0 MiB idle, $pss1 MiB with $n more pods: $per MiB per pod; keys at most $keys_peak"
  # The other per-user limits (threads, open files, inotify instances and watches): idle, full, and per pod.
  local counts
  counts=$(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN { split(a, x, " "); split(b, y, " "); split("threads fds inotifyInstances inotifyWatches", k, " ");
    for (i = 1; i <= 4; i++) printf "%s\"%s\":{\"idle\":%d,\"full\":%d,\"perPod\":%.2f}", (i > 1 ? "," : ""), k[i], x[i], y[i], (y[i] - x[i]) / n }')
  info scale "the user's threads, open files, inotify instances and watches: idle $c0, with $n more pods $c1"
  report "{\"route\":\"$ROUTE\",\"scale\":{\"maxPods\":$max,\"pods\":$n,\"readyS\":[$(IFS=,; echo "${times[*]}")],\"keysBaseline\":$keys0,\"keysPeak\":$keys_peak,\"maxKeys\":${max_keys:-null},\"pssIdleMiB\":$pss0,\"pssFullMiB\":$pss1,\"pssPerPodMiB\":$per,\"userCounts\":{$counts}}}"
}
