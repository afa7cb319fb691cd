// A real HTTP(S) file server on 127.0.0.1 for the fetch tests: Range / If-Range like a CDN,
// redirects, and injected faults (dropped connections, 5xx, stalls, throttling). It records
// every request, so tests can assert what was asked (e.g. that a resume sent Range).
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type Fault =
  /** Send this many body bytes, then cut the connection (for the first `times` requests). */
  | { kind: "drop-after"; bytes: number; times?: number }
  /** Answer with this status instead of the file (for the first `times` requests). */
  | { kind: "status"; status: number; times?: number }
  /** Send this many body bytes, then nothing more (the socket stays open). */
  | { kind: "stall-after"; bytes: number; times?: number }
  /** Redirect to `to` (absolute or a path on this server). */
  | { kind: "redirect"; to: string; status?: number }
  /** Send at most this many bytes per second on each response. */
  | { kind: "rate"; bytesPerSec: number }
  /** Ignore Range requests (always 200 with the whole file). */
  | { kind: "no-range" };

export interface LoggedRequest {
  method: string;
  path: string;
  range: string | undefined;
  ifRange: string | undefined;
  status: number;
}

interface Served {
  body: Buffer;
  etag: string;
}

export interface TestServer {
  readonly url: string;
  readonly port: number;
  readonly requests: LoggedRequest[];
  /** Body bytes written to clients so far. */
  bytesSent(): number;
  /** Connections open at the same time, at most (for the parallelism test). */
  maxConcurrent(): number;
  serve(path: string, body: Buffer | string): void;
  fault(path: string, fault: Fault): void;
  clearFaults(): void;
  close(): Promise<void>;
}

export interface TlsMaterial {
  dir: string;
  caCert: string;
  caFile: string;
  key: string;
  cert: string;
}

/** A test CA and a server certificate for 127.0.0.1 / localhost, made with openssl. */
export function makeTestCa(): TlsMaterial {
  const dir = mkdtempSync(join(tmpdir(), "rk8s-ca-"));
  const run = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=rootless-k8s test CA", "-keyout", "ca.key", "-out", "ca.crt"]);
  run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key", "-out", "server.csr"]);
  writeFileSync(join(dir, "ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n");
  run(["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "server.crt"]);
  return {
    dir,
    caFile: join(dir, "ca.crt"),
    caCert: readFileSync(join(dir, "ca.crt"), "utf8"),
    key: readFileSync(join(dir, "server.key"), "utf8"),
    cert: readFileSync(join(dir, "server.crt"), "utf8"),
  };
}

export async function startServer(opts: { tls?: TlsMaterial } = {}): Promise<TestServer> {
  const files = new Map<string, Served>();
  const faults = new Map<string, Fault[]>();
  const requests: LoggedRequest[] = [];
  const sockets = new Set<Socket>();
  let sent = 0;
  let open = 0;
  let maxOpen = 0;

  const handler = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    open++;
    maxOpen = Math.max(maxOpen, open);
    let counted = true;
    const done = () => {
      if (counted) open--;
      counted = false;
    };
    res.on("finish", done);
    res.on("close", done);
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const log: LoggedRequest = {
      method: req.method ?? "GET",
      path,
      range: req.headers.range,
      ifRange: req.headers["if-range"] as string | undefined,
      status: 0,
    };
    requests.push(log);
    const list = faults.get(path) ?? [];
    const take = (kind: Fault["kind"]) => {
      const f = list.find((x) => x.kind === kind && (!("times" in x) || x.times === undefined || x.times > 0));
      if (f && "times" in f && f.times !== undefined) f.times--;
      return f;
    };
    const status = take("status") as Extract<Fault, { kind: "status" }> | undefined;
    if (status) {
      log.status = status.status;
      res.writeHead(status.status, { "content-type": "text/plain" }).end(`injected ${status.status}\n`);
      return;
    }
    const redirect = take("redirect") as Extract<Fault, { kind: "redirect" }> | undefined;
    if (redirect) {
      log.status = redirect.status ?? 302;
      res.writeHead(log.status, { location: redirect.to }).end();
      return;
    }
    const file = files.get(path);
    if (!file) {
      log.status = 404;
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    let start = 0;
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    const ifRange = req.headers["if-range"];
    const rangeOk = m && !list.some((f) => f.kind === "no-range") && (ifRange === undefined || ifRange === file.etag);
    if (rangeOk) {
      start = Number(m[1]);
      if (start >= file.body.length) {
        log.status = 416;
        res.writeHead(416, { "content-range": `bytes */${file.body.length}` }).end();
        return;
      }
      log.status = 206;
      res.writeHead(206, {
        "content-length": file.body.length - start,
        "content-range": `bytes ${start}-${file.body.length - 1}/${file.body.length}`,
        etag: file.etag,
        "accept-ranges": "bytes",
      });
    } else {
      log.status = 200;
      res.writeHead(200, { "content-length": file.body.length, etag: file.etag, "accept-ranges": "bytes" });
    }
    const drop = take("drop-after") as Extract<Fault, { kind: "drop-after" }> | undefined;
    const stall = take("stall-after") as Extract<Fault, { kind: "stall-after" }> | undefined;
    const rate = list.find((f) => f.kind === "rate") as Extract<Fault, { kind: "rate" }> | undefined;
    const limit = drop?.bytes ?? stall?.bytes ?? Infinity;
    const chunk = rate ? Math.max(1024, Math.floor(rate.bytesPerSec / 20)) : 256 * 1024;
    let pos = start;
    let written = 0;
    while (pos < file.body.length && !res.destroyed) {
      const n = Math.min(chunk, file.body.length - pos, limit - written);
      if (n <= 0) break;
      if (rate) await new Promise((r) => setTimeout(r, (n / rate.bytesPerSec) * 1000));
      const ok = res.write(file.body.subarray(pos, pos + n));
      pos += n;
      written += n;
      sent += n;
      if (!ok) await new Promise((r) => res.once("drain", r));
    }
    if (drop && written >= drop.bytes) {
      await new Promise((r) => setTimeout(r, 20));
      res.socket?.destroy();
      return;
    }
    if (stall && written >= stall.bytes) return; // never end: the client's inactivity timeout must fire
    res.end();
  };

  const server = opts.tls ? https.createServer({ key: opts.tls.key, cert: opts.tls.cert }, handler) : http.createServer(handler);
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${opts.tls ? "https" : "http"}://127.0.0.1:${port}`,
    port,
    requests,
    bytesSent: () => sent,
    maxConcurrent: () => maxOpen,
    serve(path, body) {
      const buf = Buffer.from(body);
      files.set(path, { body: buf, etag: `"${createHash("sha256").update(buf).digest("hex").slice(0, 16)}"` });
    },
    fault(path, fault) {
      faults.set(path, [...(faults.get(path) ?? []), fault]);
    },
    clearFaults: () => faults.clear(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
export const sha512 = (b: Buffer | string) => createHash("sha512").update(b).digest("hex");
