// Real HTTP(S) file servers on 127.0.0.1, recording every request so tests can assert what was asked:
// - startServer: files held in memory, with Range / If-Range like a CDN, redirects, and injected
//   faults (dropped connections, 5xx, stalls, throttling); for the download tests;
// - serveDir: the files of a folder as they are on disk (release folders with real binaries).
import { createReadStream, existsSync, statSync } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import { join, normalize } from "node:path";
import { sha256 } from "./hash";
import { listen } from "./net";
import type { TlsMaterial } from "./tls";

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

export async function startServer(opts: { tls?: TlsMaterial } = {}): Promise<TestServer> {
  const files = new Map<string, Served>();
  const faults = new Map<string, Fault[]>();
  const requests: LoggedRequest[] = [];
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

  const { url, port, close } = await listen(createServer(opts.tls, handler));
  return {
    url,
    port,
    requests,
    bytesSent: () => sent,
    maxConcurrent: () => maxOpen,
    serve(path, body) {
      const buf = Buffer.from(body);
      files.set(path, { body: buf, etag: `"${sha256(buf).slice(0, 16)}"` });
    },
    fault(path, fault) {
      faults.set(path, [...(faults.get(path) ?? []), fault]);
    },
    clearFaults: () => faults.clear(),
    close,
  };
}

function createServer(tls: TlsMaterial | undefined, handler: http.RequestListener): http.Server | https.Server {
  return tls ? https.createServer({ key: tls.key, cert: tls.cert }, handler) : http.createServer(handler);
}

export interface StaticServer {
  url: string;
  /** Requests so far, in order: path and User-Agent. */
  requests: { path: string; agent: string }[];
  /** The paths requested so far, in order. */
  paths(): string[];
  close(): Promise<void>;
}

/** Serves the files under `root` on 127.0.0.1, over https with `tls` (GET only; 404 for anything else). */
export async function serveDir(root: string, opts: { tls?: TlsMaterial } = {}): Promise<StaticServer> {
  const requests: StaticServer["requests"] = [];
  const server = createServer(opts.tls, (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    requests.push({ path, agent: req.headers["user-agent"] ?? "" });
    const file = join(root, normalize(path));
    if (req.method !== "GET" || !file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end("not found\n");
      return;
    }
    res.writeHead(200, { "content-length": statSync(file).size, "content-type": "application/octet-stream" });
    createReadStream(file).pipe(res);
  });
  const { url, close } = await listen(server);
  return { url, requests, paths: () => requests.map((r) => r.path), close };
}
