#!/usr/bin/env bash
# The VM route: a qemu VM with Debian's own kernel, systemd as init, logind, linger and cgroup v2
# with Delegate=cpu cpuset io memory pids for the test user, so the node runs in mode `delegated`.
# The guest boots, runs test/e2e/scenarios.sh (via lib/guest-job.sh) against the same binary,
# components, images and mirror as the host route (copied in from $E2E_OPT), writes its output to a 9p share
# (the serial console as a fallback) and powers off. Adapted from the project's testenv research
# (shared/testenv/vm.sh, route 3).
#
#   sudo test/e2e/vm-env.sh           (needs $E2E_OPT prepared by test/e2e/prepare.mjs)
#   sudo test/e2e/vm-env.sh down      stops a VM left running (run.sh calls it on Ctrl-C or a kill)
#
# Network: one NIC on qemu's user network, as most qemu VMs have (the guest is 10.0.2.15/24, so the
# plan must steer its namespace clear of 10.0.2.0/24), with restrict=on: the guest reaches nothing
# beyond the VM. The host's own address is what the publish scenario dials.
#
# Acceleration: KVM only when the CPU offers vmx/svm (this machine kind's /dev/kvm is PVM, on
# which a stock kernel hangs after "Probing EDD"), else TCG software emulation: minutes, not seconds.
# It never passes silently: no result from the guest is a FAIL with the reason and the console tail.
# Env: E2E_VM_TIMEOUT (s, default 3000), E2E_VM_MEM (MiB, 4096), E2E_VM_CPUS (nproc), E2E_SCENARIOS, E2E_FAULTS,
# E2E_READY_TIMEOUT and E2E_CONFORMANCE_{LIST,PROCS,NODES,SHARD} (passed to the guest).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091 # checked on their own
. "$HERE/lib/common.sh"
# shellcheck disable=SC1091
. "$HERE/lib/guest-rootfs.sh"
need_root
STATE=$E2E_CACHE/vm
TIMEOUT=${E2E_VM_TIMEOUT:-3000}
PIDFILE=$STATE/qemu.pid
mkdir -p "$STATE"

down() {
  local p
  p=$(cat "$PIDFILE" 2>/dev/null || true)
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p"
    for _ in $(seq 1 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p"
  fi
  rm -f "$PIDFILE"
}

# guest_docker_debs CACHE: the .debs docker-rootless.sh unpacks (DOCKER_DEBS), from the host's cache,
# into the guest's CACHE, each in the folder cached_deb looks in (deb_dir).
guest_docker_debs() {
  local p deb
  for p in "${DOCKER_DEBS[@]}"; do
    deb=$(cached_deb "$p") || return 1
    mkdir -p "$1/$(basename "$(deb_dir "$p")")" && cp "$deb" "$1/$(basename "$(deb_dir "$p")")/" || return 1
  done
}

main() {
  local t0 t r kver accel cpu clock=""
  # Killed or interrupted: the VM goes with us.
  trap 'down; exit 130' INT
  trap 'down; exit 143' TERM
  t0=$(ts)
  [ -x "$E2E_OPT/bin/rootless-k8s" ] || { fail vm "$E2E_OPT is not prepared (run test/e2e/prepare.mjs, or make e2e)"; return 1; }
  apt_install debootstrap qemu-system-x86 qemu-utils e2fsprogs || { fail vm "cannot install qemu/debootstrap (apt)"; return 1; }
  build_guest_base || { fail vm "cannot build the guest root file system (debootstrap; see $E2E_CACHE/debootstrap.log)"; return 1; }
  t=$(ts)
  r=$STATE/root
  down
  rm -rf "$r" "$STATE/out" "$STATE/disk.img"
  cp -a "$E2E_CACHE/vm-base" "$r"
  configure_guest "$r" "$HERE"
  # The docker scenario unpacks Debian's docker.io and its helpers from $E2E_CACHE/debs; the guest
  # reaches no archive, so the host downloads them and they go into the guest's cache.
  case " ${E2E_SCENARIOS:-} " in *" docker "*)
    guest_docker_debs "$r/var/tmp/rk8s-e2e" || { fail vm "cannot download Debian's docker.io and its helpers for the guest (apt-get download)"; return 1; } ;;
  esac
  # Only what was chosen on the host; guest-job.sh has the defaults.
  : >"$r/opt/rk8s-e2e/e2e/job.env"
  [ -n "${E2E_SCENARIOS:-}" ] && printf 'E2E_SCENARIOS=%q\n' "$E2E_SCENARIOS" >>"$r/opt/rk8s-e2e/e2e/job.env"
  local v
  for v in E2E_READY_TIMEOUT E2E_FAULTS E2E_RESTART_CYCLES E2E_CONFORMANCE_LIST E2E_CONFORMANCE_PROCS E2E_CONFORMANCE_NODES E2E_CONFORMANCE_SHARD; do
    [ -n "${!v:-}" ] && printf '%s=%q\n' "$v" "${!v}" >>"$r/opt/rk8s-e2e/e2e/job.env"
  done
  kver=$(find "$r/boot" -name 'vmlinuz-*' | sed 's/.*vmlinuz-//' | sort -V | tail -1)
  cp "$r/boot/vmlinuz-$kver" "$r/boot/initrd.img-$kver" "$STATE/"
  mkdir -p "$STATE/out"
  # 12G (sparse): the guest's base and $E2E_OPT take about 3G with the conformance suite and its images;
  # then come the node's unpacked images and the suite's pods.
  mkfs.ext4 -q -F -L rk8s-e2e -d "$r" "$STATE/disk.img" 12G || { fail vm "mkfs.ext4 -d failed"; return 1; }
  rm -rf "$r"
  info vm "guest image ($(du -h "$STATE/disk.img" | cut -f1) used, kernel $kver) in $(elapsed "$t")s"

  accel=${E2E_VM_ACCEL:-auto}
  if [ "$accel" = auto ]; then
    if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then accel=kvm; else accel=tcg; fi
  fi
  local accel_args
  if [ "$accel" = kvm ]; then accel_args=(-accel kvm); cpu=host,-arch-capabilities
  else
    accel_args=(-accel "tcg,thread=multi,tb-size=1024")
    cpu=max
    # Under emulation the guest kernel (Debian 12's 6.1) logs "Marking TSC unstable due to TSCs
    # unsynchronized" and switches to the HPET, whose every read is an emulated device access and
    # which the vDSO cannot serve: each clock read of the Go components becomes a system call. With
    # these two words it keeps the TSC ("Switched to clocksource tsc-early"; both read on its console).
    clock="clocksource=tsc tsc=reliable"
  fi
  t=$(ts)
  if ! qemu-system-x86_64 "${accel_args[@]}" -cpu "$cpu" -smp "${E2E_VM_CPUS:-$(nproc)}" -m "${E2E_VM_MEM:-4096}" -machine q35 \
    -display none -monitor none -serial "file:$STATE/console.log" -no-reboot \
    -kernel "$STATE/vmlinuz-$kver" -initrd "$STATE/initrd.img-$kver" \
    -append "root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 systemd.show_status=1 panic=-1${clock:+ $clock}" \
    -drive "file=$STATE/disk.img,if=virtio,format=raw,cache=unsafe,aio=threads" \
    -virtfs "local,path=$STATE/out,mount_tag=rk8se2e,security_model=none,id=rk8se2e" \
    -nic user,model=virtio-net-pci,restrict=on -pidfile "$PIDFILE" -daemonize; then
    fail vm "qemu did not start (accel $accel)"
    return 1
  fi
  info vm "qemu started: accel=$accel cpu=$cpu, waiting up to ${TIMEOUT}s for the guest's scenarios"
  local i
  for i in $(seq 1 "$TIMEOUT"); do
    [ -e "$STATE/out/job.rc" ] && break
    kill -0 "$(cat "$PIDFILE" 2>/dev/null)" 2>/dev/null || break
    sleep 1
  done
  local rc
  if [ -e "$STATE/out/job.rc" ]; then
    grep -E '^(PASS|FAIL|INFO) ' "$STATE/out/job.log"
    rc=$(sed -n 's/^rc=//p' "$STATE/out/job.rc")
    info vm "guest boot + scenarios took $(elapsed "$t")s (accel $accel); full log: $STATE/out/job.log"
  else
    fail vm "no result from the guest after $(elapsed "$t")s ($( [ "$i" -ge "$TIMEOUT" ] && echo "timeout ${TIMEOUT}s" || echo "qemu exited")); last console lines:"
    tr -d '\033\r' <"$STATE/console.log" | tail -25 | sed 's/^/    | /'
    grep -E '^(PASS|FAIL|INFO) ' "$STATE/out/job.log" 2>/dev/null | tail -20
    rc=1
  fi
  for _ in $(seq 1 60); do kill -0 "$(cat "$PIDFILE" 2>/dev/null)" 2>/dev/null || break; sleep 1; done
  down
  info vm "VM route total $(elapsed "$t0")s"
  return "$rc"
}

case "${1:-run}" in
  run) main ;;
  down) down ;;
  *) echo "usage: $0 [run|down]" >&2; exit 2 ;;
esac
