// fetchArtifacts against a real HTTP(S) server on 127.0.0.1, with injected faults. Each test
// asserts what is left on disk: verified blobs only after a matching hash, part files kept for
// a resume (or removed when they cannot help), and what the server saw.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { cacheLayout, listCache } from "../../../cli/fetch/cache";
import { fetchArtifacts, type FetchOptions } from "../../../cli/fetch/fetch";
import type { FetchedArtifact } from "../../../cli/fetch/types";
import { userErrorOf } from "../../helpers/errors";
import { sha256 } from "../../helpers/hash";
import { startServer, type TestServer } from "../../helpers/http-server";
import { startProxy } from "../../helpers/proxy";
import { tempDir } from "../../helpers/temp";
import { makeTestCa, type TlsMaterial } from "../../helpers/tls";
import { randomBody, resolved, testArtifact, UPSTREAM } from "./helpers/artifacts";

const FAST = { retries: 2, retryBaseMs: 5, retryMaxMs: 20, bodyTimeoutMs: 2_000 };

const partials = async (dir: string) => (await listCache(dir)).filter((e) => e.partial);
const blobs = async (dir: string) => (await listCache(dir)).filter((e) => !e.partial);

describe("fetchArtifacts over loopback HTTP", () => {
  let server: TestServer;
  let cacheDir: string;
  const body = randomBody(600_000, 7);
  const art = testArtifact({ id: "etcd", path: "/etcd-io/etcd/releases/download/v1.0.0/etcd.bin", body });
  const get = (opts: Partial<FetchOptions> = {}): Promise<FetchedArtifact[]> =>
    fetchArtifacts([resolved(art)], { cacheDir, mirror: server.url, http: FAST, ...opts, env: {} });

  beforeEach(async () => {
    server = await startServer();
    server.serve("/etcd-io/etcd/releases/download/v1.0.0/etcd.bin", body);
    cacheDir = tempDir();
  });
  afterEach(async () => {
    await server.close();
    rmSync(cacheDir, { recursive: true, force: true });
  });

  it("stores the verified file under its checksum, and a second run asks the server nothing", async () => {
    const [f] = await get();
    expect(f?.file).toBe(join(cacheDir, "blobs", "sha256", sha256(body)));
    expect(readFileSync(f!.file).equals(body)).toBe(true);
    expect(f?.source).toBe("network");
    expect(f?.verification).toContain("sha256 matches the pin from test fixture");
    expect(await partials(cacheDir)).toEqual([]);
    expect(server.requests.map((r) => r.path)).toEqual(["/etcd-io/etcd/releases/download/v1.0.0/etcd.bin"]);

    const before = { requests: server.requests.length, bytes: server.bytesSent() };
    const [again] = await get();
    expect(again?.source).toBe("cache");
    expect(server.requests.length).toBe(before.requests);
    expect(server.bytesSent()).toBe(before.bytes);
  });

  // Every byte that arrived before the drop is kept, even those still queued for the disk (a CI run
  // under load once resumed from 0: the file was not open yet when the connection broke).
  it("resumes with Range and If-Range after the connection drops mid-body, from every byte that arrived", async () => {
    server.fault(art.url.replace(UPSTREAM, ""), { kind: "drop-after", bytes: 200_000, times: 1 });
    const [f] = await get();
    expect(readFileSync(f!.file).equals(body)).toBe(true);
    const [first, second] = server.requests;
    expect(first?.range).toBeUndefined();
    const start = Number(/^bytes=(\d+)-$/.exec(second?.range ?? "")?.[1]);
    expect(start).toBe(200_000);
    expect(second?.ifRange).toMatch(/^"[0-9a-f]+"$/);
    expect(second?.status).toBe(206);
    expect(f?.verification).toContain(`resumed at byte ${start}`);
    expect(await partials(cacheDir)).toEqual([]);
  });

  it("keeps the part file when the retries run out, and the next run resumes it", async () => {
    server.fault(art.url.replace(UPSTREAM, ""), { kind: "drop-after", bytes: 250_000, times: 1 });
    const e = await userErrorOf(get({ http: { ...FAST, retries: 0 } }));
    expect(e.exitCode).toBe(5);
    expect(e.message).toContain("etcd 1.0.0 for amd64");
    const [part] = await partials(cacheDir);
    expect(part?.size).toBeGreaterThan(0);
    expect(part?.size).toBeLessThan(body.length);
    expect(await blobs(cacheDir)).toEqual([]);

    const [f] = await get();
    expect(server.requests.at(-1)?.range).toBe(`bytes=${part?.size}-`);
    expect(readFileSync(f!.file).equals(body)).toBe(true);
    expect(await partials(cacheDir)).toEqual([]);
  });

  it("finishes a part file that is already complete without asking the server", async () => {
    const layout = cacheLayout(cacheDir);
    const c = resolved(art).checksum;
    mkdirSync(join(cacheDir, "partial"), { recursive: true });
    writeFileSync(layout.part(c), body);
    const [f] = await get();
    expect(server.requests).toHaveLength(0);
    expect(f?.file).toBe(layout.blob(c));
    expect(readFileSync(f!.file).equals(body)).toBe(true);
    expect(await partials(cacheDir)).toEqual([]);
  });

  it("starts over when the server ignores Range", async () => {
    server.fault(art.url.replace(UPSTREAM, ""), { kind: "drop-after", bytes: 100_000, times: 1 });
    server.fault(art.url.replace(UPSTREAM, ""), { kind: "no-range" });
    const [f] = await get();
    expect(server.requests.map((r) => r.status)).toEqual([200, 200]);
    expect(readFileSync(f!.file).equals(body)).toBe(true);
  });

  it("retries a 500 with backoff, then succeeds", async () => {
    server.fault(art.url.replace(UPSTREAM, ""), { kind: "status", status: 500, times: 2 });
    const [f] = await get();
    expect(server.requests.map((r) => r.status)).toEqual([500, 500, 200]);
    expect(readFileSync(f!.file).equals(body)).toBe(true);
  });

  it("gives up after a bounded number of attempts on a persistent 503 (exit 5)", async () => {
    server.fault(art.url.replace(UPSTREAM, ""), { kind: "status", status: 503 });
    const e = await userErrorOf(get());
    expect(e.exitCode).toBe(5);
    expect(e.message).toMatch(/HTTP 503 \(3 attempts\)/);
    expect(e.fix).toContain("--bundle");
    expect(server.requests).toHaveLength(3);
    expect(await listCache(cacheDir)).toEqual([]);
  });

  it("names the URL and the version on a 404, without retrying", async () => {
    const missing = testArtifact({ id: "crictl", version: "9.9.9", path: "/kubernetes-sigs/cri-tools/v9.9.9/crictl", body });
    const e = await userErrorOf(fetchArtifacts([resolved(missing)], { cacheDir, mirror: server.url, http: FAST, env: {} }));
    expect(e.exitCode).toBe(5);
    expect(e.message).toBe(`not found (HTTP 404): ${server.url}/kubernetes-sigs/cri-tools/v9.9.9/crictl (crictl 9.9.9 for amd64)`);
    expect(server.requests).toHaveLength(1);
    expect(await listCache(cacheDir)).toEqual([]);
  });

  it("deletes a download whose checksum does not match, naming the expected and actual hashes (exit 4)", async () => {
    const other = randomBody(600_000, 8);
    server.serve(art.url.replace(UPSTREAM, ""), other);
    const e = await userErrorOf(get());
    expect(e.exitCode).toBe(4);
    expect(e.message).toContain(`expected sha256 ${sha256(body)}, got ${sha256(other)}`);
    expect(e.message).toContain("etcd 1.0.0 for amd64");
    expect(await listCache(cacheDir)).toEqual([]);
  });

  it("fails a body that stalls past the inactivity timeout, keeping the part for a resume", async () => {
    server.fault(art.url.replace(UPSTREAM, ""), { kind: "stall-after", bytes: 100_000, times: 1 });
    const e = await userErrorOf(get({ http: { ...FAST, retries: 0, bodyTimeoutMs: 300 } }));
    expect(e.exitCode).toBe(5);
    expect(e.message).toContain("stopped sending data");
    const [part] = await partials(cacheDir);
    expect(part?.size).toBe(100_000);
    const [f] = await get();
    expect(server.requests.at(-1)?.range).toBe("bytes=100000-");
    expect(readFileSync(f!.file).equals(body)).toBe(true);
  });

  it("follows redirects, as GitHub releases redirect to a CDN", async () => {
    server.fault(art.url.replace(UPSTREAM, ""), { kind: "redirect", to: "/cdn/objects/etcd.bin", status: 302 });
    server.serve("/cdn/objects/etcd.bin", body);
    const [f] = await get();
    expect(server.requests.map((r) => `${r.status} ${r.path}`)).toEqual([
      "302 /etcd-io/etcd/releases/download/v1.0.0/etcd.bin",
      "200 /cdn/objects/etcd.bin",
    ]);
    expect(readFileSync(f!.file).equals(body)).toBe(true);
  });

  it("downloads up to 4 files at a time by default", async () => {
    const many = Array.from({ length: 8 }, (_, i) => {
      const b = randomBody(100_000, 20 + i);
      const path = `/many/${i}.bin`;
      server.serve(path, b);
      server.fault(path, { kind: "rate", bytesPerSec: 1_000_000 });
      return resolved(testArtifact({ id: `part${i}`, path, body: b }));
    });
    const got = await fetchArtifacts(many, { cacheDir, mirror: server.url, http: FAST, env: {} });
    expect(got.map((g) => g.artifact.id)).toEqual(many.map((m) => m.id));
    expect(server.maxConcurrent()).toBe(4);
  });

  it("fetches a file once when two artifacts share its checksum", async () => {
    const twin = testArtifact({ id: "etcd-copy", path: "/elsewhere/etcd.bin", body });
    const got = await fetchArtifacts([resolved(art), resolved(twin)], { cacheDir, mirror: server.url, http: FAST, env: {} });
    expect(got.map((g) => [g.artifact.id, g.file])).toEqual([
      ["etcd", join(cacheDir, "blobs", "sha256", sha256(body))],
      ["etcd-copy", join(cacheDir, "blobs", "sha256", sha256(body))],
    ]);
    expect(server.requests).toHaveLength(1);
  });

  it("uses HTTP_PROXY for an http mirror", async () => {
    const proxy = await startProxy();
    try {
      await fetchArtifacts([resolved(art)], { cacheDir, mirror: server.url, http: FAST, env: { HTTP_PROXY: proxy.url } });
      expect(proxy.log).toEqual([`GET ${server.url}${art.url.replace(UPSTREAM, "")}`]);
    } finally {
      await proxy.close();
    }
  });

  it("stops at once when aborted, keeping the part file for the next run (exit 130)", async () => {
    server.fault(art.url.replace(UPSTREAM, ""), { kind: "rate", bytesPerSec: 400_000 });
    const ac = new AbortController();
    let seen = 0;
    const p = get({ signal: ac.signal, progress: { bytes: (_a, n) => (seen += n) >= 50_000 && ac.abort() } });
    const e = await userErrorOf(p);
    expect(e.exitCode).toBe(130);
    const [part] = await partials(cacheDir);
    expect(part?.size).toBeGreaterThan(0);
    expect(await blobs(cacheDir)).toEqual([]);
    server.clearFaults();
    await get();
    expect(server.requests.at(-1)?.range).toBe(`bytes=${part?.size}-`);
  });
});

describe("side files published next to the artifact", () => {
  let server: TestServer;
  let cacheDir: string;
  const body = randomBody(50_000, 3);
  const path = "/containerd/containerd/releases/download/v2.3.4/containerd-static-2.3.4-linux-amd64.tar.gz";
  const withSide = testArtifact({
    id: "containerd",
    path,
    body,
    sideFiles: [{ url: `${UPSTREAM}${path}.sha256sum`, algorithm: "sha256" }],
  });

  beforeEach(async () => {
    server = await startServer();
    server.serve(path, body);
    cacheDir = tempDir();
  });
  afterEach(async () => {
    await server.close();
    rmSync(cacheDir, { recursive: true, force: true });
  });
  const run = () => fetchArtifacts([resolved(withSide)], { cacheDir, mirror: server.url, http: FAST, env: {} });

  it("notes that a sha256sum-style side file agrees with the pin", async () => {
    server.serve(`${path}.sha256sum`, `${sha256(body)}  containerd-static-2.3.4-linux-amd64.tar.gz\n`);
    const [f] = await run();
    expect(f?.verification).toContain("side file containerd-static-2.3.4-linux-amd64.tar.gz.sha256sum agrees");
  });

  it("stops before downloading when the side file disagrees with the pin (exit 4)", async () => {
    server.serve(`${path}.sha256sum`, `${"0".repeat(64)}  containerd-static-2.3.4-linux-amd64.tar.gz\n`);
    const e = await userErrorOf(run());
    expect(e.exitCode).toBe(4);
    expect(e.message).toContain(`says sha256 ${"0".repeat(64)}, the manifest pins ${sha256(body)}`);
    expect(server.requests.map((r) => r.path)).toEqual([`${path}.sha256sum`]);
    expect(await listCache(cacheDir)).toEqual([]);
  });

  it("goes on with the pin when the side file is not published, and says so", async () => {
    const [f] = await run();
    expect(f?.verification).toContain("side file containerd-static-2.3.4-linux-amd64.tar.gz.sha256sum unavailable (HTTP 404)");
    expect(readFileSync(f!.file).equals(body)).toBe(true);
  });
});

describe("https", () => {
  let tlsMaterial: TlsMaterial;
  let server: TestServer;
  let plain: TestServer;
  let cacheDir: string;
  const body = randomBody(80_000, 5);
  const art = testArtifact({ id: "runc", path: "/opencontainers/runc/releases/download/v1.4.3/runc.amd64", body });

  beforeAll(() => {
    tlsMaterial = makeTestCa();
  });
  beforeEach(async () => {
    server = await startServer({ tls: tlsMaterial });
    plain = await startServer();
    server.serve("/opencontainers/runc/releases/download/v1.4.3/runc.amd64", body);
    plain.serve("/opencontainers/runc/releases/download/v1.4.3/runc.amd64", body);
    cacheDir = tempDir();
  });
  afterEach(async () => {
    await server.close();
    await plain.close();
    rmSync(cacheDir, { recursive: true, force: true });
  });

  it("trusts a private CA given with --ca-file", async () => {
    const [f] = await fetchArtifacts([resolved(art)], { cacheDir, mirror: server.url, caFile: tlsMaterial.caFile, http: FAST, env: {} });
    expect(readFileSync(f!.file).equals(body)).toBe(true);
  });

  it("refuses a server whose CA is not trusted, saying how to trust it (exit 5)", async () => {
    const e = await userErrorOf(fetchArtifacts([resolved(art)], { cacheDir, mirror: server.url, http: FAST, env: {} }));
    expect(e.exitCode).toBe(5);
    expect(e.message).toMatch(/TLS certificate of 127\.0\.0\.1:\d+ is not trusted/);
    expect(e.fix).toContain("--ca-file");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a redirect from https to http (exit 4) and asks the http server nothing", async () => {
    server.fault("/opencontainers/runc/releases/download/v1.4.3/runc.amd64", {
      kind: "redirect",
      to: `${plain.url}/opencontainers/runc/releases/download/v1.4.3/runc.amd64`,
    });
    const e = await userErrorOf(
      fetchArtifacts([resolved(art)], { cacheDir, mirror: server.url, caFile: tlsMaterial.caFile, http: FAST, env: {} }),
    );
    expect(e.exitCode).toBe(4);
    expect(e.message).toContain("refused a redirect from https to http");
    expect(plain.requests).toHaveLength(0);
    expect(await listCache(cacheDir)).toEqual([]);
  });

  it("tunnels through HTTPS_PROXY with CONNECT, and bypasses it for NO_PROXY hosts", async () => {
    const proxy = await startProxy();
    try {
      const opts = { cacheDir, mirror: server.url, caFile: tlsMaterial.caFile, http: FAST };
      await fetchArtifacts([resolved(art)], { ...opts, env: { HTTPS_PROXY: proxy.url } });
      expect(proxy.log).toEqual([`CONNECT 127.0.0.1:${server.port}`]);
      rmSync(cacheDir, { recursive: true, force: true });
      await fetchArtifacts([resolved(art)], { ...opts, env: { HTTPS_PROXY: proxy.url, NO_PROXY: "127.0.0.1" } });
      expect(proxy.log).toHaveLength(1);
      expect(server.requests).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });
});

describe("a full disk", () => {
  it("removes the partial download and says how much room is needed (exit 1)", async () => {
    const mnt = tempDir("rk8s-tmpfs-");
    // A 1 MiB file system of its own (the tests run as root, as CI does: a mount that fails fails the test).
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], { stdio: "pipe" });
    const server = await startServer();
    try {
      const body = randomBody(3_000_000, 11);
      server.serve("/big.bin", body);
      const a = testArtifact({ id: "big", path: "/big.bin", body });
      const cacheDir = join(mnt, "cache");
      mkdirSync(cacheDir);
      const e = await userErrorOf(fetchArtifacts([resolved(a)], { cacheDir, mirror: server.url, http: FAST, env: {} }));
      expect(e.exitCode).toBe(1);
      expect(e.message).toContain(`no space left on the device of ${cacheDir}`);
      expect(e.message).toContain("big 1.0.0 for amd64");
      expect(await listCache(cacheDir)).toEqual([]);
      expect(readdirSync(join(cacheDir, "partial"))).toEqual([]);
      expect(existsSync(cacheLayout(cacheDir).lockDir)).toBe(false);
    } finally {
      await server.close();
      execFileSync("umount", [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });
});

it("keeps cache folders private to the user", async () => {
  const server = await startServer();
  const cacheDir = join(tempDir(), "rootless-k8s");
  try {
    const body = randomBody(1000, 2);
    server.serve("/x.bin", body);
    await fetchArtifacts([resolved(testArtifact({ id: "x", path: "/x.bin", body }))], {
      cacheDir,
      mirror: server.url,
      http: FAST,
      env: {},
    });
    expect(statSync(cacheDir).mode & 0o777).toBe(0o700);
  } finally {
    await server.close();
  }
});
