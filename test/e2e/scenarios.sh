#!/usr/bin/env bash
# The end-to-end scenarios of the node life cycle, run as root inside a prepared environment (the
# host route, or the VM guest) against the rootless-k8s binary under test, driving it as the test
# user through its real systemd user manager. The node runs the real upstream binaries, built from
# their Go modules (test/e2e/build): kube-apiserver, kubelet, controller-manager, scheduler,
# kube-proxy, etcd, containerd, runc, the CNI plugins and RootlessKit. Each scenario asserts the
# real state afterwards: units through `systemctl --user`, files against the receipt, containerd
# answering CRI inside the namespace, the Node, pods, Services and cgroups through the real kubectl.
#
#   test/e2e/scenarios.sh ROUTE MODE     ROUTE: host | vm    MODE: the cgroup mode expected (none | delegated)
#
# Needs: $E2E_OPT prepared by test/e2e/prepare.mjs, the test user's manager running (E2E_NS_PID for
# the host route). Prints PASS/FAIL/INFO lines; exit status = number of FAIL lines.
# E2E_SCENARIOS (default: all) picks some, e.g. "fresh reinstall uninstall purge".
# The scenarios are in test/e2e/scenarios/, one file per group, their shared helpers in
# lib/scenario-lib.sh; this file sets the stage, sources them and runs each by name ("scenario_$s").
# shellcheck disable=SC2317,SC2034 # the scenario files (sourced) use the globals set here
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091 # lib/common.sh: checked on its own
. "$HERE/lib/common.sh"
ROUTE=${1:?route: host or vm}
MODE=${2:?expected mode: none or delegated}
SCENARIOS=${E2E_SCENARIOS:-docker interrupt-fetch fresh footprint workloads services publish dns storage metrics join worker netpol netpol-nft limits scale restart faults user-manager reinstall changed-plan interrupt-start upgrade rollback skew eviction logs uninstall purge matrix crio port-taken shared-host upgrade-killed disk-full up offline-bundle}
TIMEOUT=${E2E_READY_TIMEOUT:-300}
STATE=$E2E_CACHE/scenarios-$ROUTE
mkdir -p "$STATE"
chmod 755 "$STATE"
U=$(user_uid)
H=$(user_home)
RT=/run/user/$U
# The shared helpers, then one file per scenario group (test/e2e/scenarios/).
# shellcheck disable=SC1091 # lib/scenario-lib.sh: checked on its own
. "$HERE/lib/scenario-lib.sh"
for f in "$HERE"/scenarios/*.sh; do
  # shellcheck disable=SC1090 # each group is checked on its own
  . "$f"
done

start_mirror
set_version "$V_INSTALL"
info scenarios "route $ROUTE, expected mode $MODE, user $E2E_USER ($U), binary $("$E2E_OPT/bin/rootless-k8s" --version)"
for s in $SCENARIOS; do
  t0=$(ts)
  f0=$E2E_FAILS
  E2E_SCENARIO=$s # each PASS and FAIL line goes into the report under it (common.sh: check_line)
  "scenario_${s//-/_}"
  E2E_SCENARIO=""
  secs=$(elapsed "$t0")
  info "$s" "took ${secs}s"
  report "{\"route\":\"$ROUTE\",\"mode\":\"$MODE\",\"scenario\":\"$s\",\"result\":\"$([ "$E2E_FAILS" = "$f0" ] && echo pass || echo fail)\",\"failed\":$((E2E_FAILS - f0)),\"seconds\":$secs}"
done
exit "$E2E_FAILS"
