// Hostile servers on loopback (issue 16, defect 6): a body far longer than the pin, a Content-Length
// that disagrees with the pin, a server that trickles bytes, and a manifest that never ends. Each
// asserts what reached the disk (never more bytes than pinned) and the one-line error with its
// exit code; the deadline test uses a small configured deadline, not a long wait.
import { existsSync, readdirSync } from "node:fs";
import * as http from "node:http";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fetchArtifacts } from "../../../cli/fetch/fetch";
import { createHttpClient } from "../../../cli/fetch/http";
import { loadManifest } from "../../../cli/fetch/manifest";
import type { ManifestArtifact } from "../../../cli/fetch/types";
import { runCli } from "../../helpers/cli";
import { userErrorFrom, userErrorOf } from "../../helpers/errors";
import { listen } from "../../helpers/net";
import { tempDir } from "../../helpers/temp";
import { randomBody, resolved, testArtifact } from "./helpers/artifacts";

const FAST = { retries: 2, retryBaseMs: 5, retryMaxMs: 20, bodyTimeoutMs: 5_000 };
const PATH = "/hostile/releases/download/v1.0.0/tool.bin";
const NO_TRACE = /\bat .*\.(js|ts|cjs):\d+/;

/** A server that answers every GET with `handler`, counting requests and body bytes it wrote. */
async function hostile(handler: (res: http.ServerResponse, sent: (n: number) => void) => void) {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((_req, res) => {
    requests++;
    handler(res, (n) => (bytes += n));
  });
  const { url, close } = await listen(server);
  return { url, close, requests: () => requests, bytes: () => bytes };
}

function pinnedSize(a: ManifestArtifact, size: number): ManifestArtifact {
  const c = a.checksums.amd64!;
  return { ...a, checksums: { amd64: { ...c, size } } };
}

describe("downloads from a hostile server", () => {
  let cacheDir: string;
  let close: (() => Promise<void>) | undefined;
  beforeEach(() => {
    cacheDir = tempDir();
  });
  afterEach(async () => {
    await close?.();
    close = undefined;
  });
  const leftovers = () =>
    ["partial", "blobs"].flatMap((d) =>
      existsSync(join(cacheDir, d)) ? readdirSync(join(cacheDir, d), { recursive: true }).map(String) : [],
    );

  it("stops an endless body at the pinned size: nothing past it is written (exit 4, no retry)", async () => {
    const body = randomBody(25, 3);
    const art = pinnedSize(testArtifact({ id: "tool", path: PATH, body }), body.length);
    // No Content-Length (chunked), and 64 KiB chunks without end: 300 MiB would follow if we read on.
    const s = await hostile((res, sent) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) sent(chunk.length);
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    });
    close = s.close;
    let written = 0;
    const e = await userErrorOf(
      fetchArtifacts([resolved(art)], { cacheDir, mirror: s.url, http: FAST, env: {}, progress: { bytes: (_a, n) => (written += n) } }),
    );
    expect(e.exitCode).toBe(4);
    expect(e.message).toContain("refused the download of tool 1.0.0 for amd64");
    expect(e.message).toContain("more than the pinned 25 bytes");
    expect(written).toBeLessThanOrEqual(25);
    expect(s.requests()).toBe(1);
    expect(s.bytes()).toBeLessThan(300 << 20);
    expect(leftovers().filter((f) => !f.endsWith("sha256"))).toEqual([]);
  });

  it("refuses a Content-Length that differs from the pinned size before writing a byte (exit 4)", async () => {
    const body = randomBody(25, 4);
    const art = pinnedSize(testArtifact({ id: "tool", path: PATH, body }), body.length);
    const big = randomBody(300_000, 5);
    const s = await hostile((res, sent) => {
      res.writeHead(200, { "content-length": big.length });
      res.end(big);
      sent(big.length);
    });
    close = s.close;
    let written = 0;
    const e = await userErrorOf(
      fetchArtifacts([resolved(art)], { cacheDir, mirror: s.url, http: FAST, env: {}, progress: { bytes: (_a, n) => (written += n) } }),
    );
    expect(e.exitCode).toBe(4);
    expect(e.message).toContain("the server announces 300000 bytes, the manifest pins 25");
    expect(written).toBe(0);
    expect(s.requests()).toBe(1);
    expect(readdirSync(join(cacheDir, "partial"))).toEqual([]);
  });

  it("writes no more than the announced Content-Length when no size is pinned", async () => {
    const body = randomBody(1000, 6);
    const art = testArtifact({ id: "tool", path: PATH, body });
    // Announces 10 bytes, then pours 1 MiB more into the socket.
    const s = await hostile((res, sent) => {
      res.writeHead(200, { "content-length": 10 });
      res.write(body.subarray(0, 10));
      res.socket?.write(Buffer.alloc(1 << 20, 0x42));
      sent(10 + (1 << 20));
      res.end();
    });
    close = s.close;
    let written = 0;
    const e = await userErrorOf(
      fetchArtifacts([resolved(art)], {
        cacheDir,
        mirror: s.url,
        http: { ...FAST, retries: 0 },
        env: {},
        progress: { bytes: (_a, n) => (written += n) },
      }),
    );
    expect(e.exitCode).toBe(4);
    expect(written).toBeLessThanOrEqual(10);
  });

  it("cuts off a server that trickles bytes once the configured deadline passes, keeping the part (exit 5)", async () => {
    const body = randomBody(200_000, 7);
    const art = testArtifact({ id: "tool", path: PATH, body });
    const s = await hostile((res, sent) => {
      res.writeHead(200, { "content-length": body.length });
      let i = 0;
      const t = setInterval(() => {
        if (res.destroyed) return clearInterval(t);
        res.write(body.subarray(i, i + 1));
        sent(1);
        i++;
      }, 50);
      res.on("close", () => clearInterval(t));
    });
    close = s.close;
    const started = Date.now();
    // The same settings as ROOTLESS_K8S_DOWNLOAD_GRACE=0.4 and ROOTLESS_K8S_DOWNLOAD_MIN_RATE=10K.
    const e = await userErrorOf(
      fetchArtifacts([resolved(art)], {
        cacheDir,
        mirror: s.url,
        http: FAST,
        env: { ROOTLESS_K8S_DOWNLOAD_GRACE: "0.4", ROOTLESS_K8S_DOWNLOAD_MIN_RATE: "10K" },
      }),
    );
    const took = Date.now() - started;
    expect(e.exitCode).toBe(5);
    expect(e.message).toMatch(
      /^download of tool 1\.0\.0 for amd64 too slow: \d+ B in [\d.]+ s from http:\/\/127\.0\.0\.1:\d+\/hostile\/.*, below 10 KiB\/s after a 0\.4 s grace/,
    );
    expect(e.fix).toContain("ROOTLESS_K8S_DOWNLOAD_MIN_RATE");
    expect(took).toBeGreaterThanOrEqual(400);
    expect(took).toBeLessThan(3_000);
    // A deadline ends the file, not one attempt: no retry.
    expect(s.requests()).toBe(1);
    expect(readdirSync(join(cacheDir, "partial")).length).toBeGreaterThan(0);
  });

  it("lets a download that keeps up with the minimum rate finish past the grace", async () => {
    const body = randomBody(60_000, 8);
    const art = testArtifact({ id: "tool", path: PATH, body });
    // 6 KiB every 100 ms (about 60 KiB/s) for a second: longer than the 0.3 s grace, above 10 KiB/s.
    const s = await hostile((res) => {
      res.writeHead(200, { "content-length": body.length });
      let i = 0;
      const t = setInterval(() => {
        if (res.destroyed) return clearInterval(t);
        res.write(body.subarray(i, i + 6000));
        i += 6000;
        if (i >= body.length) {
          clearInterval(t);
          res.end();
        }
      }, 100);
    });
    close = s.close;
    const started = Date.now();
    const [f] = await fetchArtifacts([resolved(art)], {
      cacheDir,
      mirror: s.url,
      http: { ...FAST, deadlineGraceMs: 300, minRateBytesPerSec: 10 * 1024 },
      env: {},
    });
    expect(Date.now() - started).toBeGreaterThan(300);
    expect(f?.size).toBe(body.length);
  });
});

describe("the download deadline settings", () => {
  it("reads ROOTLESS_K8S_DOWNLOAD_GRACE and ROOTLESS_K8S_DOWNLOAD_MIN_RATE, with defaults", async () => {
    const c = await createHttpClient({ env: { ROOTLESS_K8S_DOWNLOAD_GRACE: "2.5", ROOTLESS_K8S_DOWNLOAD_MIN_RATE: "1M" } });
    expect(c.settings).toMatchObject({ deadlineGraceMs: 2500, minRateBytesPerSec: 1 << 20 });
    await c.close();
    const d = await createHttpClient({ env: {} });
    expect(d.settings).toMatchObject({ deadlineGraceMs: 60_000, minRateBytesPerSec: 32 * 1024 });
    await d.close();
  });

  it("refuses a malformed value in one line (exit 2)", async () => {
    const e = await userErrorOf(createHttpClient({ env: { ROOTLESS_K8S_DOWNLOAD_MIN_RATE: "fast" } }));
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe("ROOTLESS_K8S_DOWNLOAD_MIN_RATE=fast is not bytes per second, e.g. 32K or 1M");
  });
});

describe("a manifest that never ends", () => {
  it("is read with a size cap: --manifest /dev/zero is refused (exit 2)", () => {
    const e = userErrorFrom(() => loadManifest({ file: "/dev/zero" }));
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe("manifest /dev/zero: is larger than 4 MiB, so it is not a manifest");
  });

  it("gives the CLI a one-line error, fast", async () => {
    const r = await runCli(["components", "--manifest", "/dev/zero"], { env: { XDG_CACHE_HOME: tempDir() }, timeoutMs: 10_000 });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([
      "error: manifest /dev/zero: is larger than 4 MiB, so it is not a manifest",
      "fix: pass the path of a components manifest (a JSON file of a few kilobytes; docs/manifest.md)",
    ]);
    expect(r.stderr).not.toMatch(NO_TRACE);
  });
});

describe("redirects away from http(s)", () => {
  for (const to of ["file:///etc/passwd", "data:application/octet-stream;base64,AAAA"]) {
    it(`refuses a redirect to ${to.split(":")[0]}: at once, without a retry (exit 4)`, async () => {
      const body = randomBody(100, 9);
      const art = testArtifact({ id: "tool", path: PATH, body });
      const s = await hostile((res) => {
        res.writeHead(302, { location: to }).end();
      });
      const e = await userErrorOf(fetchArtifacts([resolved(art)], { cacheDir: tempDir(), mirror: s.url, http: FAST, env: {} }));
      await s.close();
      expect(e.exitCode).toBe(4);
      expect(e.message).toBe(`refused a redirect to a ${to.split(":")[0]}: URL from ${s.url}${PATH}`);
      expect(s.requests()).toBe(1);
    });
  }
});
