# shellcheck shell=bash
# The VM route's guest (sourced by vm-env.sh): a Debian bookworm root file system with systemd as
# init, configured like a normal systemd host with cgroup v2 delegation for the test user:
#   - user k8sdev (uid 1000) with /etc/subuid and /etc/subgid ranges (useradd allocates them), lingering
#   - /etc/systemd/system/user@.service.d/delegate.conf: Delegate=cpu cpuset io memory pids
#   - rk8s-e2e-job.service: at boot, runs the e2e scenarios (guest-job.sh), then powers off
# No container runtime is installed: the node's components come from the loopback mirror, as on
# the host route. The debootstrap result is cached in $E2E_CACHE/vm-base (delete it to rebuild).
# Adapted from the project's testenv research (shared/testenv/lib/rootfs.sh).

# libyajl2 and libglib2.0-0: the e2e's CRI-O bundle has a crun built here from Debian's source and
# Debian's conmon, both linked against these (upstream's static bundle needs none); the host route
# installs them with scripts/test-deps.sh. openssl: the join scenario's CSR and certificate checks.
# nftables: the netpol-nft scenario, whose node runs kube-proxy and the NetworkPolicy enforcer on nft.
GUEST_PKGS=systemd-sysv,systemd,dbus,dbus-user-session,libpam-systemd,uidmap,iptables,nftables,libslirp0,libyajl2,libglib2.0-0,openssl,python3,iproute2,procps,util-linux,kmod,udev,ca-certificates,linux-image-amd64,initramfs-tools

apt_mirror() { # the Debian mirror apt uses on this machine
  local m
  m=$(awk '/^URIs:/{u=$2} /^Suites:/ && / bookworm( |$)/{print u; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
  [ -n "$m" ] || m=$(awk '$1=="deb" && $3=="bookworm"{print $2; exit}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null)
  echo "${m:-http://deb.debian.org/debian}"
}

# build_guest_base: debootstrap + kernel + a small initramfs (virtio, ext4, 9p) -> $E2E_CACHE/vm-base
build_guest_base() {
  local base=$E2E_CACHE/vm-base t0
  if [ -e "$base/.rk8s-e2e-complete" ]; then
    # A base cached before a package joined GUEST_PKGS gets it added, not rebuilt.
    local p missing=()
    for p in ${GUEST_PKGS//,/ }; do
      dpkg-query --admindir="$base/var/lib/dpkg" -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} = 0 ] && return 0
    # shellcheck disable=SC2016 # $@ is the inner shell's
    in_chroot "$base" sh -c 'apt-get install -y --no-install-recommends "$@" || { apt-get update && apt-get install -y --no-install-recommends "$@"; }' \
      sh "${missing[@]}" >>"$E2E_CACHE/vm-kernel.log" 2>&1 || { tail -20 "$E2E_CACHE/vm-kernel.log" >&2; return 1; }
    info vm "guest base: added ${missing[*]}"
    return 0
  fi
  rm -rf "$base"
  mkdir -p "$base/etc/initramfs-tools/conf.d"
  t0=$(date +%s)
  # The initramfs must be small and know the virtio disk: configure it before the kernel is installed.
  debootstrap --variant=minbase --include="${GUEST_PKGS%%,linux-image-amd64*}" bookworm "$base" "$(apt_mirror)" >"$E2E_CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$E2E_CACHE/debootstrap.log" >&2; return 1; }
  echo 'MODULES=list' >"$base/etc/initramfs-tools/conf.d/rk8s-e2e.conf"
  printf '%s\n' virtio_pci virtio_blk virtio_console ext4 9p 9pnet_virtio >>"$base/etc/initramfs-tools/modules"
  in_chroot "$base" apt-get install -y --no-install-recommends linux-image-amd64 initramfs-tools >"$E2E_CACHE/vm-kernel.log" 2>&1 ||
    { tail -20 "$E2E_CACHE/vm-kernel.log" >&2; return 1; }
  touch "$base/.rk8s-e2e-complete"
  info vm "guest base: debootstrap bookworm + kernel $(basename "$(ls "$base"/boot/vmlinuz-*)") in $(($(date +%s) - t0))s ($(du -sh "$base" | cut -f1))"
}

# in_chroot DIR CMD...: with /proc, /sys and /dev mounted (unmounted again on return)
in_chroot() {
  local d=$1 rc=0
  shift
  mount -t proc proc "$d/proc"
  mount --rbind /sys "$d/sys" && mount --make-rslave "$d/sys"
  mount --rbind /dev "$d/dev" && mount --make-rslave "$d/dev"
  cp -L /etc/resolv.conf "$d/etc/resolv.conf" 2>/dev/null || true
  chroot "$d" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive HOME=/root "$@" || rc=$?
  umount -R "$d/dev" "$d/sys" "$d/proc" 2>/dev/null || umount -lR "$d/dev" "$d/sys" "$d/proc" 2>/dev/null || true
  return $rc
}

# configure_guest ROOT E2E_DIR: the test user, linger, delegation, the job and the code under test.
configure_guest() {
  local r=$1 e2e=$2
  echo rk8s-e2e-vm >"$r/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 rk8s-e2e-vm\n' >"$r/etc/hosts"
  chroot "$r" sh -c "id $E2E_USER >/dev/null 2>&1 || useradd -m -s /bin/bash -u 1000 $E2E_USER"
  mkdir -p "$r/var/lib/systemd/linger" && touch "$r/var/lib/systemd/linger/$E2E_USER"
  mkdir -p "$r/etc/systemd/system/user@.service.d"
  printf '[Service]\nDelegate=cpu cpuset io memory pids\n' >"$r/etc/systemd/system/user@.service.d/delegate.conf"
  # The NIC of qemu's user network (vm-env.sh), addressed as its DHCP would: 10.0.2.15/24, no gateway
  # (restrict=on leads nowhere).
  mkdir -p "$r/etc/systemd/network"
  printf '[Match]\nName=en*\n[Network]\nAddress=10.0.2.15/24\nLinkLocalAddressing=no\n' >"$r/etc/systemd/network/10-e2e.network"
  chroot "$r" systemctl enable systemd-networkd.service >/dev/null 2>&1
  chroot "$r" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer >/dev/null 2>&1 || true
  # br_netfilter at boot, as doctor's network-policy fix tells root (Debian's kernel builds it as a
  # module and loads it only when asked): without it the node enforces no NetworkPolicy and says so.
  echo br_netfilter >"$r/etc/modules-load.d/rk8s-e2e.conf"
  rm -rf "$r/opt/rk8s-e2e" && mkdir -p "$r/opt/rk8s-e2e"
  cp -a "$E2E_OPT/." "$r/opt/rk8s-e2e/"
  mkdir -p "$r/opt/rk8s-e2e/e2e/lib" "$r/opt/rk8s-e2e/e2e/scenarios"
  cp "$e2e/scenarios.sh" "$e2e/docker-rootless.sh" "$r/opt/rk8s-e2e/e2e/"
  cp "$e2e/lib/common.sh" "$e2e/lib/scenario-lib.sh" "$e2e/lib/guest-job.sh" "$r/opt/rk8s-e2e/e2e/lib/"
  cp "$e2e"/scenarios/*.sh "$r/opt/rk8s-e2e/e2e/scenarios/"
  mkdir -p "$r/e2e-out"
  cat >"$r/etc/systemd/system/rk8s-e2e-job.service" <<'UNIT'
[Unit]
Description=rootless-k8s e2e: the scenarios in this VM, then power off
After=multi-user.target user@1000.service e2e\x2dout.mount network-online.target
Wants=user@1000.service network-online.target
[Service]
Type=oneshot
ExecStart=/opt/rk8s-e2e/e2e/lib/guest-job.sh
StandardOutput=journal+console
TimeoutStartSec=infinity
[Install]
WantedBy=multi-user.target
UNIT
  chroot "$r" systemctl enable rk8s-e2e-job.service >/dev/null 2>&1
  cat >"$r/etc/fstab" <<'FSTAB'
/dev/vda  /         ext4  rw,errors=remount-ro                                                            0 1
rk8se2e   /e2e-out  9p    trans=virtio,version=9p2000.L,msize=262144,nofail,x-systemd.device-timeout=20s  0 0
FSTAB
}
