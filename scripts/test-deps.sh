#!/usr/bin/env bash
# The one list of Debian packages the tests need, and their installation (Debian 12).
#   bash scripts/test-deps.sh          what `make test` needs: installed when run as root and missing;
#                                      not root and missing: one line naming the command, exit 1
#   bash scripts/test-deps.sh --e2e    the same, plus what `make e2e` needs (.ci/run uses this)
# Nothing is done when everything is there already (no apt-get update, no output).
set -euo pipefail

# Type check, unit and integration tests, the SEA build (both arches), smoke test and lint.
TEST_PKGS=(shellcheck curl wget tmux openssl
  qemu-user-static binutils binutils-aarch64-linux-gnu libc6-arm64-cross libstdc++6-arm64-cross zsh fish perl
  uidmap libcap2-bin
  systemd containerd rootlesskit slirp4netns
  dbus dbus-user-session iptables nftables libslirp0 python3 iproute2 procps util-linux)
# make e2e (the qemu VM and its image) and make bench.
# crun for mode none, built from Debian trixie's source package (test/e2e/build/debian-source.mjs):
# its build tools and -dev packages, gpgv and the archive keyring to verify the source, xz for Sources.
# CRI-O (test/e2e/build: cgo with libseccomp-dev, pinns with gcc/make) and Debian 12's conmon deb,
# unpacked into the mirror's CRI-O bundle: its library libglib2.0-0 (libsystemd0 comes with systemd).
E2E_PKGS=(debootstrap qemu-system-x86 qemu-utils e2fsprogs hyperfine
  gcc make pkg-config gperf libcap-dev libseccomp-dev libyajl-dev libyajl2 gpgv debian-archive-keyring xz-utils
  libglib2.0-0 passt bzip2)
# passt: pasta, for the runtime × network matrix's pasta cell (Debian 12's build, "unknown version").
# bzip2: busybox's source tarball (.orig.tar.bz2), for the test images' busybox.

pkgs=("${TEST_PKGS[@]}")
case "${1:-}" in
  "") ;;
  --e2e) pkgs+=("${E2E_PKGS[@]}") ;;
  *) echo "usage: bash scripts/test-deps.sh [--e2e]" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null; then
  echo "scripts/test-deps.sh knows Debian's packages only (no dpkg-query here); install the tools it lists by hand" >&2
  exit 1
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# kubectl drives the mutual-TLS test of the admin kubeconfig: the machine's, else Debian's.
command -v kubectl >/dev/null || missing+=(kubernetes-client)

# No udev on this kind of machine (a container): the tun and fuse devices keep mode 0600, and
# slirp4netns (tap) and fuse-overlayfs fail for ordinary users. Debian's udev rules make them 0666.
devices=()
for d in /dev/net/tun /dev/fuse; do
  [ -e "$d" ] && [ "$(( $(stat -c '0%a' "$d") & 0006 ))" -ne 6 ] && devices+=("$d")
done

[ ${#missing[@]} -eq 0 ] && [ ${#devices[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  [ ${#missing[@]} -gt 0 ] && echo "the tests need Debian packages that are not installed (${missing[*]}): run, as root, bash scripts/test-deps.sh" >&2 && exit 1
  # Only the device modes: the tests that need them run as a user that root creates, so they do not run here.
  exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  echo "installing the packages the tests need: ${missing[*]}" >&2
  apt-get install -y --no-install-recommends "${missing[@]}" || { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; }
fi
[ ${#devices[@]} -gt 0 ] && chmod 0666 "${devices[@]}"
exit 0
