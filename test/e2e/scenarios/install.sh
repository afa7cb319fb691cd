# shellcheck shell=bash
# Install: the Docker cell, an interrupted download, the fresh install and its API exposure (issue 37: one file per scenario group).
# Sourced by test/e2e/scenarios.sh after lib/scenario-lib.sh; its scenarios run by name.
# shellcheck disable=SC2317,SC2034,SC2153 # functions called by name; globals shared across the files

# --- scenarios ------------------------------------------------------------------------------------
# --- scenarios ------------------------------------------------------------------------------------
scenario_docker() {
  local verdict=$STATE/docker-cell result reason out rc
  rm -f "$verdict"
  E2E_DOCKER_KEEP=1 bash "$HERE/docker-rootless.sh" "$ROUTE" "$verdict"
  E2E_FAILS=$((E2E_FAILS + $?))
  # The Docker cell of the matrix: offered or refused by install --dry-run, and why.
  if read -r result reason <"$verdict"; then cell docker "dockerd's own" "$result" "$reason"; else cell docker "dockerd's own" fail "docker-rootless.sh gave no verdict"; fi
  docker_other_socket
  # Mode none with the user's Docker (issue 42): where the plan lets it through (dockerd on the
  # systemd driver, cgroup v2), a real node must run on it, as every matrix cell does; where it
  # refuses, the refusal is checked with its reason.
  if [ "$result" = offered ] || [ "$MODE" = delegated ]; then
    local -x RK8S_PATH RK8S_ENV=DOCKER_HOST=unix:///run/user/$U/docker.sock
    RK8S_PATH=$(bash "$HERE/docker-rootless.sh" "$ROUTE" - path)
    # The mirror's version set, not --kubernetes-version: that would take the built-in set's
    # cri-dockerd (0.3.26, verified by its pin), which no Go module serves to build here; the
    # mirror serves the v0.4.0 built from its module (docs/manifest.md).
    local FLAGS=(--yes --manifest "$MANIFESTS/k8s-$V_INSTALL.json" --timeout "$TIMEOUT" "${SOURCE[@]}")
    info docker "the node's tools: docker is $(rk8s_which docker), for PATH $RK8S_PATH"
    out=$(docker_none_plan)
    rc=$?
    local cidr
    cidr=$(grep -o 'ROOTLESSKIT_FLAGS=--cidr=[0-9./]*' <<<"$out" | head -1 | sed 's/.*--cidr=//')
    if [ "$rc" = 3 ] && [ -n "$cidr" ]; then
      # dockerd's RootlessKit on slirp4netns' default 10.0.2.0/24, this host's own network (qemu's):
      # refused, with the fix that moves dockerd's network; then the fix, as a user applies it.
      pass docker "mode none on dockerd's default network is refused, as it overlaps this host's: $(grep -m1 . <<<"$out"); the fix moves it to $cidr"
      bash "$HERE/docker-rootless.sh" "$ROUTE" - stop
      E2E_DOCKER_KEEP=1 E2E_DOCKER_FLAGS=--cidr=$cidr bash "$HERE/docker-rootless.sh" "$ROUTE" /dev/null
      out=$(docker_none_plan)
      rc=$?
      check docker "with dockerd restarted on $cidr, the node's plan takes that network (read inside dockerd's namespace): $(grep -m1 -i 'namespace' <<<"$out")" grep -q "$cidr" <<<"$out"
    fi
    if [ "$rc" = 0 ]; then
      info docker "install --dry-run --runtime docker --mode none offers it: $(grep -m1 -i 'docker' <<<"$out")"
      # Docker's default (classic) image store keeps no digest for a loaded image, so the add-ons'
      # pinned images could not come from archives: the plan says so, with the fix; the node runs
      # with the fix applied, as Docker 29 does for new installs (its containerd image store).
      check docker "the plan: dockerd's classic image store cannot hold the add-ons' pinned images offline, and names the fix" \
        docker_store_words classic "$out"
      bash "$HERE/docker-rootless.sh" "$ROUTE" - stop
      E2E_DOCKER_KEEP=1 E2E_DOCKER_STORE=containerd E2E_DOCKER_FLAGS=${cidr:+--cidr=$cidr} bash "$HERE/docker-rootless.sh" "$ROUTE" /dev/null
      out=$(docker_none_plan)
      check docker "dockerd restarted on its containerd image store: the plan says loaded images keep their digests" \
        docker_store_words containerd "$out"
      MODE=none matrix_cell docker docker --runtime docker --mode none
    else
      check docker "install --dry-run --runtime docker --mode none is refused with exit 3 (got $rc) and a reason: $(grep -m1 . <<<"$out")" test "$rc" = 3
    fi
  fi
  bash "$HERE/docker-rootless.sh" "$ROUTE" - stop
  E2E_FAILS=$((E2E_FAILS + $?))
}
# Bad input (issue 42): DOCKER_HOST at another user's socket (one root binds here) is refused with
# exit 3 and its reason, before anything is written.
docker_other_socket() {
  local sock=/tmp/rk8s-e2e-other-docker.sock out rc
  rm -f "$sock"
  python3 -c 'import os, socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666)' "$sock" || { fail docker "could not bind $sock"; return; }
  out=$(RK8S_ENV=DOCKER_HOST=unix://$sock RK8S_PATH=$(bash "$HERE/docker-rootless.sh" "$ROUTE" - path) rk8s install --dry-run --runtime docker "${SOURCE[@]}" 2>&1)
  rc=$?
  rm -f "$sock"
  check docker "DOCKER_HOST at root's socket is refused with exit 3 (got $rc): $(grep -m1 . <<<"$out")" test "$rc" = 3
  check docker "the refusal names the socket's owner" grep -q "belongs to uid 0, not to you" <<<"$out"
  check docker "nothing was written" test -z "$(ours_left)"
}
# docker_store_words STORE PLAN-TEXT: the plan's words for dockerd's image store (classic: no digest, and the fix)
docker_store_words() {
  case $1 in
    classic) grep -q 'classic image store keeps no registry digest' <<<"$2" && grep -q 'containerd-snapshotter' <<<"$2" ;;
    containerd) grep -q 'containerd image store keeps the digest' <<<"$2" ;;
  esac
}
docker_none_plan() { rk8s install --dry-run "${FLAGS[@]}" --runtime docker --mode none 2>&1; } # (FLAGS: the caller's)
# shellcheck disable=SC2016 # the inner shell's $1
rk8s_which() { as_user env ${RK8S_PATH:+PATH="$RK8S_PATH"} sh -c 'command -v "$1" || echo "not on PATH"' sh "$1"; }
# user_docker ARG...: the test user's docker CLI on the node's dockerd (RK8S_ENV's DOCKER_HOST, RK8S_PATH's tools).
user_docker() { as_user env "$RK8S_ENV" PATH="$RK8S_PATH:/usr/bin:/bin" docker "$@"; }
# docker_sandbox CELL: the product sets no sandbox image, as for containerd and CRI-O: cri-dockerd's
# default (its --help: --pod-infra-container-image) names it. The pause built here (Kubernetes'
# pause.c, loaded under Kubernetes' tag) is tagged so too, as the registry would serve it.
docker_sandbox() {
  local want
  want=$(as_user "$(receipt_value .plan.runtime.binary)" --help 2>&1 | grep -o 'pod-infra-container-image.*(default "[^"]*")' | sed 's/.*(default "//; s/")$//')
  if [ -z "$want" ]; then fail matrix "$1: cri-dockerd --help names no default sandbox image"; return; fi
  check matrix "$1: the pause image is also $want in dockerd (cri-dockerd's default sandbox image)" \
    user_docker tag "$(image_name pause)" "$want"
}
# docker_cell_more CELL BUSYBOX: what the docker cell proves beyond the others' (issue 42): kubectl logs
# through cri-dockerd's log links, and where a container's limit lands: with dockerd on the systemd
# driver, the container's own docker-<id>.scope in the user's systemd, set by dockerd itself.
docker_cell_more() {
  local name=$1 id pid cg max
  check matrix "$name: kubectl logs reads the container's log (cri-dockerd's link under the kubelet's podLogsDir)" \
    has "Started HTTP server" kc -n e2e logs web
  apply <<YAML || return
apiVersion: v1
kind: Pod
metadata: {name: limited, namespace: e2e}
spec:
  containers:
  - {name: c, image: $2, imagePullPolicy: Never, command: ["sleep", "86400"], resources: {limits: {memory: 64Mi, cpu: 250m}}}
YAML
  check matrix "$name: a pod with limits runs" wait_for "$TIMEOUT" phase_is limited Running
  id=$(user_docker ps -q --filter label=io.kubernetes.pod.name=limited --filter label=io.kubernetes.container.name=c)
  pid=$(user_docker inspect -f '{{.State.Pid}}' "$id" 2>&1)
  cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup" 2>/dev/null)
  max=$(cat "/sys/fs/cgroup$cg/memory.max" 2>&1)
  report "{\"route\":\"$ROUTE\",\"dockerLimitedContainer\":{\"cgroup\":\"$cg\",\"memoryMax\":\"$max\"}}"
  check matrix "$name: dockerd put the limited container in its own scope ($cg)" grep -q "docker-$id.*\\.scope$" <<<"$cg"
  check matrix "$name: its memory.max is the pod's limit, 64Mi ($max)" test "$max" = 67108864
  kc -n e2e delete pod limited --wait=false >/dev/null 2>&1
}
docker_evidence() { # the kubelet's and cri-dockerd's own words, into $STATE and the output
  save_logs cri-dockerd "$STATE/docker-cri-dockerd.log"
  save_logs kubelet "$STATE/docker-kubelet.log"
  grep -iE 'error|fail' "$STATE/docker-cri-dockerd.log" | tail -8 | sed 's/^/    | cri-dockerd: /'
  grep -iE 'error|fail' "$STATE/docker-kubelet.log" | tail -8 | sed 's/^/    | kubelet: /'
}

scenario_interrupt_fetch() {
  mirror_get "/__e2e/rate?bps=3000000" >/dev/null # 3 MB/s: the set takes ~30 s to download
  mirror_get /__e2e/reset >/dev/null
  local log=$STATE/interrupt-fetch.log rc
  run_bg "$log" install "${FLAGS[@]}"
  wait_for 60 mirror_bytes_over 5000000 && kill -INT "$(cat "$PIDFILE")"
  wait "$BG"
  rc=$?
  mirror_get "/__e2e/rate?bps=0" >/dev/null
  check interrupt-fetch "SIGINT during the download exits 130 (got $rc)" test "$rc" = 130
  check interrupt-fetch "it says it was interrupted and how to go on" grep -q "interrupted" "$log"
  check interrupt-fetch "nothing was started (rootless-k8s.target not active)" target_inactive
  check interrupt-fetch "no unit file was written" no_unit_files
  check interrupt-fetch "the partial download is kept for resuming" partial_kept
}

scenario_fresh() {
  local log=$STATE/fresh.log rc t0
  mirror_get /__e2e/reset >/dev/null
  t0=$(ts)
  rk8s install "${FLAGS[@]}" --merge-kubeconfig >"$log" 2>&1
  rc=$?
  if [ "$rc" = 0 ]; then pass fresh "install --yes in mode $MODE: Ready in $(elapsed "$t0")s"; else
    fail fresh "install exited $rc"; tail -40 "$log" | sed 's/^/    | /'; return; fi
  case " $SCENARIOS " in *" interrupt-fetch "*)
    check fresh "the re-run resumed the interrupted download (Range requests: $(mirror_stat ranges))" test "$(mirror_stat ranges)" -gt 0 ;;
  esac
  assert_running_node fresh "$V_INSTALL" "$log"
  assert_node_object fresh "$V_INSTALL"
  check fresh "--merge-kubeconfig added a context that works: kubectl --context rootless-k8s get nodes" merged_context_works
  assert_images_and_sandbox fresh
  assert_eviction_observes fresh
  assert_api_exposure fresh
}

# A node alone publishes its API server on loopback only, and without a certificate only its health
# endpoints answer (issue 34): /version and the rest get 401 before RBAC is asked.
api_listeners() { as_user ss -Hltn "sport = :$(receipt_value .plan.ports.apiServer)" | awk '{ print $4 }' | sort -u | paste -sd' '; }
anonymous_api() { # anonymous_api PATH: "STATUS BODY" of an anonymous request to the node's API server
  # shellcheck disable=SC2016 # JavaScript, not shell
  as_user env NODE_TLS_REJECT_UNAUTHORIZED=0 "$E2E_OPT/node" --no-warnings -e 'fetch(process.argv[1]).then(async (r) => process.stdout.write(`${r.status} ${(await r.text()).trim()}`))' \
    "https://127.0.0.1:$(receipt_value .plan.ports.apiServer)$1"
}
assert_api_exposure() { # assert_api_exposure SCOPE
  local scope=$1 l
  l=$(api_listeners)
  check "$scope" "the API server is published on 127.0.0.1 only (listening: $l)" test "$l" = "127.0.0.1:$(receipt_value .plan.ports.apiServer)"
  check "$scope" "an anonymous /readyz answers ($(anonymous_api /readyz))" has '^200 ok$' anonymous_api /readyz
  check "$scope" "an anonymous /version is refused ($(anonymous_api /version | head -c 60))" has '^401 ' anonymous_api /version
}

# The kubelet's eviction manager observes (issue 43): the summary API has the node's file systems,
# and the kubelet's log has none of the errors of a manager that never runs, 20 s (two of its
# 10 s cycles) after Ready at least. Where the plan turned localStorageCapacityIsolation off (a data
# folder without a block device) the check says that instead.
kubelet_stats_fs() { kc get --raw "/api/v1/nodes/$(receipt_value .plan.node.name)/proxy/stats/summary" | tool json - .node.fs.capacityBytes; }
assert_eviction_observes() {
  local scope=$1 n
  if [ "$(receipt_value .plan.kubelet.localStorageCapacityIsolation)" != true ]; then
    info "$scope" "the plan keeps localStorageCapacityIsolation off here ($(receipt_value .plan.kubelet.reasons | grep -o 'localStorageCapacityIsolation: false: [^"]*' | head -1)): no eviction on this node"
    return
  fi
  check "$scope" "the kubelet's summary API has the node's file system: $(kubelet_stats_fs 2>&1 | head -1) bytes" wait_for 30 eval 'kubelet_stats_fs >/dev/null'
  sleep 20
  n=$(eviction_manager_errors)
  check "$scope" "the kubelet's eviction manager runs: $n 'cannot find filesystem info', 'failed to get HasDedicatedImageFs' or 'failed to synchronize' lines in its log" test "$n" = 0
}
