#!/usr/bin/env bash
# The bytes a fresh install downloads (issue 32), on the e2e's loopback mirror (make e2e builds it at
# $E2E_OPT/mirror: the Kubernetes binaries built from their Go modules, in upstream's layout):
#   --kubernetes-version X.Y   the six binaries one by one (release/vX.Y.Z/bin/linux/ARCH/NAME)
#                              and their .sha256, plus the companions and their checksum files;
#   --manifest k8s-X.Y.Z.json  the same binaries in one kubernetes-server tarball (gzip).
# Both fill an empty cache with `rootless-k8s cache fetch` (install's fetch step, runtime
# containerd); the mirror counts the bytes and requests it served. A ratio, nothing asserted.
# The mirror's tarball holds only the six binaries; upstream's kubernetes-server-linux-amd64.tar.gz
# also carries kubeadm, kubectl-convert, kube-aggregator, apiextensions-apiserver, mounter,
# kube-log-runner and the control plane's image tars, so upstream's ratio is lower than this one.
set -euo pipefail
cd "$(dirname "$0")/../.."
E2E_OPT=${E2E_OPT:-/opt/rk8s-e2e}
MIRROR=$E2E_OPT/mirror
ARCH=$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
BIN=${RK8S_BIN:-dist/rootless-k8s-linux-$ARCH}
NODE=node_modules/.bin/node
[ -x "$BIN" ] || { echo "error: no binary at $BIN; fix: make build" >&2; exit 1; }
if [ ! -s "$MIRROR/versions.json" ]; then
  echo "not measured: no e2e mirror at $MIRROR (make e2e builds it; or set E2E_OPT)"
  exit 0
fi
V=$("$NODE" -e 'process.stdout.write(require(process.argv[1]).install)' "$MIRROR/versions.json")
WORK=$(mktemp -d /var/tmp/rk8s-bench-dl.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
"$NODE" test/e2e/mirror/serve-mirror.mjs --dir "$MIRROR" --port-file "$WORK/port" >/dev/null 2>&1 &
PID=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
URL=http://127.0.0.1:$(cat "$WORK/port")
stat_of() { "$NODE" -e 'fetch(process.argv[1]).then((r) => r.json()).then((s) => console.log(s.bytes, s.requests))' "$URL/__e2e/stats"; }

# fetch_bytes LABEL FLAGS...: bytes and requests served to fill an empty cache
fetch_bytes() {
  local label=$1 before after
  shift
  before=$(stat_of)
  XDG_CACHE_HOME=$WORK/cache-$label "$BIN" cache fetch --arch "$ARCH" --mirror "$URL" "$@" >/dev/null 2>"$WORK/$label.err" ||
    { echo "error: $label: $(tail -2 "$WORK/$label.err")" >&2; exit 1; }
  after=$(stat_of)
  echo "$((${after% *} - ${before% *})) $((${after#* } - ${before#* }))"
}
read -r one one_req < <(fetch_bytes one-by-one --kubernetes-version "${V%.*}")
read -r tar tar_req < <(fetch_bytes tarball --manifest "$MIRROR/manifests/k8s-$V.json")
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
printf '%-44s %14s %9s\n' "fresh install's download (Kubernetes $V)" bytes requests
printf '%-44s %14s %9s\n' "--kubernetes-version ${V%.*} (binaries one by one)" "$(mib "$one")" "$one_req"
printf '%-44s %14s %9s\n' "--manifest (the mirror's 6-binary tarball)" "$(mib "$tar")" "$tar_req"
awk -v a="$one" -v b="$tar" 'BEGIN { printf "ratio one-by-one / tarball: %.2fx\n", a / b }'
