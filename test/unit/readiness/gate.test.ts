// The units' start gate (`rootless-k8s wait`, cli/readiness/gate.ts) against real mutual-TLS servers on
// loopback: it returns once the peer answers 200 (after it answered 500 or refused the connection),
// sends the component's own client certificate, gives up at its bound with the last answer, stops at
// once on the signal, and refuses a credential it cannot read (exit 3).
import * as https from "node:https";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { apiGate, etcdGate, waitForGate } from "../../../cli/readiness/gate";
import { POLLED_BOOTSTRAP_HOOKS } from "../../../cli/readiness/bootstrap";
import { ExitCode, InterruptedError, UserError } from "../../../cli/errors";
import { freePort, listen, type Listening } from "../../helpers/net";
import { makeTlsFixture, type TlsFixture } from "../../helpers/tls-fixture";
import { tempDir } from "../../helpers/temp";

let tls: TlsFixture;
let server: Listening;
let failures = 0;
/** Bootstrap hooks not finished yet: /readyz fails unless its query excludes each of them, as the API server's does. */
let pendingHooks: string[] = [];
/** /version answers 503, as before the API server serves. */
let versionDown = false;
const seen: { path: string; cn: string }[] = [];

beforeAll(async () => {
  tls = makeTlsFixture();
  const peer = https.createServer(
    { key: tls.serverKey, cert: tls.serverCert, ca: tls.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      seen.push({ path: req.url ?? "", cn: String((req.socket as import("node:tls").TLSSocket).getPeerCertificate().subject?.CN ?? "") });
      const excluded = new URL(req.url ?? "/", "https://x").searchParams.getAll("exclude");
      const pending = pendingHooks.filter((h) => !excluded.includes(h));
      if (req.url === "/version") {
        if (versionDown) res.writeHead(503).end("not serving yet");
        else res.writeHead(200).end(JSON.stringify({ major: "1", minor: "36", gitVersion: "v1.36.3" }));
      } else if (req.url?.startsWith("/readyz") && pending.length > 0) {
        res.writeHead(500).end(`${pending.map((h) => `[-]${h} failed: not finished`).join("\n")}\nreadyz check failed\n`);
      } else if (failures > 0) {
        failures--;
        res.writeHead(500).end("[-]poststarthook/rbac/bootstrap-roles failed: not finished\nreadyz check failed\n");
      } else res.writeHead(200).end(req.url === "/health" ? '{"health":"true","reason":""}' : "ok");
    },
  );
  server = await listen(peer);
});

afterAll(() => server.close());

describe("waitForGate", () => {
  it("api: polls /readyz with the kubeconfig's client certificate until it answers 200", async () => {
    failures = 3;
    seen.length = 0;
    const r = await waitForGate(await apiGate(tls.kubeconfig(server.url)), 10_000);
    expect(r.polls).toBe(4);
    expect(seen.map((s) => s.path)).toEqual(["/readyz", "/readyz", "/readyz", "/readyz"]);
    expect(new Set(seen.map((s) => s.cn))).toEqual(new Set(["kubernetes-admin"]));
  });

  it("etcd: polls /health with the certificate files given", async () => {
    failures = 1;
    seen.length = 0;
    const target = await etcdGate(server.url, {
      ca: join(tls.dir, "ca.crt"),
      cert: join(tls.dir, "admin.crt"),
      key: join(tls.dir, "admin.key"),
    });
    const r = await waitForGate(target, 10_000);
    expect(r.polls).toBe(2);
    expect(seen.map((s) => s.path)).toEqual(["/health", "/health"]);
  });

  it("a peer that never gets ready: exit 1 at the bound, naming it, its address and the last answer", async () => {
    failures = 1_000;
    const e = await waitForGate(await apiGate(tls.kubeconfig(server.url)), 600).catch((x: unknown) => x);
    failures = 0;
    expect(e).toBeInstanceOf(UserError);
    expect((e as UserError).exitCode).toBe(ExitCode.Failure);
    expect((e as Error).message).toBe(
      `the API server at ${server.url} did not answer /readyz ok within 1 s (last: HTTP 500 readyz check failed)`,
    );
    expect((e as UserError).fix).toMatch(/rootless-k8s logs kube-apiserver/);
  });

  it("nothing listening yet: keeps trying, and says the connection was refused", async () => {
    const port = await freePort();
    const e = await waitForGate(await apiGate(tls.kubeconfig(`https://127.0.0.1:${port}`)), 300).catch((x: unknown) => x);
    expect((e as Error).message).toMatch(/last: ECONNREFUSED\)$/);
  });

  it("stops at once when the unit is stopped (SIGTERM: the signal)", async () => {
    failures = 1_000;
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const e = await waitForGate(await apiGate(tls.kubeconfig(server.url)), 60_000, ac.signal).catch((x: unknown) => x);
    failures = 0;
    expect(e).toBeInstanceOf(InterruptedError);
  });

  describe("a node bootstrapped before (the marker beside etcd's data, cli/readiness/bootstrap.ts)", () => {
    const dir = tempDir("rk8s-gate-");
    const marker = join(dir, "bootstrapped");
    const member = join(dir, "etcd", "member");
    mkdirSync(member, { recursive: true });
    const ino = () => statSync(member).ino;
    const FAST = "/readyz?exclude=poststarthook/rbac/bootstrap-roles&exclude=poststarthook/scheduling/bootstrap-system-priority-classes";

    it("at the version the API server reports, by this etcd: asks /version, then /readyz without the two hooks that poll once a second", async () => {
      writeFileSync(marker, `1.36.3 ${ino()} ${member}\n`);
      pendingHooks = [...POLLED_BOOTSTRAP_HOOKS];
      versionDown = true;
      setTimeout(() => {
        versionDown = false;
      }, 250);
      seen.length = 0;
      const target = await apiGate(tls.kubeconfig(server.url), marker);
      const r = await waitForGate(target, 5_000);
      pendingHooks = [];
      expect(target.path).toBe(FAST);
      // /version until the server serves it, then the readiness path it chose, at once ok.
      const paths = seen.map((s) => s.path);
      expect(paths.at(-1)).toBe(FAST);
      expect(paths.slice(0, -1).every((p) => p === "/version")).toBe(true);
      expect(paths.length).toBeGreaterThanOrEqual(3);
      expect(r.polls).toBe(paths.length - 1);
    });

    it.each([
      ["another version's (an upgrade, a rollback)", () => `1.35.9 ${ino()} ${member}\n`],
      ["another etcd's (its data made anew or restored)", () => `1.36.3 ${ino() + 1} ${member}\n`],
      ["an old one-word marker", () => "1.36.3\n"],
      ["an empty one", () => ""],
      ["none", null],
    ])("marker %s: waits for the whole /readyz", async (_, content) => {
      const m = content === null ? join(dir, "missing") : marker;
      if (content !== null) writeFileSync(marker, content());
      pendingHooks = [...POLLED_BOOTSTRAP_HOOKS];
      seen.length = 0;
      const e = await waitForGate(await apiGate(tls.kubeconfig(server.url), m), 300).catch((x: unknown) => x);
      pendingHooks = [];
      expect((e as Error).message).toMatch(/did not answer \/readyz ok within .* \(last: HTTP 500 readyz check failed\)$/);
      expect(new Set(seen.map((s) => s.path))).toEqual(new Set(["/version", "/readyz"]));
    });
  });

  it("a credential it cannot read: refused (exit 3) with the fix, before any request", async () => {
    const e = await etcdGate(server.url, { ca: join(tls.dir, "missing.crt"), cert: "x", key: "y" }).catch((x: unknown) => x);
    expect((e as UserError).exitCode).toBe(ExitCode.Refused);
    expect((e as Error).message).toMatch(/^cannot read the credential to wait with .*: ENOENT$/);
    expect((e as UserError).fix).toMatch(/rootless-k8s install/);
  });
});
