#!/usr/bin/env bash
# Smoke test of the built binaries (dist/rootless-k8s-linux-*), each copied to a folder outside the
# repo (no node_modules beside it) and run from there:
#   --version              prints "rootless-k8s <package.json version>"
#   doctor --json          exits 0 or 1 and prints one JSON document
#   a fetch from loopback  self-upgrade against a release laid out and signed from dist/ by
#                          scripts/release.sh (ROOTLESS_K8S_SIGNING_KEY: the key the build was made
#                          with; `make test` passes a throwaway one) and served on 127.0.0.1 over
#                          http (--insecure-http): the host binary downloads and verifies (signature,
#                          SHA-256) its own release (--dry-run --force); a foreign one reads latest.txt.
# arm64 runs under qemu-user when it is installed (Debian: qemu-user-static libc6-arm64-cross
# libstdc++6-arm64-cross), and is skipped with the reason when it is not.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
srv=""
trap '[ -z "$srv" ] || kill "$srv" 2>/dev/null || true; rm -rf "$tmp"' EXIT
export ROOTLESS_K8S_NO_UPDATE_CHECK=1 NO_COLOR=1

pass=0 fail=0
check() {
  if [ "$1" = "$2" ]; then pass=$((pass + 1)); else echo "FAIL $3: got '$1', want '$2'"; fail=$((fail + 1)); fi
}
is_json() { node -e 'JSON.parse(require("fs").readFileSync(0, "utf8"))' 2>/dev/null; }

want=$(node -p 'require(process.argv[1]).version' "$root/package.json")
host=$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')

[ -n "${ROOTLESS_K8S_SIGNING_KEY:-}" ] || { echo "error: ROOTLESS_K8S_SIGNING_KEY is not set: the smoke test signs a release with the key dist/ was built with" >&2; echo "fix: run it through make test, which builds and signs with a throwaway key" >&2; exit 2; }
bash "$root/scripts/release.sh" --from "$root/dist" "$tmp/release" >/dev/null
node -e 'const fs = require("fs"), path = require("path"), root = process.argv[1];
  const s = require("http").createServer((q, r) => {
    const f = path.join(root, path.normalize(decodeURIComponent(q.url)));
    if (!f.startsWith(root) || !fs.existsSync(f) || !fs.statSync(f).isFile()) { r.writeHead(404).end(); return; }
    fs.createReadStream(f).pipe(r);
  }).listen(0, "127.0.0.1", () => fs.writeFileSync(process.argv[2], String(s.address().port)));' "$tmp/release" "$tmp/port" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
base="http://127.0.0.1:$(cat "$tmp/port")"

for built in "$root"/dist/rootless-k8s-linux-*; do
  name=$(basename "$built")
  arch=${name##*-}
  mkdir -p "$tmp/$arch"
  bin="$tmp/$arch/rootless-k8s"
  cp "$built" "$bin"
  run=("$bin")
  if [ "$arch" != "$host" ]; then
    if [ "$arch" != arm64 ] || ! command -v qemu-aarch64-static >/dev/null; then
      echo "skip $name: cannot run $arch here (qemu-aarch64-static is not installed: apt-get install qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross)"
      continue
    fi
    run=(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$bin")
  fi
  cd "$tmp/$arch"

  check "$("${run[@]}" --version)" "rootless-k8s $want" "$name --version"

  code=0
  "${run[@]}" doctor --json >doctor.json 2>doctor.err || code=$?
  case $code in 0 | 1) check "$code" "$code" "$name doctor --json exit" ;; *) check "$code" "0 or 1" "$name doctor --json exit ($(head -n 2 doctor.err))" ;; esac
  if is_json <doctor.json; then check json json "$name doctor --json"; else check "not JSON: $(head -c 80 doctor.json)" JSON "$name doctor --json"; fi

  if [ "$arch" = "$host" ]; then
    out=$("${run[@]}" self-upgrade --dry-run --force --to "$want" --insecure-http --base-url "$base" 2>&1) || true
    check "$(echo "$out" | tail -n 1)" "dry run: $want → $want verified (signature and SHA-256); nothing was run or replaced" "$name fetch from loopback (self-upgrade --dry-run)"
  else
    out=$("${run[@]}" self-upgrade --dry-run --insecure-http --base-url "$base" 2>&1) || true
    check "$out" "rootless-k8s $want is up to date (latest release: $want)" "$name fetch from loopback (latest.txt)"
  fi
  cd "$root"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
