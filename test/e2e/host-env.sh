#!/usr/bin/env bash
# The host route's environment: a real `systemd --user` manager for the test user directly on this
# machine kind (Debian 12, PID 1 is not systemd, cgroup v1 hybrid, kernel >= 5.11), so the node runs
# in mode `none` (no cgroup delegation is possible here). Adapted from the project's testenv
# research (shared/research/testenv.md, route 1).
#
#   sudo test/e2e/host-env.sh up       packages, test user with subordinate ids, devices, user manager
#   sudo test/e2e/host-env.sh down     stops the user manager (by its recorded pid), removes its cgroups
#   sudo test/e2e/host-env.sh exec CMD run CMD as the test user inside the manager's mount namespace
#   sudo test/e2e/host-env.sh pid      print the user manager's pid (for nsenter)
#
# E2E_USER (default k8sdev) picks the user, E2E_NETNS a network namespace (`ip netns add NAME`, a
# file /run/netns/NAME) to start the manager in: everything it starts (the node's units) inherits
# it, and `exec` runs in it too. The join scenario's second host is
#   E2E_USER=k8sdev2 E2E_NETNS=rk8s-e2e-b test/e2e/host-env.sh up|down|pid|exec CMD
# Each user's manager has its own state folder (pid file, launcher, log: $E2E_CACHE/host for
# k8sdev, $E2E_CACHE/host-USER for another), /run/user/UID and cgroups user-UID.slice; `down`
# stops only that user's manager and removes only its cgroups.
#
# What this machine cannot give, and the product must cope with: no system manager, no logind and
# so no linger, no journald (unit output goes to files: the plan's logging.to = "file").
# Host changes: packages, user k8sdev and its /etc/subuid+subgid lines, /dev/net/tun and /dev/fuse
# 0666 (as udev would), a hugetlb v1 mount (as systemd does in hybrid mode; crun needs it),
# /etc/systemd/user.conf.d/50-rk8s-e2e-nojournal.conf, /run/user/UID.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091 # lib/common.sh: checked on its own
. "$HERE/lib/common.sh"
E2E_NETNS=${E2E_NETNS:-}
unset E2E_NS_PID # set below from this user's own pid file (an inherited one may be another user's manager)
if [ "$E2E_USER" = k8sdev ]; then STATE=$E2E_CACHE/host; else STATE=$E2E_CACHE/host-$E2E_USER; fi
MGR_PIDFILE=$STATE/user-manager.pid
HOST_PKGS=(systemd dbus dbus-user-session uidmap iptables libslirp0 python3 iproute2 procps util-linux)

manager_pid() {
  local p
  p=$(cat "$MGR_PIDFILE" 2>/dev/null) || return 1
  [ -n "$p" ] && [ "$(ps -o comm= -p "$p" 2>/dev/null)" = systemd ] && [ "$(ps -o user= -p "$p")" = "$E2E_USER" ] && echo "$p"
}

prepare_devices() {
  # Debian's udev would make these 0666; without udev they are 0600 root, and then slirp4netns
  # fails ("open: Permission denied" setting up tap0) and fuse-overlayfs cannot open /dev/fuse.
  chmod 0666 /dev/net/tun /dev/fuse
  if [ -d /sys/fs/cgroup/unified ] && ! mountpoint -q /sys/fs/cgroup/hugetlb && grep -qw hugetlb /sys/fs/cgroup/unified/cgroup.controllers; then
    mkdir -p /sys/fs/cgroup/hugetlb && mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb
  fi
}

# cg_hiers: the cgroup hierarchies systemd --user tracks its processes in, a line each: the v2 root,
# or (hybrid) the v2 `unified` one and the v1 name=systemd one.
cg_hiers() {
  local hier
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo /sys/fs/cgroup
  else for hier in unified systemd; do [ -d "/sys/fs/cgroup/$hier" ] && echo "/sys/fs/cgroup/$hier"; done; fi
  return 0
}

# in_netns PID: PID is in the network namespace E2E_NETNS (or, without E2E_NETNS, any).
in_netns() {
  [ -z "$E2E_NETNS" ] || [ "$(stat -L -c %d:%i "/run/netns/$E2E_NETNS" 2>/dev/null)" = "$(stat -L -c %d:%i "/proc/$1/ns/net" 2>/dev/null)" ]
}

start_manager() {
  local u g h p
  u=$(user_uid); g=$(id -g "$E2E_USER"); h=$(user_home)
  if p=$(manager_pid); then
    in_netns "$p" && return 0
    log "the user manager of $E2E_USER (pid $p) is not in network namespace $E2E_NETNS: restarting it"
    down >/dev/null
  fi
  if [ -n "$E2E_NETNS" ] && [ ! -f "/run/netns/$E2E_NETNS" ]; then
    echo "no network namespace $E2E_NETNS (/run/netns/$E2E_NETNS): ip netns add it first" >&2
    return 1
  fi
  install -d -m 0700 -o "$E2E_USER" -g "$E2E_USER" "/run/user/$u"
  rm -rf "/run/user/$u/systemd" # a stopped manager's sockets would look like a running one's
  # systemd --user needs a cgroup it owns in every hierarchy it tracks processes in: the v2
  # `unified` one and the v1 name=systemd one (hybrid), like user@UID.service under a real PID 1.
  local cgdirs hier d
  mapfile -t cgdirs < <(cg_hiers)
  local launcher=$STATE/user-manager-launch.sh
  {
    echo '#!/bin/sh'
    echo 'set -e'
    for hier in "${cgdirs[@]}"; do
      d=$hier/user.slice/user-$u.slice/user@$u.service
      echo "mkdir -p $d && chown -R $E2E_USER:$E2E_USER $d && echo \$\$ > $d/cgroup.procs"
    done
    # systemd runs as a user instance only when sd_booted() (/run/systemd/system exists). Fake it
    # in a private mount namespace only, so apt and invoke-rc.d on the host see no systemd.
    # With E2E_NETNS, all of it in that network namespace (nsenter, not `ip netns exec`: that one
    # remounts /sys, hiding the cgroup mounts under it).
    cat <<LAUNCH
mkdir -p /run/rk8s-e2e-sd
exec ${E2E_NETNS:+nsenter --net=/run/netns/$E2E_NETNS }unshare --mount --propagation slave sh -c '
  mount -t tmpfs -o mode=755 rk8s-e2e-sd /run/rk8s-e2e-sd
  cp -a /run/systemd/. /run/rk8s-e2e-sd/ 2>/dev/null || true
  mkdir -p /run/rk8s-e2e-sd/system
  mount --bind /run/rk8s-e2e-sd /run/systemd
  exec setpriv --reuid=$u --regid=$g --init-groups env -i HOME=$h USER=$E2E_USER LOGNAME=$E2E_USER SHELL=/bin/bash PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin XDG_RUNTIME_DIR=/run/user/$u /lib/systemd/systemd --user'
LAUNCH
  } >"$launcher"
  chmod 755 "$launcher"
  # No journald here: unit output the product does not redirect goes to the manager's own log.
  mkdir -p /etc/systemd/user.conf.d
  printf '[Manager]\nDefaultStandardOutput=inherit\nDefaultStandardError=inherit\n' >/etc/systemd/user.conf.d/50-rk8s-e2e-nojournal.conf
  setsid "$launcher" >"$STATE/user-manager.log" 2>&1 </dev/null &
  echo $! >"$MGR_PIDFILE"
  local _
  for _ in $(seq 1 50); do [ -S "/run/user/$u/systemd/private" ] && E2E_NS_PID=$(manager_pid) && break; sleep 0.2; done
  [ -n "${E2E_NS_PID:-}" ] || { echo "the user manager did not start; see $STATE/user-manager.log" >&2; tail -20 "$STATE/user-manager.log" >&2; return 1; }
  # `starting` counts: basic.target is reached and the manager takes jobs; a node left enabled by a
  # run that was cut short holds default.target there while its start gates wait (up to 240 s), and
  # run.sh removes that node next.
  for _ in $(seq 1 50); do
    case "$(as_user systemctl --user is-system-running 2>/dev/null)" in running | degraded | starting) return 0 ;; esac
    sleep 0.2
  done
  echo "the user manager is not running; see $STATE/user-manager.log" >&2
  return 1
}

up() {
  need_root
  mkdir -p "$STATE"
  local t0
  t0=$(ts)
  apt_install "${HOST_PKGS[@]}"
  prepare_devices
  ensure_test_user
  start_manager
  E2E_NS_PID=$(manager_pid)
  local st
  st=$(as_user systemctl --user is-system-running 2>&1 || true)
  if [[ $st =~ ^(running|degraded|starting)$ ]]; then
    pass env "host route: systemd --user for $E2E_USER (pid $E2E_NS_PID${E2E_NETNS:+, network namespace $E2E_NETNS}) is $st; cgroup $([ -f /sys/fs/cgroup/cgroup.controllers ] && echo v2 || echo v1/hybrid), no system systemd, no journald; ready in $(elapsed "$t0")s"
  else
    fail env "host route: systemd --user is '$st'"
    return 1
  fi
}

# user_cg_pids DIR...: the pids in the cgroups below DIR..., a line each
user_cg_pids() { find "$@" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un; }

down() {
  local p u
  u=$(id -u "$E2E_USER" 2>/dev/null) || return 0
  if p=$(manager_pid); then
    E2E_NS_PID=$p as_user systemctl --user stop default.target >/dev/null 2>&1 || true
    kill -TERM "$p"
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p"
  fi
  rm -f "$MGR_PIDFILE"
  # Only this user's cgroups (another test user's manager may be running). A unit's processes that
  # outlive the manager get a few seconds, then SIGKILL: a cgroup with processes cannot go.
  local hier dirs=() pids
  for hier in $(cg_hiers); do [ -d "$hier/user.slice/user-$u.slice" ] && dirs+=("$hier/user.slice/user-$u.slice"); done
  if [ ${#dirs[@]} != 0 ]; then
    for _ in $(seq 1 25); do user_cg_pids "${dirs[@]}" | grep -q . || break; sleep 0.2; done
    pids=$(user_cg_pids "${dirs[@]}")
    if [ -n "$pids" ]; then
      log "down: killing what is left in the cgroups of $E2E_USER: $(echo "$pids" | tr '\n' ' ')"
      # shellcheck disable=SC2086 # one pid a word
      kill -KILL $pids 2>/dev/null || true
      for _ in $(seq 1 25); do user_cg_pids "${dirs[@]}" | grep -q . || break; sleep 0.2; done
    fi
    for hier in "${dirs[@]}"; do
      find "$hier" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      rmdir "${hier%/*}" 2>/dev/null || true # user.slice, when no other user's is left in it
    done
  fi
  echo "down: user manager of $E2E_USER stopped (uid $u)"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  pid) manager_pid ;;
  exec)
    shift
    # (with E2E_NETNS never outside that namespace: no manager, no command)
    p=$(manager_pid) || [ -z "$E2E_NETNS" ] || { echo "the user manager of $E2E_USER is not running" >&2; exit 1; }
    E2E_NS_PID=${p:-} as_user "$@" ;;
  *) echo "usage: $0 [up|down|pid|exec CMD...]" >&2; exit 2 ;;
esac
