#!/usr/bin/env bash
# Benchmarks of cli/fetch, each a ratio against a reference measured in the same run (nothing asserts):
#   1. fetch + verify one 512 MiB artifact from loopback, against `curl -o F && sha256sum F`
#      (goal <= 1.0x: the hash runs in the same pass) and against a bare `curl -o F` (goal <= 1.25x);
#   2. 8 artifacts from a server capping each connection at 20 MiB/s: parallel (default 4 at a time)
#      against --concurrency 1 (goal <= 0.35x);
#   3. a re-install from a warm cache: bytes and requests the server saw (goal: zero).
# The rootless-k8s side is `rootless-k8s cache fetch`, the fetch step of install, on the built binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
NODE=node_modules/.bin/node
ARCH=$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
BIN=${RK8S_BIN:-dist/rootless-k8s-linux-$ARCH}
[ -x "$BIN" ] || { echo "no binary at $BIN: run make build first" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is needed (apt-get install curl)" >&2; exit 1; }
RUNS=${RUNS:-5}
WORK=$(mktemp -d /var/tmp/rk8s-bench.XXXXXX)
SERVER_PID=
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

# A loopback file server: /files/<name>, optionally capping each response at RATE bytes/s
# (second argument), and /stats with the bytes and requests served.
cat >"$WORK/server.mjs" <<'EOF'
import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
const [dir, rateArg] = process.argv.slice(2);
const rate = Number(rateArg || 0);
let bytes = 0, requests = 0;
const server = createServer(async (req, res) => {
  if (req.url === "/stats") return res.end(JSON.stringify({ bytes, requests }));
  requests++;
  const file = join(dir, decodeURIComponent(req.url.replace(/^\/files\//, "")));
  let size;
  try { size = statSync(file).size; } catch { res.writeHead(404); return res.end(); }
  res.writeHead(200, { "content-length": size });
  const input = createReadStream(file, { highWaterMark: 1 << 20 });
  if (!rate) {
    input.on("data", (c) => (bytes += c.length));
    return input.pipe(res);
  }
  const started = Date.now();
  let sent = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 64 << 10 })) {
    sent += chunk.length;
    bytes += chunk.length;
    if (!res.write(chunk)) await new Promise((r) => res.once("drain", r));
    const ahead = sent / rate * 1000 - (Date.now() - started);
    if (ahead > 0) await new Promise((r) => setTimeout(r, ahead));
  }
  res.end();
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
EOF

start_server() { # dir [rate]
  "$NODE" "$WORK/server.mjs" "$@" >"$WORK/port" &
  SERVER_PID=$!
  for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
  PORT=$(cat "$WORK/port")
}
stop_server() { kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=; : >"$WORK/port"; }
stats() { curl -s "http://127.0.0.1:$PORT/stats"; }

# manifest FILE ARTIFACT-FILE... : a manifest whose URLs keep the /files/<name> path under a placeholder origin
manifest() {
  local out=$1; shift
  # shellcheck disable=SC2016 # JavaScript, not shell
  "$NODE" -e '
    const { createHash } = require("node:crypto"); const fs = require("node:fs"); const path = require("node:path");
    const [out, ...files] = process.argv.slice(1);
    const artifacts = files.map((f, i) => ({ id: `bench${i}`, component: `bench${i}`, version: "1.0.0",
      url: `https://upstream.invalid/files/${path.basename(f)}`, arch: { amd64: "amd64", arm64: "arm64" }, format: "binary",
      binaries: [{ name: `bench${i}` }],
      checksums: Object.fromEntries(["amd64", "arm64"].map((a) => [a, { algorithm: "sha256", source: "bench",
        value: createHash("sha256").update(fs.readFileSync(f)).digest("hex") }])) }));
    fs.writeFileSync(out, JSON.stringify({ schema: 1, name: "bench", artifacts }));' "$out" "$@"
}

now() { date +%s%N; }
# rounds SETUP FN...: RUNS rounds, each running every function FN once after the untimed SETUP
# (interleaved, so load changes on the machine hit all of them alike); prints "FN median-ns" lines.
rounds() {
  local setup=$1; shift
  local fn t0
  declare -A times=()
  for _ in $(seq "$RUNS"); do
    for fn in "$@"; do
      "$setup"
      t0=$(now); "$fn"; times[$fn]+="$(( $(now) - t0 )) "
    done
  done
  for fn in "$@"; do
    # shellcheck disable=SC2086 # the list is split on purpose
    echo "$fn $(printf '%s\n' ${times[$fn]} | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")"
  done
}
pick() { awk -v k="$1" '$1 == k { print $2 }' <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
secs() { awk -v a="$1" 'BEGIN { printf "%.2f s", a / 1e9 }'; }
rk8s() { XDG_CACHE_HOME="$WORK/xdg" CI=true "$BIN" cache fetch --arch "$ARCH" --manifest "$@" >/dev/null 2>&1; }

echo "binary: $BIN; $RUNS interleaved rounds, medians; load average before: $(cut -d" " -f1-3 /proc/loadavg)"

# 1. One 512 MiB artifact
mkdir -p "$WORK/big" "$WORK/out"
head -c $((512 << 20)) /dev/urandom >"$WORK/big/artifact-512m.bin"
manifest "$WORK/big.json" "$WORK/big/artifact-512m.bin"
start_server "$WORK/big"
URL="http://127.0.0.1:$PORT/files/artifact-512m.bin"
fresh() { rm -rf "$WORK/xdg" "$WORK/out/f"; }
curl_sha() { curl -s -o "$WORK/out/f" "$URL" && sha256sum "$WORK/out/f" >/dev/null; }
curl_only() { curl -s -o "$WORK/out/f" "$URL"; }
rk8s_big() { rk8s "$WORK/big.json" --mirror "http://127.0.0.1:$PORT"; }
res=$(rounds fresh curl_sha curl_only rk8s_big)
t_curl_sha=$(pick curl_sha "$res") t_curl=$(pick curl_only "$res") t_rk8s=$(pick rk8s_big "$res")
stop_server
echo
echo "1. fetch and verify a 512 MiB artifact from loopback"
printf '   %-50s %s\n' "curl -o F && sha256sum F" "$(secs "$t_curl_sha")" "curl -o F (no check)" "$(secs "$t_curl")" "rootless-k8s cache fetch (hash in the same pass)" "$(secs "$t_rk8s")"
echo "   ratio vs curl+sha256sum: $(ratio "$t_rk8s" "$t_curl_sha")x (goal <= 1.00)"
echo "   ratio vs bare curl:      $(ratio "$t_rk8s" "$t_curl")x (goal <= 1.25)"
rm -rf "$WORK/big" "$WORK/out"

# 2. Eight artifacts, each connection capped at 20 MiB/s
mkdir -p "$WORK/eight"
for i in $(seq 0 7); do head -c $((10 << 20)) /dev/urandom >"$WORK/eight/part$i.bin"; done
manifest "$WORK/eight.json" "$WORK"/eight/part*.bin
start_server "$WORK/eight" $((20 << 20))
rk8s_seq() { rk8s "$WORK/eight.json" --mirror "http://127.0.0.1:$PORT" --concurrency 1; }
rk8s_par() { rk8s "$WORK/eight.json" --mirror "http://127.0.0.1:$PORT"; }
res=$(rounds fresh rk8s_seq rk8s_par)
t_seq=$(pick rk8s_seq "$res") t_par=$(pick rk8s_par "$res")
echo
echo "2. 8 x 10 MiB from a server capping each connection at 20 MiB/s"
printf '   %-50s %s\n' "sequential (--concurrency 1)" "$(secs "$t_seq")" "parallel (default, 4 at a time)" "$(secs "$t_par")"
echo "   ratio parallel/sequential: $(ratio "$t_par" "$t_seq")x (goal <= 0.35)"

# 3. Re-install from a warm cache
rm -rf "$WORK/xdg"
rk8s "$WORK/eight.json" --mirror "http://127.0.0.1:$PORT"
before=$(stats)
t0=$(now); rk8s "$WORK/eight.json" --mirror "http://127.0.0.1:$PORT"; t_warm=$(( $(now) - t0 ))
after=$(stats)
stop_server
# shellcheck disable=SC2016 # JavaScript, not shell
"$NODE" -e '
  const [b, a, t] = [JSON.parse(process.argv[1]), JSON.parse(process.argv[2]), Number(process.argv[3])];
  console.log("\n3. re-install from a warm cache (8 x 10 MiB, every file re-hashed)");
  console.log(`   bytes requested from the server: ${a.bytes - b.bytes}, requests: ${a.requests - b.requests} (goal: 0), in ${(t / 1e9).toFixed(2)} s`);' "$before" "$after" "$t_warm"
