// The admin kubeconfig against a real mutual-TLS handshake driven by the real kubectl: a node:https
// server on loopback serves with the rendered API server certificate and requires client
// certificates from the rendered CA. Also the merge into ~/.kube/config, which never replaces an entry.
import { execFile, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:https";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { buildPlan } from "../../../cli/plan";
import type { Plan } from "../../../cli/plan/plan";
import { generatePki, mergeKubeconfig, renderNode, type Pki } from "../../../cli/render/index";
import { adminKubeconfig, renderKubeconfig } from "../../../cli/render/kubeconfig";
import { freePort, listen, type Listening } from "../../helpers/net";
import { tempDir } from "../../helpers/temp";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

const kubectl = ["/usr/bin/kubectl", "/usr/local/bin/kubectl"].find((k) => spawnSync(k, ["version", "--client"]).status === 0);
const dir = tempDir("rk8s-kubeconfig-");

describe.skipIf(!kubectl)("the admin kubeconfig completes a mutual-TLS handshake driven by kubectl", () => {
  let plan: Plan;
  let pki: Pki;
  let server: Listening;
  const seen: string[] = [];

  beforeAll(async () => {
    plan = buildPlan(baseFacts(), { apiPort: await freePort() }, upstreamVersions());
    pki = await generatePki(plan);
    const https = createServer(
      { key: pki.apiServer.key, cert: pki.apiServer.cert, ca: pki.ca.cert, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        seen.push(`${peer.subject.O}/${peer.subject.CN} ${req.url?.split("?")[0]}`);
        res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      },
    );
    server = await listen(https, { port: plan.ports.apiServer });
  }, 60_000);
  afterAll(() => server.close());

  /** kubectl as a child process (async: the TLS server runs in this very process). */
  const run = (kubeconfigFile: string) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      execFile(
        kubectl!,
        ["--kubeconfig", kubeconfigFile, "--request-timeout", "20s", "get", "--raw", "/readyz"],
        { encoding: "utf8", timeout: 30_000, env: { PATH: "/usr/bin:/bin", HOME: dir } },
        (err, stdout, stderr) => {
          if (err && typeof err.code !== "number") return reject(err);
          resolve({ status: err ? (err.code as number) : 0, stdout, stderr });
        },
      );
    });

  it("kubectl reaches /readyz with the rendered file, verifying the server and presenting the admin", async () => {
    const admin = renderNode(plan, pki).find((f) => f.path === plan.paths.adminKubeconfig)!;
    expect(admin.mode).toBe(0o600);
    const file = join(dir, "admin.kubeconfig");
    writeFileSync(file, admin.content, { mode: 0o600 });
    const r = await run(file);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("ok");
    expect(r.status).toBe(0);
    expect(seen, JSON.stringify(seen)).toContain("system:masters/rootless-k8s-admin /readyz");
  });

  it("fails with a client certificate the CA did not sign, and against a server it cannot verify", async () => {
    const stranger = await generatePki(plan); // same plan, other CA
    const file = join(dir, "stranger.kubeconfig");
    writeFileSync(file, renderKubeconfig(adminKubeconfig(plan, { ...pki, admin: stranger.admin })));
    const r1 = await run(file);
    expect(r1.status).not.toBe(0);
    expect(r1.stderr).toMatch(/certificate|tls|handshake|EOF|connection reset/i);
    const trusting = join(dir, "other-ca.kubeconfig");
    writeFileSync(trusting, renderKubeconfig(adminKubeconfig(plan, { ...pki, ca: stranger.ca })));
    const r2 = await run(trusting);
    expect(r2.status).not.toBe(0);
    expect(r2.stderr).toMatch(/certificate signed by unknown authority|x509/i);
  }, 60_000);
});

describe("merging the admin context into ~/.kube/config", () => {
  let admin: Record<string, unknown>;
  beforeAll(async () => {
    const plan = buildPlan(baseFacts(), {}, upstreamVersions());
    admin = adminKubeconfig(plan, await generatePki(plan));
  }, 60_000);

  const existing = YAML.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "prod", cluster: { server: "https://prod.example:6443" } }],
    users: [{ name: "me", user: { token: "secret" } }],
    contexts: [{ name: "prod", context: { cluster: "prod", user: "me" } }],
    "current-context": "prod",
  });

  it("adds a named context and keeps everything else, the current context included", () => {
    const r = mergeKubeconfig(existing, admin);
    const doc = YAML.parse(r.content!) as Record<string, { name: string }[] | string>;
    expect(r.names).toEqual({ cluster: "rootless-k8s", user: "rootless-k8s-admin", context: "rootless-k8s" });
    expect((doc.contexts as { name: string }[]).map((c) => c.name)).toEqual(["prod", "rootless-k8s"]);
    expect(doc["current-context"]).toBe("prod");
    expect(r.content).toContain("token: secret");
  });

  it("changes nothing the second time, and never overwrites an entry of the same name", () => {
    const once = mergeKubeconfig(existing, admin).content!;
    expect(mergeKubeconfig(once, admin)).toMatchObject({ content: null, renamed: false });
    const theirs = existing.replace(/name: prod/g, "name: rootless-k8s");
    const r = mergeKubeconfig(theirs, admin);
    expect(r.renamed).toBe(true);
    expect(r.names.context).toBe("rootless-k8s-2");
    const doc = YAML.parse(r.content!) as { clusters: { name: string; cluster: { server: string } }[] };
    expect(doc.clusters.find((c) => c.name === "rootless-k8s")!.cluster.server).toBe("https://prod.example:6443");
  });

  it("starts a kubeconfig when there is none, with our context current", () => {
    const doc = YAML.parse(mergeKubeconfig(null, admin).content!) as Record<string, unknown>;
    expect(doc["current-context"]).toBe("rootless-k8s");
    expect(doc.kind).toBe("Config");
  });

  it("refuses a file that is not a kubeconfig", () => {
    expect(() => mergeKubeconfig("- a\n- b\n", admin)).toThrow(/not a kubeconfig/);
  });
});
