#!/usr/bin/env bash
# Lays out a release folder from a build (dist/ by default), in the layout install.sh and
# `rootless-k8s self-upgrade` download from (see README, "Release layout"):
#   OUT/install.sh
#   OUT/latest.txt                          the newest version, one line ("0.2.0")
#   OUT/<version>/rootless-k8s-linux-<arch> amd64, arm64
#   OUT/<version>/SHA256SUMS                sha256sum format, one line per binary
# Several versions share one OUT; a version already there is never changed (releases are immutable).
# usage: scripts/release.sh [--from DIR] [--version X] [--no-latest] OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "error: $1" >&2; [ -z "${2:-}" ] || echo "fix: $2" >&2; exit "${3:-1}"; }
usage() { echo "usage: scripts/release.sh [--from DIR] [--version X] [--no-latest] OUT" >&2; exit 2; }

# The version a build folder holds: what its host-arch binary prints (the artifact is the truth).
built_version() {
  local from=$1 arch out
  arch=$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
  [ -x "$from/rootless-k8s-linux-$arch" ] || return 0
  out=$(ROOTLESS_K8S_NO_UPDATE_CHECK=1 "$from/rootless-k8s-linux-$arch" --version) ||
    die "$from/rootless-k8s-linux-$arch --version failed"
  echo "${out#rootless-k8s }"
}

main() {
  local from=$root/dist version="" latest=1 out=""
  while [ $# -gt 0 ]; do
    case $1 in
      --from) [ $# -ge 2 ] || usage; from=$2; shift 2 ;;
      --version) [ $# -ge 2 ] || usage; version=$2; shift 2 ;;
      --no-latest) latest=0; shift ;;
      -h | --help) usage ;;
      -*) echo "error: unknown option $1" >&2; usage ;;
      *) [ -z "$out" ] || usage; out=$1; shift ;;
    esac
  done
  [ -n "$out" ] || usage
  [ -f "$from/SHA256SUMS" ] || die "$from/SHA256SUMS is missing" "make build"
  (cd "$from" && sha256sum --quiet --strict -c SHA256SUMS) || die "the binaries in $from do not match their SHA256SUMS" "make build" 4

  local found
  found=$(built_version "$from")
  if [ -n "$version" ] && [ -n "$found" ] && [ "$version" != "$found" ]; then
    die "--version $version, but the binaries in $from are $found"
  fi
  version=${version:-$found}
  [ -n "$version" ] || die "cannot tell the version: $from has no binary for this machine's arch" "pass --version X"
  printf '%s\n' "$version" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$' ||
    die "\"$version\" is not a release version (x.y.z)"

  mkdir -p "$out"
  local dest="$out/$version"
  if [ -e "$dest" ]; then
    cmp -s "$dest/SHA256SUMS" "$from/SHA256SUMS" ||
      die "$dest exists with other binaries; releases are immutable" "release under a new version"
  else
    local tmp="$out/.$version.tmp.$$"
    rm -rf "$tmp"; mkdir "$tmp"
    cp "$from/SHA256SUMS" "$tmp/"
    awk '{ sub(/^\*/, "", $2); print $2 }' "$from/SHA256SUMS" | while read -r name; do cp "$from/$name" "$tmp/$name"; done
    chmod 644 "$tmp"/*; chmod 755 "$tmp"
    mv "$tmp" "$dest"
  fi
  install -m 644 "$root/scripts/install.sh" "$out/.install.sh.tmp" && mv -f "$out/.install.sh.tmp" "$out/install.sh"
  if [ "$latest" = 1 ]; then printf '%s\n' "$version" >"$out/.latest.txt.tmp" && mv -f "$out/.latest.txt.tmp" "$out/latest.txt"; fi
  echo "released $version in $out (latest: $(cat "$out/latest.txt" 2>/dev/null || echo none))"
}

main "$@"
