#!/usr/bin/env bash
# Scenario: `rootless-k8s doctor` against a real rootless Docker. Debian's docker.io (its
# dockerd-rootless.sh, with RootlessKit, slirp4netns, containerd and runc from Debian too) is
# unpacked with dpkg -x (nothing is installed on the host) and started as the test user in a
# transient systemd user unit. Then doctor must see Docker's version, that it is rootless, and its
# cgroup driver (none on cgroup v1), and `install --dry-run --runtime docker` must offer Docker, or
# refuse it for the reason doctor gives. Docker is stopped and its data removed afterwards.
#
#   test/e2e/docker-rootless.sh ROUTE [VERDICT-FILE [run|path|stop]]   (run as root, like scenarios.sh; needs $E2E_OPT)
#
# VERDICT-FILE gets one line for the runtime × network matrix: "offered REASONS" or "refused REASON".
# With E2E_DOCKER_KEEP=1, run leaves Docker running for a node (scenario docker, scenarios/install.sh);
# E2E_DOCKER_STORE=containerd starts it on its containerd image store;
# `path` prints the PATH with Docker's binaries, `stop` stops Docker and removes its data.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091 # lib/common.sh: checked on its own
. "$HERE/lib/common.sh"
ROUTE=${1:?route}
VERDICT=${2:-/dev/null}
ROOTS=$E2E_CACHE/root
U=$(user_uid)
H=$(user_home)
# docker.service: the unit dockerd-rootless-setuptool.sh installs, which a node on --runtime docker
# runs with (the plan's owner unit).
UNIT=docker

# Each package unpacked into $ROOTS/<its .deb's name>, so another version is another folder.
root_of() { local deb; deb=$(cached_deb "$1") && echo "$ROOTS/$(basename "$deb" .deb)"; }

unpack() {
  local p deb r
  for p in "${DOCKER_DEBS[@]}"; do
    deb=$(cached_deb "$p") || { fail docker "cannot download $p (apt-get download)"; return 1; }
    r=$ROOTS/$(basename "$deb" .deb)
    [ -e "$r/.done" ] && continue
    rm -rf "$r" && mkdir -p "$r" && dpkg-deb -x "$deb" "$r" && touch "$r/.done"
  done
  chmod -R a+rX "$ROOTS"
}

docker_path() {
  local p d r out=""
  for p in "${DOCKER_DEBS[@]}"; do
    r=$(root_of "$p")
    for d in usr/bin usr/sbin; do [ -d "$r/$d" ] && out="$out:$r/$d"; done
  done
  echo "${out#:}:/usr/sbin:/usr/bin:/sbin:/bin"
}

stop_docker() {
  as_user systemctl --user stop "$UNIT" >/dev/null 2>&1
  as_user systemctl --user reset-failed "$UNIT" >/dev/null 2>&1
  # Docker's data holds files of the test user's sub-UIDs: remove it the way Docker's docs say.
  [ -d "$H/.local/share/docker" ] && as_user env PATH="$(docker_path)" rootlesskit rm -rf "$H/.local/share/docker"
  rm -rf "$H/.config/docker"
}

main() {
  local path version out json
  unpack || return 1
  path=$(docker_path)
  version=$(dpkg-deb -f "$(cached_deb "${DOCKER_DEBS[0]}")" Version)
  # E2E_DOCKER_STORE=containerd: dockerd's containerd image store, as a user turns it on (Docker 29's default)
  if [ "${E2E_DOCKER_STORE:-}" = containerd ]; then
    as_user mkdir -p "$H/.config/docker" && echo '{"features": {"containerd-snapshotter": true}}' | as_user tee "$H/.config/docker/daemon.json" >/dev/null
  fi
  # E2E_DOCKER_FLAGS: RootlessKit flags for dockerd-rootless.sh (DOCKERD_ROOTLESS_ROOTLESSKIT_FLAGS), as a user sets them in docker.service
  as_user systemd-run --user --unit="$UNIT" --collect -p Delegate=yes -p KillMode=mixed \
    -E PATH="$path" -E XDG_RUNTIME_DIR="/run/user/$U" -E HOME="$H" ${E2E_DOCKER_FLAGS:+-E DOCKERD_ROOTLESS_ROOTLESSKIT_FLAGS="$E2E_DOCKER_FLAGS"} \
    "$(root_of "${DOCKER_DEBS[0]}")/usr/share/docker.io/contrib/dockerd-rootless.sh" >/dev/null 2>&1
  if ! wait_docker "$path"; then
    fail docker "rootless dockerd $version did not start: $(as_user journalctl --user -u "$UNIT" -n 5 --no-pager 2>/dev/null | tail -3 | tr '\n' ' ')"
    stop_docker
    return 1
  fi
  pass docker "rootless dockerd (Debian docker.io $version) runs as $E2E_USER: $(as_user env PATH="$path" DOCKER_HOST="unix:///run/user/$U/docker.sock" docker info --format '{{.ServerVersion}} rootless={{range .SecurityOptions}}{{.}} {{end}}cgroup-driver={{.CgroupDriver}} storage={{.Driver}} {{.DriverStatus}}' 2>&1 | tr -s ' ')"

  # As Docker's rootless docs tell users: DOCKER_HOST points the client at the user's daemon.
  local dh=DOCKER_HOST=unix:///run/user/$U/docker.sock
  json=$(as_user env PATH="$path" "$dh" "$E2E_OPT/bin/rootless-k8s" doctor --json 2>/dev/null)
  # shellcheck disable=SC2016 # JavaScript, not shell
  out=$(echo "$json" | "$E2E_OPT/node" -e '
    const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const find = (o, k) => { if (!o || typeof o !== "object") return undefined; if (k in o) return o[k]; for (const v of Object.values(o)) { const r = find(v, k); if (r !== undefined) return r; } };
    const d = find(j, "docker");
    if (!d) { console.log("no docker facts"); process.exit(1); }
    console.log(`serverVersion=${d.serverVersion} rootless=${d.rootless} cgroupDriver=${d.cgroupDriver}`);
    const ok = d.rootless === true && d.serverVersion && d.cgroupDriver;
    process.exit(ok ? 0 : 1);')
  check docker "doctor sees Docker: $out" test $? = 0
  local want=none
  [ -f /sys/fs/cgroup/cgroup.controllers ] && want=""
  if [ -n "$want" ]; then check docker "doctor reports Docker's cgroup driver as none (cgroup v1, rootless)" grep -q "cgroupDriver=none" <<<"$out"; fi

  out=$(as_user env PATH="$path" "$dh" "$E2E_OPT/bin/rootless-k8s" install --dry-run --json --runtime docker 2>&1)
  local rc=$?
  local verdict
  # shellcheck disable=SC2016 # JavaScript, not shell
  verdict=$(echo "$out" | "$E2E_OPT/node" -e '
    let t = require("fs").readFileSync(0, "utf8");
    try {
      const j = JSON.parse(t);
      const blocks = j.blockingChecks.map((c) => `${c.id}: ${c.summary}`).join("; ");
      console.log(`runtime=${j.plan.runtime.name} version=${j.plan.runtime.version} socket=${j.plan.runtime.docker?.socket} wouldInstall=${j.wouldInstall}${blocks ? ` blocked by: ${blocks}` : ""}; reasons: ${j.plan.runtime.reasons.join(" | ")}`);
    }
    catch { console.log(`refused: ${t.trim().split("\n").join(" ")}`); }')
  if [ $rc = 0 ] && grep -q "runtime=docker .*socket=/run/user/$U/docker.sock wouldInstall=true" <<<"$verdict"; then
    pass docker "install --runtime docker is offered: $verdict"
    echo "offered $verdict" >"$VERDICT"
  elif [ $rc = 3 ] && grep -qE "blocked by: |^refused: .*[Dd]ocker" <<<"$verdict"; then
    pass docker "install --runtime docker is refused, with the reason: $verdict"
    echo "refused ${verdict#refused: }" >"$VERDICT"
  else
    fail docker "install --dry-run --runtime docker (exit $rc): $verdict"
  fi
  [ "${E2E_DOCKER_KEEP:-}" = 1 ] && return
  stop_and_check
}
stop_and_check() {
  stop_docker
  check docker "Docker is stopped and its data removed" test ! -e "$H/.local/share/docker"
}

wait_docker() {
  local _
  for _ in $(seq 1 120); do
    as_user env PATH="$1" DOCKER_HOST="unix:///run/user/$U/docker.sock" docker version >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}

case "${3:-run}" in
  run)
    info docker "route $ROUTE"
    main
    ;;
  path) docker_path ;;
  stop) stop_and_check ;;
  *) echo "usage: $0 ROUTE [VERDICT-FILE [run|path|stop]]" >&2; exit 2 ;;
esac
exit "$E2E_FAILS"
