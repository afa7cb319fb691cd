# shellcheck shell=bash
# Shared by the e2e scripts (sourced): result lines, timing, package installation, and running
# commands as the test user in a session-like environment.
#
# Result lines are the contract of every e2e script: "PASS (scope) what", "FAIL (scope) what",
# "INFO (scope) what". run.sh counts them; a script's exit status is its number of FAIL lines.

E2E_USER=${E2E_USER:-k8sdev}
E2E_CACHE=${E2E_CACHE:-/var/tmp/rk8s-e2e}
# Where the environments keep what the test user runs: the pinned Node (for the e2e tools) and
# the rootless-k8s binary under test. Same path on the host and in the VM guest.
E2E_OPT=${E2E_OPT:-/opt/rk8s-e2e}
# Where test/e2e/build keeps the components it built from their Go modules (outside the repo).
E2E_BUILD_CACHE=${E2E_BUILD_CACHE:-/var/tmp/rk8s-build}
E2E_FAILS=${E2E_FAILS:-0}

ts() { date +%s.%N; }
elapsed() { awk "BEGIN{printf \"%.1f\", $(ts) - $1}"; }
log() { echo "[$(date +%T)] $*" >&2; }
pass() { echo "PASS ($1) $2"; check_line pass "$2"; }
fail() { echo "FAIL ($1) $2"; E2E_FAILS=$((E2E_FAILS + 1)); check_line fail "$2"; }
# check_line RESULT TEXT: inside a scenario (E2E_SCENARIO, and REPORT, set by scenarios.sh), one
# line of report.json's list of checks under that scenario: what was asserted and its result.
check_line() {
  [ -n "${E2E_SCENARIO:-}" ] && [ -n "${REPORT:-}" ] || return 0
  local t=$2
  t=${t//\\/\\\\}; t=${t//\"/\\\"}; t=${t//$'\t'/ }; t=${t//$'\n'/ }; t=${t//[[:cntrl:]]/}
  printf '{"check":{"scenario":"%s","result":"%s","text":"%s"}}\n' "$E2E_SCENARIO" "$1" "$t" >>"$REPORT"
}
info() { echo "INFO ($1) $2"; }

wait_for() { # wait_for SECONDS CMD...: true once CMD succeeds
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -ge "$deadline" ] && return 1; sleep 0.3; done
}
# check SCOPE DESCRIPTION CMD...: PASS when CMD succeeds, FAIL (with its output) otherwise.
check() {
  local scope=$1 what=$2 out rc=0
  shift 2
  out=$("$@" 2>&1) || rc=$?
  if [ $rc = 0 ]; then pass "$scope" "$what"; else
    fail "$scope" "$what (exit $rc)"
    printf '%s\n' "$out" | tail -25 | sed 's/^/    | /'
  fi
  return $rc
}

need_root() { [ "$(id -u)" = 0 ] || { echo "run as root (the e2e environments create a test user)" >&2; exit 2; }; }

# apt_install PKG...: installs what is missing; one `apt-get update` and a retry when not found.
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} = 0 ] && return 0
  log "apt-get install ${missing[*]}"
  mkdir -p "$E2E_CACHE"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >"$E2E_CACHE/apt.log" 2>&1 || {
    apt-get update >>"$E2E_CACHE/apt.log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >>"$E2E_CACHE/apt.log" 2>&1
  } || { tail -20 "$E2E_CACHE/apt.log" >&2; return 1; }
}

# Debian's docker.io and the helpers its dockerd-rootless.sh runs: the docker scenario unpacks them.
# docker.io and its CLI (docker-cli) from Debian 13: Docker 26.1, whose dockerd and docker need only
# glibc 2.34 and run on Debian 12. Debian 12's own docker.io is 20.10, which cri-dockerd refuses
# (Docker API 1.42, Docker 23, is its least: Mirantis/cri-dockerd#346). The helpers are Debian 12's.
# PKG@SUITE names a package of another suite.
# shellcheck disable=SC2034 # used by docker-rootless.sh and vm-env.sh, which source this file
DOCKER_DEBS=(docker.io@trixie docker-cli@trixie tini containerd runc rootlesskit slirp4netns)
# deb_dir PKG[@SUITE]: where cached_deb keeps it ($E2E_CACHE/debs, or debs-SUITE).
deb_dir() { case $1 in *@*) echo "$E2E_CACHE/debs-${1#*@}" ;; *) echo "$E2E_CACHE/debs" ;; esac; }
# cached_deb PKG[@SUITE]: the path of PKG's .deb in deb_dir, downloaded there first (apt-get download;
# another suite through its own apt lists in $E2E_CACHE/apt-SUITE, signed as the machine's own are,
# by debian-archive-keyring) when missing.
cached_deb() {
  local deb dir pkg=${1%@*} suite apt=()
  dir=$(deb_dir "$1")
  mkdir -p "$dir"
  deb=$(find "$dir" -name "${pkg}_*.deb" | head -1)
  if [ -z "$deb" ]; then
    if [[ $1 == *@* ]]; then
      suite=${1#*@}
      mkdir -p "$E2E_CACHE/apt-$suite/lists/partial" "$E2E_CACHE/apt-$suite/archives/partial"
      echo "deb http://deb.debian.org/debian $suite main" >"$E2E_CACHE/apt-$suite/sources.list"
      apt=(-o "Dir::Etc::SourceList=$E2E_CACHE/apt-$suite/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State=$E2E_CACHE/apt-$suite" -o "Dir::Cache=$E2E_CACHE/apt-$suite" -o APT::Sandbox::User=root)
      compgen -G "$E2E_CACHE/apt-$suite/lists/*_Packages*" >/dev/null || apt-get "${apt[@]}" update >/dev/null 2>&1
    fi
    (cd "$dir" && { apt-get "${apt[@]}" download "$pkg" >/dev/null 2>&1 || { apt-get "${apt[@]}" update >/dev/null 2>&1 && apt-get "${apt[@]}" download "$pkg" >/dev/null 2>&1; }; })
    deb=$(find "$dir" -name "${pkg}_*.deb" | head -1)
  fi
  [ -n "$deb" ] && echo "$deb"
}

user_uid() { id -u "$E2E_USER"; }
user_home() { getent passwd "$E2E_USER" | cut -d: -f6; }

# as_user CMD...: runs CMD as the test user ($E2E_USER) with a login-like environment. E2E_NS_PID,
# when set, is a process whose mount namespace to enter first (the host route's user manager), and
# its network namespace too when that is not ours (a manager started with E2E_NETNS, the second
# host's). Another user's manager: `E2E_USER=U2 E2E_NS_PID=PID2 as_user CMD...`.
as_user() {
  local u g h ns=()
  u=$(user_uid); g=$(id -g "$E2E_USER"); h=$(user_home)
  if [ -n "${E2E_NS_PID:-}" ]; then
    ns=(nsenter -t "$E2E_NS_PID" -m)
    [ "$(readlink "/proc/$E2E_NS_PID/ns/net")" = "$(readlink /proc/self/ns/net)" ] || ns+=(-n)
  fi
  "${ns[@]}" setpriv --reuid="$u" --regid="$g" --init-groups \
    env -i HOME="$h" USER="$E2E_USER" LOGNAME="$E2E_USER" SHELL=/bin/bash TERM=dumb LANG=C.UTF-8 \
    PATH="$E2E_OPT/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    XDG_RUNTIME_DIR="/run/user/$u" DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$u/bus" \
    ROOTLESS_K8S_NO_UPDATE_CHECK=1 NO_COLOR=1 "$@"
}

# ensure_test_user: the test user ($E2E_USER) with its own subordinate id ranges (as useradd
# allocates them: after the highest range in use, so two test users' ranges never overlap).
ensure_test_user() {
  touch /etc/subuid /etc/subgid
  id "$E2E_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$E2E_USER"
  local f start
  for f in subuid subgid; do
    if ! grep -q "^$E2E_USER:" "/etc/$f"; then
      start=$(awk -F: 'BEGIN{m=100000} {e=$2+$3; if (e>m) m=e} END{print m}' "/etc/$f")
      usermod "--add-${f}s" "$start-$((start + 65535))" "$E2E_USER" 2>/dev/null || echo "$E2E_USER:$start:65536" >>"/etc/$f"
    fi
  done
}
