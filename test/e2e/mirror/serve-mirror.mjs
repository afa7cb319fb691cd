// Serves the e2e mirror (DIR/files, at upstream paths) on 127.0.0.1 (or --host: the join scenario's
// second host reaches it on this host's end of their link), as a plain static server with
// byte ranges (fetch resumes with Range/If-Range) and a request log. Test controls, on the same
// port under /__e2e/: a bandwidth cap (to interrupt a download in flight) and byte counters.
//
//   node serve-mirror.mjs --dir DIR [--host 127.0.0.1] [--port 0] [--port-file FILE] [--log FILE]
import { createReadStream, promises as fsp, appendFileSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import { join, normalize } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    dir: { type: "string" },
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "0" },
    "port-file": { type: "string" },
    log: { type: "string" },
  },
});
if (!values.dir) {
  console.error("usage: serve-mirror.mjs --dir DIR [--host ADDR] [--port N] [--port-file FILE] [--log FILE]");
  process.exit(2);
}
const root = join(values.dir, "files");
let rate = 0; // bytes per second; 0 = unlimited
// artifacts: requests for anything but a release or checksum file (channel .txt, .sha256, .sha256sum,
// .sha512, SHA256SUMS) or a companion's tags (git/matching-refs), which `--kubernetes-version` reads on every run.
const stats = { requests: 0, bytes: 0, ranges: 0, artifacts: 0 };
const RELEASE_FILE = /(\.txt|\.sha256|\.sha256sum|\.sha512|\/SHA256SUMS)$|\/git\/matching-refs\//;

function log(line) {
  if (values.log) appendFileSync(values.log, `${new Date().toISOString()} ${line}\n`);
}

/** Pipes at `rate` bytes per second: each chunk waits for its time slot and for the socket to drain. */
function throttled(stream, res) {
  if (!rate) return stream.pipe(res);
  stream.on("data", (chunk) => {
    stream.pause();
    const drained = res.write(chunk) ? Promise.resolve() : new Promise((r) => res.once("drain", r));
    stats.bytes += chunk.length;
    const slot = new Promise((r) => setTimeout(r, (chunk.length / rate) * 1000));
    Promise.all([drained, slot]).then(() => stream.resume());
  });
  stream.on("end", () => res.end());
  res.on("close", () => stream.destroy());
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/__e2e/rate") {
    rate = Number(url.searchParams.get("bps") ?? 0);
    return res.end(`rate ${rate}\n`);
  }
  if (url.pathname === "/__e2e/stats") return res.end(JSON.stringify(stats) + "\n");
  if (url.pathname === "/__e2e/reset") {
    Object.assign(stats, { requests: 0, bytes: 0, ranges: 0, artifacts: 0 });
    return res.end("reset\n");
  }
  stats.requests++;
  if (!RELEASE_FILE.test(url.pathname)) stats.artifacts++;
  const rel = normalize(decodeURIComponent(url.pathname)).replace(/^(\.\.(\/|$))+/, "");
  const file = join(root, rel);
  const st = await fsp.stat(file).catch(() => null);
  if (!st?.isFile() || !file.startsWith(root)) {
    log(`404 ${req.method} ${url.pathname}`);
    res.writeHead(404).end("not found\n");
    return;
  }
  const etag = `"${st.size}-${Math.floor(st.mtimeMs)}"`;
  const range = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ""));
  const ifRange = req.headers["if-range"];
  if (range && (!ifRange || ifRange === etag)) {
    const start = Number(range[1]);
    const end = range[2] ? Number(range[2]) : st.size - 1;
    if (start >= st.size) {
      res.writeHead(416, { "content-range": `bytes */${st.size}` }).end();
      return;
    }
    stats.ranges++;
    log(`206 ${req.method} ${url.pathname} bytes=${start}-${end}`);
    res.writeHead(206, {
      "content-length": end - start + 1,
      "content-range": `bytes ${start}-${end}/${st.size}`,
      etag,
      "accept-ranges": "bytes",
    });
    if (req.method === "HEAD") return res.end();
    if (!rate) stats.bytes += end - start + 1;
    return throttled(createReadStream(file, { start, end }), res);
  }
  log(`200 ${req.method} ${url.pathname} ${st.size}`);
  res.writeHead(200, { "content-length": st.size, etag, "accept-ranges": "bytes", "last-modified": st.mtime.toUTCString() });
  if (req.method === "HEAD") return res.end();
  if (!rate) stats.bytes += st.size;
  throttled(createReadStream(file), res);
});
server.listen(Number(values.port), values.host, () => {
  const { port } = server.address();
  if (values["port-file"]) writeFileSync(values["port-file"], `${port}\n`);
  console.log(`mirror on http://${values.host}:${port}/ serving ${root}`);
});
for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => server.close(() => process.exit(0)));
