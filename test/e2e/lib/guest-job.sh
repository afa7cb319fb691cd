#!/usr/bin/env bash
# ExecStart of rk8s-e2e-job.service inside the VM guest, as root, once it has booted: waits for the
# test user's manager (started by logind through linger), runs the scenarios in mode `delegated`,
# writes the output to the 9p share (/e2e-out/job.log, the exit status to job.rc; the serial
# console gets the result lines too), and powers the guest off.
set -u
OUT=/e2e-out
mkdir -p "$OUT"
export E2E_OPT=/opt/rk8s-e2e E2E_CACHE=/var/tmp/rk8s-e2e
# Every scenario but docker (its Debian packages are not in the guest; the host route runs it).
export E2E_SCENARIOS=${E2E_SCENARIOS:-interrupt-fetch fresh footprint workloads services publish dns storage metrics limits restart faults reinstall changed-plan interrupt-start upgrade rollback skew uninstall purge port-taken offline-bundle}
export E2E_REPORT=$OUT/report.jsonl
export E2E_READY_TIMEOUT=${E2E_READY_TIMEOUT:-900}
# The restart scenario's cycles of each kind: a cycle takes about 2.5 min under software emulation,
# so 2 stop+start and 2 restart here (10 and 10 on the host route).
export E2E_RESTART_CYCLES=${E2E_RESTART_CYCLES:-2}
# shellcheck disable=SC1091 # written by vm-env.sh: the host's E2E_SCENARIOS, E2E_READY_TIMEOUT, E2E_CONFORMANCE_*
[ -f /opt/rk8s-e2e/e2e/job.env ] && { set -a; . /opt/rk8s-e2e/e2e/job.env; set +a; }
u=$(id -u k8sdev)
for _ in $(seq 1 240); do systemctl is-active -q "user@$u.service" && [ -S "/run/user/$u/bus" ] && break; sleep 0.5; done
# shellcheck disable=SC1091
{
  echo "INFO (vm) guest $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime)s, $(systemctl --version | head -1), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  echo "INFO (vm) user@$u.service: $(systemctl is-active "user@$u.service"), linger: $(loginctl show-user k8sdev -p Linger --value 2>/dev/null), delegated: $(cat "/sys/fs/cgroup/user.slice/user-$u.slice/user@$u.service/cgroup.controllers" 2>/dev/null)"
  bash /opt/rk8s-e2e/e2e/scenarios.sh vm delegated
  echo "rc=$?" >"$OUT/job.rc.tmp"
} 2>&1 | tee "$OUT/job.log" | grep -E '^(PASS|FAIL|INFO) ' >/dev/console
mv "$OUT/job.rc.tmp" "$OUT/job.rc"
sync
systemctl --no-block poweroff
exit 0
