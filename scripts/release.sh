#!/usr/bin/env bash
# Lays out a release folder from a build (dist/ by default), in the layout install.sh and
# `rootless-k8s self-upgrade` download from (see docs/binary.md, "Release layout"):
#   OUT/install.sh
#   OUT/latest.txt                          the newest version, one line ("0.2.0")
#   OUT/<version>/rootless-k8s-linux-<arch> amd64, arm64
#   OUT/<version>/VERSION                   the version, one line: SHA256SUMS lists it, so the
#                                           signature covers the version (a base cannot serve one
#                                           signed release under another's name)
#   OUT/<version>/SHA256SUMS                sha256sum format, one line per binary, then VERSION's
#   OUT/<version>/SHA256SUMS.sig            ed25519 signature of SHA256SUMS (64 raw bytes)
# Several versions share one OUT; a version already there is never changed (releases are immutable).
#
# Signing: the ed25519 private key (PEM) is read from the file ROOTLESS_K8S_SIGNING_KEY names. It must
# lie outside this repository and be readable by its owner only; without it the release is refused.
# Its public key is compiled into the binaries (scripts/bundle.mjs, from the same variable; checked
# here) and written into OUT/install.sh. --throwaway-key (tests only) signs with a fresh key made in
# a temporary folder and deleted afterwards: such a release verifies with nothing but itself.
# usage: scripts/release.sh [--from DIR] [--version X] [--no-latest] [--throwaway-key] OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "error: $1" >&2; [ -z "${2:-}" ] || echo "fix: $2" >&2; exit "${3:-1}"; }
usage() { echo "usage: scripts/release.sh [--from DIR] [--version X] [--no-latest] [--throwaway-key] OUT" >&2; exit 2; }

# The pinned Node of the build (node_modules/.bin), else the node on PATH: it signs and derives keys.
node_bin() {
  if [ -x "$root/node_modules/.bin/node" ]; then echo "$root/node_modules/.bin/node"; else command -v node || die "node is not installed" "make deps"; fi
}

# Checks the signing key file (outside the repo, private, ed25519) and prints its public key (base64 SPKI DER).
public_key_of() {
  local key=$1 real mode
  [ -f "$key" ] || die "the signing key $key does not exist" "set ROOTLESS_K8S_SIGNING_KEY to the release key's PEM file"
  real=$(realpath "$key")
  case $real in "$root"/*) die "the signing key $key lies inside the repository" "keep it outside the checkout (it must never be committed)" ;; esac
  mode=$(stat -c %a "$real")
  case $mode in *00) ;; *) die "the signing key $key is readable by others (mode $mode)" "chmod 600 $key" ;; esac
  "$(node_bin)" -e '
    const c = require("node:crypto"), fs = require("node:fs");
    const k = c.createPrivateKey(fs.readFileSync(process.argv[1]));
    if (k.asymmetricKeyType !== "ed25519") { console.error("not an ed25519 key"); process.exit(1); }
    process.stdout.write(c.createPublicKey(k).export({ format: "der", type: "spki" }).toString("base64"));
  ' "$real" || die "the signing key $key is not an ed25519 private key in PEM" "make one with: openssl genpkey -algorithm ed25519 -out KEY.pem"
}

# verify PUBKEY FILE: whether FILE.sig is PUBKEY's signature of FILE.
verify() {
  [ -f "$2.sig" ] || return 1
  "$(node_bin)" -e '
    const c = require("node:crypto"), fs = require("node:fs");
    const [pub, file] = process.argv.slice(1);
    const key = c.createPublicKey({ key: Buffer.from(pub, "base64"), format: "der", type: "spki" });
    process.exit(c.verify(null, fs.readFileSync(file), key, fs.readFileSync(file + ".sig")) ? 0 : 1);
  ' "$1" "$2"
}

# sign KEY FILE: writes FILE.sig, the raw ed25519 signature of FILE.
sign() {
  "$(node_bin)" -e '
    const c = require("node:crypto"), fs = require("node:fs");
    const [key, file] = process.argv.slice(1);
    fs.writeFileSync(file + ".sig", c.sign(null, fs.readFileSync(file), c.createPrivateKey(fs.readFileSync(key))));
  ' "$1" "$2"
}

# release_sums FROM VERSION: the release's SHA256SUMS, the build's and then the line of the VERSION
# file (the version and a newline), which puts the version under the signature.
release_sums() {
  cat "$1/SHA256SUMS"
  printf '%s  VERSION\n' "$(printf '%s\n' "$2" | sha256sum | cut -d ' ' -f 1)"
}

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
  local from=$root/dist version="" latest=1 out="" throwaway=0
  while [ $# -gt 0 ]; do
    case $1 in
      --from) [ $# -ge 2 ] || usage; from=$2; shift 2 ;;
      --version) [ $# -ge 2 ] || usage; version=$2; shift 2 ;;
      --no-latest) latest=0; shift ;;
      --throwaway-key) throwaway=1; shift ;;
      -h | --help) usage ;;
      -*) echo "error: unknown option $1" >&2; usage ;;
      *) [ -z "$out" ] || usage; out=$1; shift ;;
    esac
  done
  [ -n "$out" ] || usage
  local key=${ROOTLESS_K8S_SIGNING_KEY:-}
  if [ "$throwaway" = 1 ]; then
    [ -z "$key" ] || die "--throwaway-key and ROOTLESS_K8S_SIGNING_KEY both given" "drop one: --throwaway-key is for tests only" 2
    throwaway_dir=$(mktemp -d)
    trap 'rm -rf "${throwaway_dir:-}"' EXIT
    key=$throwaway_dir/throwaway.pem
    "$(node_bin)" -e 'const c = require("node:crypto"); require("node:fs").writeFileSync(process.argv[1], c.generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });' "$key"
    echo "warning: signing with a throwaway key (tests only): this release verifies with no published key" >&2
  fi
  [ -n "$key" ] || die "ROOTLESS_K8S_SIGNING_KEY is not set: a release must be signed" "set ROOTLESS_K8S_SIGNING_KEY to the ed25519 release key's PEM file (kept outside the repository), or pass --throwaway-key for a test release" 3
  local pub
  pub=$(public_key_of "$key")
  [ -f "$from/SHA256SUMS" ] || die "$from/SHA256SUMS is missing" "make build"
  (cd "$from" && sha256sum --quiet --strict -c SHA256SUMS) || die "the binaries in $from do not match their SHA256SUMS" "make build" 4

  local found
  found=$(built_version "$from")
  if [ -n "$version" ] && [ -n "$found" ] && [ "$version" != "$found" ]; then
    die "--version $version, but the binaries in $from are $found"
  fi
  version=${version:-$found}
  if [ "$throwaway" = 0 ]; then
    # The binaries must carry this key, or they could not verify the next release.
    awk '{ sub(/^\*/, "", $2); print $2 }' "$from/SHA256SUMS" | while read -r name; do
      grep -aqF "$pub" "$from/$name" || die "$from/$name does not carry the release key of $key" "build with the same key: ROOTLESS_K8S_SIGNING_KEY=$key make release"
    done
  fi
  [ -n "$version" ] || die "cannot tell the version: $from has no binary for this machine's arch" "pass --version X"
  printf '%s\n' "$version" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$' ||
    die "\"$version\" is not a release version (x.y.z)"

  mkdir -p "$out"
  local dest="$out/$version"
  if [ -e "$dest" ]; then
    cmp -s "$dest/SHA256SUMS" <(release_sums "$from" "$version") ||
      die "$dest exists with other binaries; releases are immutable" "release under a new version"
    verify "$pub" "$dest/SHA256SUMS" ||
      die "$dest/SHA256SUMS.sig does not verify with the key of $key" "release with the key that signed $version, or under a new version"
  else
    local tmp="$out/.$version.tmp.$$"
    rm -rf "$tmp"; mkdir "$tmp"
    release_sums "$from" "$version" >"$tmp/SHA256SUMS"
    printf '%s\n' "$version" >"$tmp/VERSION"
    sign "$key" "$tmp/SHA256SUMS"
    awk '{ sub(/^\*/, "", $2); print $2 }' "$from/SHA256SUMS" | while read -r name; do cp "$from/$name" "$tmp/$name"; done
    chmod 644 "$tmp"/*; chmod 755 "$tmp"
    mv "$tmp" "$dest"
  fi
  # install.sh carries the public key: a mirror that swaps the binaries cannot swap the key with them.
  sed "s|^ROOTLESS_K8S_RELEASE_KEY=.*|ROOTLESS_K8S_RELEASE_KEY=$pub|" "$root/scripts/install.sh" >"$out/.install.sh.tmp"
  grep -qxF "ROOTLESS_K8S_RELEASE_KEY=$pub" "$out/.install.sh.tmp" || die "scripts/install.sh has no ROOTLESS_K8S_RELEASE_KEY= line to fill in"
  chmod 644 "$out/.install.sh.tmp" && mv -f "$out/.install.sh.tmp" "$out/install.sh"
  if [ "$latest" = 1 ]; then printf '%s\n' "$version" >"$out/.latest.txt.tmp" && mv -f "$out/.latest.txt.tmp" "$out/latest.txt"; fi
  echo "released $version in $out (latest: $(cat "$out/latest.txt" 2>/dev/null || echo none))"
}

main "$@"
