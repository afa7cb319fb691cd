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
import { adminKubeconfig, entryDigest, renderKubeconfig, unmergeKubeconfig } from "../../../cli/render/kubeconfig";
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
    expect(() => mergeKubeconfig("clusters: [\n  - name: x\n bad", admin)).toThrow();
    expect(() => mergeKubeconfig("clusters: prod\n", admin)).toThrow(/not a kubeconfig/);
  });

  // What kubectl writes: its own key order, lists at the key's column, null for an empty list.
  const kubectlStyle = `# my clusters
apiVersion: v1
clusters:
- cluster:
    server: https://prod.example:6443 # production
  name: prod
contexts: null
current-context: ""
kind: Config
users: []
`;

  it("keeps the file's comments and style, and fills kubectl's empty lists", () => {
    const r = mergeKubeconfig(kubectlStyle, admin);
    expect(r.content!.startsWith("# my clusters\napiVersion: v1\nclusters:\n- cluster:\n")).toBe(true);
    expect(r.content).toContain("\n    server: https://prod.example:6443 # production\n  name: prod\n- name: rootless-k8s\n");
    const doc = YAML.parse(r.content!) as Record<string, { name: string }[] | string>;
    expect((doc.contexts as { name: string }[]).map((c) => c.name)).toEqual(["rootless-k8s"]);
    expect((doc.users as { name: string }[]).map((c) => c.name)).toEqual(["rootless-k8s-admin"]);
    expect(doc["current-context"]).toBe("rootless-k8s");
    expect(r.content).toContain("\ncurrent-context: rootless-k8s\n");
  });

  it("records the digest of each entry as merged, and knows them again after kubectl reordered their keys", () => {
    const r = mergeKubeconfig(kubectlStyle, admin);
    const doc = YAML.parse(r.content!) as Record<string, { name: string }[]>;
    const entry = (list: string, name: string) => doc[list]!.find((e) => e.name === name)!;
    expect(r.digests).toEqual({
      cluster: entryDigest(entry("clusters", "rootless-k8s")),
      user: entryDigest(entry("users", "rootless-k8s-admin")),
      context: entryDigest(entry("contexts", "rootless-k8s")),
    });
    // kubectl writes each entry's keys sorted (cluster before name): still ours, so a second merge changes nothing.
    const sorted = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sorted)
        : v && typeof v === "object"
          ? Object.fromEntries(
              Object.keys(v)
                .sort()
                .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
            )
          : v;
    const rewritten = YAML.stringify(sorted(doc), { indentSeq: false });
    expect(mergeKubeconfig(rewritten, admin)).toMatchObject({ content: null, renamed: false, digests: r.digests });
    const u = unmergeKubeconfig(rewritten, r.names, r.digests)!;
    expect(u.removed).toEqual(["cluster rootless-k8s", "user rootless-k8s-admin", "context rootless-k8s"]);
    expect(u.kept).toEqual([]);
    expect(u.empty).toBe(false); // the prod cluster is the user's
    expect(YAML.parse(u.content!)).toMatchObject({ clusters: [{ name: "prod" }], users: [], contexts: [] });
  });

  it("takes out only entries whose digest matches, keeps what a remaining context uses, and nothing without digests", () => {
    const r = mergeKubeconfig(kubectlStyle, admin);
    const changed = r.content!.replace("- name: rootless-k8s\n  context:\n", "- name: rootless-k8s\n  context:\n    namespace: dev\n");
    expect(changed).not.toBe(r.content);
    const u = unmergeKubeconfig(changed, r.names, r.digests)!;
    expect(u.content).toBeNull();
    expect(u.kept.map((k) => `${k.kind} ${k.name}: ${k.why}`)).toEqual([
      "context rootless-k8s: changed since install",
      "cluster rootless-k8s: used by context rootless-k8s",
      "user rootless-k8s-admin: used by context rootless-k8s",
    ]);
    const legacy = unmergeKubeconfig(r.content!, r.names, null)!;
    expect(legacy.content).toBeNull();
    expect(legacy.kept.map((k) => k.why)).toEqual(Array(3).fill("the receipt does not record what install merged"));
    expect(unmergeKubeconfig("just some notes\n", r.names, r.digests)).toBeNull();
  });

  it("says a file is empty once ours is out only when nothing of the user's, not even a comment, is left", () => {
    const fresh = mergeKubeconfig(null, admin);
    expect(unmergeKubeconfig(fresh.content!, fresh.names, fresh.digests)).toMatchObject({ empty: true });
    expect(unmergeKubeconfig(`# mine\n${fresh.content!}`, fresh.names, fresh.digests)).toMatchObject({ empty: false });
    expect(unmergeKubeconfig(`${fresh.content!}extensions: [x]\n`, fresh.names, fresh.digests)).toMatchObject({ empty: false });
  });
});
