#!/usr/bin/env bash
# `make e2e`: the node life cycle end to end, under real systemd, real RootlessKit, real containerd,
# with the real upstream binaries built from their Go modules (test/e2e/build), served from a
# loopback mirror.
#
#   Host route: a real `systemd --user` for user k8sdev on this machine (cgroup v1, no delegation:
#               mode none). About a minute.
#   VM route:   a qemu VM (software emulation) with real systemd, logind, linger and cgroup v2 with
#               Delegate=cpu cpuset io memory pids: mode delegated. Several minutes on TCG. If it
#               cannot run, it FAILS with the reason; it never passes silently.
#
# Run as root (it creates the test user). Killed (TERM) or interrupted (Ctrl-C), it stops the VM and
# the test user's manager before it exits. It writes test/e2e/out/report.json (see report.mjs). Env: E2E_ROUTES="host vm" (default both), E2E_CLI (the
# binary under test, default dist/rootless-k8s-linux-<arch> from `make build`), E2E_SCENARIOS (see
# scenarios.sh), E2E_VM_SCENARIOS (the VM route's, when they differ), E2E_PARALLEL=1 (the two routes
# side by side), E2E_VM_MAX_PREPARE_S (see below), E2E_CACHE (/var/tmp/rk8s-e2e), E2E_OPT (/opt/rk8s-e2e).
# Exit status 0 only when every route ran and printed no FAIL line.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck disable=SC1091 # lib/common.sh: checked on its own
. "$HERE/lib/common.sh"
need_root
ROUTES=${E2E_ROUTES:-host vm}
ARCH=$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
CLI=${E2E_CLI:-$REPO/dist/rootless-k8s-linux-$ARCH}
mkdir -p "$E2E_CACHE"
OUT=${E2E_OUT:-$REPO/test/e2e/out}
mkdir -p "$OUT"
SUMMARY=()
ROUTE_REPORTS=()
# shellcheck disable=SC2317 # called from the traps below
cleanup() {
  [ -n "${VM_BG:-}" ] && kill "$VM_BG" 2>/dev/null # the VM route beside the host route (E2E_PARALLEL)
  bash "$HERE/vm-env.sh" down >/dev/null 2>&1
  bash "$HERE/host-env.sh" down >/dev/null 2>&1
}
trap 'echo "e2e interrupted: stopping the VM and the test user manager" >&2; cleanup; exit 130' INT
trap 'echo "e2e killed: stopping the VM and the test user manager" >&2; cleanup; exit 143' TERM
STATUS=0

t0=$(ts)
# The conformance scenario needs upstream's suite and its images (test/conformance/prepare.mjs).
PREPARE_FLAGS=()
case " ${E2E_SCENARIOS:-} " in *" conformance "*) PREPARE_FLAGS+=(--conformance) ;; esac
if ! "$REPO/node_modules/.bin/node" "$HERE/prepare.mjs" --cache "$E2E_CACHE" --opt "$E2E_OPT" --cli "$CLI" "${PREPARE_FLAGS[@]}"; then
  echo "FAIL (e2e) could not prepare the environment (component builds, mirror, images, binary); see above"
  exit 1
fi
PREPARE_S=$(elapsed "$t0")
info e2e "prepared $E2E_OPT (components built from their Go modules, mirror, images, e2e tools, $("$E2E_OPT/bin/rootless-k8s" --version)) in ${PREPARE_S}s"

# route_result NAME LOGFILE RC: counts the route's PASS/FAIL lines into the summary.
route_result() {
  local name=$1 log=$2 rc=$3 p f
  p=$(grep -c '^PASS ' "$log")
  f=$(grep -c '^FAIL ' "$log")
  if [ "$rc" != 0 ] || [ "$f" != 0 ] || [ "$p" = 0 ]; then
    STATUS=1
    SUMMARY+=("$name: FAILED ($p passed, $f failed, exit $rc); log $log")
  else
    SUMMARY+=("$name: ALL PASS ($p checks)")
  fi
}

host_route() {
  local log=$E2E_CACHE/e2e-host.log rc=0
  trap 'bash "$HERE/host-env.sh" down >/dev/null 2>&1' RETURN
  {
    bash "$HERE/host-env.sh" up || exit 1
    E2E_NS_PID=$(bash "$HERE/host-env.sh" pid)
    export E2E_NS_PID
    clean_user_state
    E2E_REPORT=$E2E_CACHE/report-host.jsonl bash "$HERE/scenarios.sh" host none
  } 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  ROUTE_REPORTS+=(--route "host=$E2E_CACHE/report-host.jsonl")
  route_result "host route (mode none)" "$log" "$rc"
}

# A previous run that was cut short may have left a node: remove it (the product's own purge first).
clean_user_state() {
  local h
  h=$(user_home)
  if [ -e "$h/.local/share/rootless-k8s/receipt.json" ]; then
    info e2e "removing a node left by an earlier run: rootless-k8s uninstall --purge --yes"
    as_user "$E2E_OPT/bin/rootless-k8s" uninstall --purge --yes >/dev/null 2>&1 || true
  fi
  rm -rf "$h/.cache/rootless-k8s" "$h/.local/share/rootless-k8s" "$h/.config/rootless-k8s" "$h/.local/state/rootless-k8s" "$h/.kube" \
    "$h"/.config/systemd/user/rootless-k8s* "/run/user/$(user_uid)/rootless-k8s" 2>/dev/null || true
}

# The VM route's scenarios: E2E_VM_SCENARIOS, else E2E_SCENARIOS, else the guest's own list (lib/guest-job.sh).
vm_env() { E2E_SCENARIOS=${E2E_VM_SCENARIOS:-${E2E_SCENARIOS:-}} bash "$HERE/vm-env.sh"; }
vm_route() {
  local log=$E2E_CACHE/e2e-vm.log rc
  vm_env 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  vm_result "$log" "$rc"
}
vm_result() {
  ROUTE_REPORTS+=(--route "vm=$E2E_CACHE/vm/out/report.jsonl")
  route_result "VM route (mode delegated)" "$1" "$2"
}

for r in $ROUTES; do
  case $r in host | vm) ;; *) echo "unknown route $r (host, vm)" >&2; exit 2 ;; esac
done
# E2E_VM_MAX_PREPARE_S: where the builds were cold (preparing took longer), the VM route is not run
# and the summary says so (CI: the VM route fits its budget only beside warm builds).
if [ -n "${E2E_VM_MAX_PREPARE_S:-}" ] && [ "$PREPARE_S" -gt "$E2E_VM_MAX_PREPARE_S" ] && [[ " $ROUTES " == *" vm "* ]]; then
  SUMMARY+=("VM route (mode delegated): not run, unfinished: preparing took ${PREPARE_S}s (cold builds), more than E2E_VM_MAX_PREPARE_S=${E2E_VM_MAX_PREPARE_S}s")
  ROUTES=${ROUTES//vm/}
fi
# E2E_PARALLEL=1 with both routes: the VM route (its guest under software emulation takes one core
# at most of the time) runs beside the host route; its lines follow the host route's.
if [ "${E2E_PARALLEL:-0}" = 1 ] && [[ " $ROUTES " == *" vm "* ]] && [[ " $ROUTES " == *" host "* ]]; then
  VM_LOG=$E2E_CACHE/e2e-vm.log
  info e2e "the VM route runs beside the host route (E2E_PARALLEL=1); its log: $VM_LOG"
  (
    vm_env >"$VM_LOG" 2>&1
    echo $? >"$VM_LOG.rc"
  ) &
  VM_BG=$!
  rm -f "$VM_LOG.rc"
  host_route
  info e2e "host route done; waiting for the VM route"
  wait "$VM_BG"
  cat "$VM_LOG"
  vm_result "$VM_LOG" "$(cat "$VM_LOG.rc" 2>/dev/null || echo 1)"
else
  for r in $ROUTES; do
    case $r in
      host) host_route ;;
      vm) vm_route ;;
    esac
  done
fi

# The conformance runs' JUnit XML and summaries, beside report.json: only the routes of this run
# (another route's folder in the cache is an older run's).
if [ ${#PREPARE_FLAGS[@]} -gt 0 ]; then
  for r in $ROUTES; do
    d=$E2E_CACHE/conformance-host
    [ "$r" = vm ] && d=$E2E_CACHE/vm/out/conformance-vm
    rm -rf "${OUT:?}/conformance-$r"
    [ -d "$d" ] && cp -r "$d" "$OUT/" && echo "conformance output: $OUT/conformance-$r ($(tail -1 "$d/summary.txt" 2>/dev/null))"
  done
fi

echo
"$REPO/node_modules/.bin/node" "$HERE/report.mjs" --opt "$E2E_OPT" --build-cache "$E2E_BUILD_CACHE" --out "$OUT/report.json" --prepare-seconds "$PREPARE_S" "${ROUTE_REPORTS[@]}" || STATUS=1
echo "== e2e summary ($(elapsed "$t0")s)"
for s in "${SUMMARY[@]}"; do echo "   $s"; done
exit $STATUS
