# shellcheck shell=bash
# Sourced by the benchmarks that run a real node on the host route (install, ports): the e2e's
# prepared tree, the host route's user manager, the loopback mirror, and `rk8s`/FLAGS to install
# the e2e manifest's version from it. Needs root (the host route's test user), like `make e2e`.
# Sets: REPO E2E CLI OUT H BIN KCFG V_INSTALL FLAGS MIRROR_PID; rk8s(), kc(), ratio() (and lib/common.sh's
# helpers); tears everything down on exit.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO=$(cd "$HERE/../.." && pwd)
E2E=$REPO/test/e2e
# shellcheck disable=SC1091 # checked on its own
. "$E2E/lib/common.sh"
need_root
ARCH=$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
CLI=${E2E_CLI:-$REPO/dist/rootless-k8s-linux-$ARCH}
OUT=$E2E_CACHE/bench
mkdir -p "$OUT" && chmod 755 "$OUT"

"$REPO/node_modules/.bin/node" "$E2E/prepare.mjs" --cache "$E2E_CACHE" --opt "$E2E_OPT" --cli "$CLI" >/dev/null || { echo "prepare failed" >&2; exit 1; }
bash "$E2E/host-env.sh" up >/dev/null || { echo "the host route's user manager did not start" >&2; exit 1; }
trap 'bash "$E2E/host-env.sh" down >/dev/null 2>&1; kill "${MIRROR_PID:-}" 2>/dev/null' EXIT
E2E_NS_PID=$(bash "$E2E/host-env.sh" pid)
export E2E_NS_PID
H=$(user_home)
BIN=$H/.local/share/rootless-k8s/versions/current/bin
KCFG=$H/.config/rootless-k8s/admin.kubeconfig
# (RK8S_PATH: folders put before the PATH rootless-k8s sees, e.g. the e2e's pasta)
rk8s() { as_user ${RK8S_PATH:+env PATH="$RK8S_PATH:$E2E_OPT/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"} "$E2E_OPT/bin/rootless-k8s" "$@"; }
kc() { as_user "$BIN/kubectl" --kubeconfig "$KCFG" "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "-"; else if (a / b < 0.1) printf "%.3fx", a / b; else printf "%.2fx", a / b }'; } # ratio A B: A/B, as the tables print it

rm -f "$OUT/port"
setsid "$E2E_OPT/node" "$E2E_OPT/lib/serve-mirror.mjs" --dir "$E2E_OPT/mirror" --port-file "$OUT/port" >/dev/null 2>&1 </dev/null &
MIRROR_PID=$!
for _ in $(seq 1 100); do [ -s "$OUT/port" ] && break; sleep 0.1; done
V_INSTALL=$("$E2E_OPT/node" -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).install' "$E2E_OPT/mirror/versions.json")
# shellcheck disable=SC2034 # used by the benchmarks that source this
FLAGS=(--yes --manifest "$E2E_OPT/mirror/manifests/k8s-$V_INSTALL.json" --mirror "http://127.0.0.1:$(cat "$OUT/port")" --timeout 300)
