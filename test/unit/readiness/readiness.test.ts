// Readiness against a real mutual-TLS server on loopback: /readyz first, then the node's Ready
// condition, with the admin client cert from a kubeconfig; timeouts, Ctrl-C and failed units.
import { readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import * as https from "node:https";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, followingApiClient, readKubeconfig } from "../../../cli/clients/kubernetes";
import { NotReadyError, waitForReady } from "../../../cli/readiness/readiness";
import { InterruptedError, UserError } from "../../../cli/errors";
import { listen, type Listening } from "../../helpers/net";
import { makeLeaf } from "../../helpers/tls";
import { makeTlsFixture, type TlsFixture } from "../../helpers/tls-fixture";

let tls: TlsFixture;
let server: Listening;
let url: string;
const seen: { path: string; cn: string }[] = [];
let readyzFailures = 0;
let nodeState: "absent" | "notready" | "ready" = "absent";
let account = true;
/** The Ready condition's lastHeartbeatTime; null: none. */
let heartbeat: string | null = null;
/** The node's spec.podCIDR; null: not given yet. */
let podCidr: string | null = null;

function node(ready: boolean) {
  return {
    kind: "Node",
    apiVersion: "v1",
    metadata: { name: "n1", labels: { "rootless-k8s.io/resource-isolation": "none" } },
    ...(podCidr ? { spec: { podCIDR: podCidr } } : {}),
    status: {
      conditions: [
        {
          type: "Ready",
          status: ready ? "True" : "False",
          reason: ready ? "KubeletReady" : "KubeletNotReady",
          ...(heartbeat ? { lastHeartbeatTime: heartbeat } : {}),
        },
      ],
      nodeInfo: { kubeletVersion: "v1.36.0" },
    },
  };
}

beforeAll(async () => {
  tls = makeTlsFixture();
  const api = https.createServer(
    { key: tls.serverKey, cert: tls.serverCert, ca: tls.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const cn = (req.socket as import("node:tls").TLSSocket).getPeerCertificate().subject?.CN ?? "";
      seen.push({ path: req.url ?? "", cn: String(cn) });
      if (req.url === "/readyz") {
        if (readyzFailures > 0) {
          readyzFailures--;
          res.writeHead(500).end("[-]etcd failed: reason withheld\nreadyz check failed\n");
        } else res.writeHead(200).end("ok");
        return;
      }
      if (req.url === "/api/v1/nodes/n1") {
        if (nodeState === "absent") res.writeHead(404).end(JSON.stringify({ kind: "Status", code: 404 }));
        else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(node(nodeState === "ready")));
        return;
      }
      if (req.url === "/api/v1/namespaces/default/serviceaccounts/default") {
        if (account) res.writeHead(200, { "content-type": "application/json" }).end('{"kind":"ServiceAccount"}');
        else res.writeHead(404).end(JSON.stringify({ kind: "Status", code: 404 }));
        return;
      }
      res.writeHead(404).end();
    },
  );
  server = await listen(api);
  url = server.url;
});

afterAll(() => server.close());

describe("readKubeconfig", () => {
  it("takes the server, CA and client pair of the current context", async () => {
    const c = await readKubeconfig(tls.kubeconfig(url));
    expect(c.server).toBe(url);
    expect(c.ca.equals(tls.ca)).toBe(true);
    expect(c.cert?.equals(tls.clientCert)).toBe(true);
  });
});

describe("followingApiClient", () => {
  it("uses the rotated client certificate once the kubelet repoints kubelet-client-current.pem, as an agent that runs for months must", async () => {
    // As the kubelet keeps it: kubelet-client-<stamp>.pem holds the certificate and the key, and
    // kubelet-client-current.pem is a symlink it moves to the new pair when it rotates.
    const d = tls.dir;
    makeLeaf(d, "ca", "node-old", "/O=system:nodes/CN=system:node:old", "extendedKeyUsage=clientAuth\n");
    makeLeaf(d, "ca", "node-new", "/O=system:nodes/CN=system:node:new", "extendedKeyUsage=clientAuth\n");
    const pair = (n: string) => Buffer.concat([readFileSync(join(d, `${n}.crt`)), readFileSync(join(d, `${n}.key`))]);
    writeFileSync(join(d, "kubelet-client-1.pem"), pair("node-old"), { mode: 0o600 });
    writeFileSync(join(d, "kubelet-client-2.pem"), pair("node-new"), { mode: 0o600 });
    const current = join(d, "kubelet-client-current.pem");
    symlinkSync(join(d, "kubelet-client-1.pem"), current);
    const kubeconfig = join(d, "kubelet.kubeconfig");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        `clusters: [{name: c, cluster: {server: "${url}", certificate-authority: "${join(d, "ca.crt")}"}}]`,
        `users: [{name: u, user: {client-certificate: "${current}", client-key: "${current}"}}]`,
        "contexts: [{name: x, context: {cluster: c, user: u}}]",
        "current-context: x",
        "",
      ].join("\n"),
    );
    const lines: string[] = [];
    const client = await followingApiClient(kubeconfig, (l) => lines.push(l), new AbortController().signal);
    seen.length = 0;
    expect((await client.get("/readyz")).status).toBe(200);
    expect((await client.get("/readyz")).status).toBe(200);
    expect(seen.map((s) => s.cn)).toEqual(["system:node:old", "system:node:old"]);
    expect(lines).toEqual([]);
    // The kubelet's move: a new symlink renamed over the old one.
    symlinkSync(join(d, "kubelet-client-2.pem"), `${current}.tmp`);
    renameSync(`${current}.tmp`, current);
    expect((await client.get("/readyz")).status).toBe(200);
    expect(seen.at(-1)?.cn).toBe("system:node:new");
    expect(lines).toEqual([`${kubeconfig} changed (a rotated certificate?): its new credential is used from now on`]);
    // A pair that is not whole yet keeps the credential in use (and is looked at again next time).
    writeFileSync(join(d, "kubelet-client-3.pem"), readFileSync(join(d, "node-old.crt")), { mode: 0o600 });
    symlinkSync(join(d, "kubelet-client-3.pem"), `${current}.tmp`);
    renameSync(`${current}.tmp`, current);
    expect((await client.get("/readyz")).status).toBe(200);
    expect(seen.at(-1)?.cn).toBe("system:node:new");
    writeFileSync(join(d, "kubelet-client-3.pem"), pair("node-old"));
    expect((await client.get("/readyz")).status).toBe(200);
    expect(seen.at(-1)?.cn).toBe("system:node:old");
  });
});

describe("waitForReady", () => {
  it("waits for /readyz, then for the node to register and turn Ready, then for the default ServiceAccount, as the admin user", async () => {
    readyzFailures = 2;
    nodeState = "absent";
    account = false;
    seen.length = 0;
    const phases: string[] = [];
    const client = apiClient(await readKubeconfig(tls.kubeconfig(url)));
    setTimeout(() => (nodeState = "notready"), 300);
    setTimeout(() => (nodeState = "ready"), 700);
    setTimeout(() => (account = true), 1000);
    const r = await waitForReady({ client, nodeName: "n1", timeoutMs: 10_000, pollMs: 50, onPhase: (p) => phases.push(p) });
    expect(r.node.ready).toBe(true);
    expect(r.node.kubeletVersion).toBe("v1.36.0");
    expect(r.node.labels["rootless-k8s.io/resource-isolation"]).toBe("none");
    expect(phases).toEqual(["api", "node", "account"]);
    expect(r.nodeMs).toBeGreaterThanOrEqual(r.apiMs);
    expect(seen.filter((s) => s.path === "/readyz").length).toBe(3);
    expect(seen.filter((s) => s.path.endsWith("/serviceaccounts/default")).length).toBeGreaterThan(1);
    expect(new Set(seen.map((s) => s.cn))).toEqual(new Set(["kubernetes-admin"]));
  });

  it("needsRange: a node Ready before the controller-manager gave it a range is waited for until it has one (#33)", async () => {
    readyzFailures = 0;
    nodeState = "ready";
    account = true;
    podCidr = null;
    const client = apiClient(await readKubeconfig(tls.kubeconfig(url)));
    const early = await waitForReady({ client, nodeName: "n1", timeoutMs: 400, pollMs: 50, needsRange: true }).catch((e: unknown) => e);
    expect((early as Error).message).toContain("Ready, no spec.podCIDR yet");
    setTimeout(() => (podCidr = "10.244.0.0/24"), 300);
    const r = await waitForReady({ client, nodeName: "n1", timeoutMs: 10_000, pollMs: 50, needsRange: true });
    expect(r.node.podCidr).toBe("10.244.0.0/24");
    podCidr = null;
  });

  it("times out naming the phase and what it saw last", async () => {
    readyzFailures = 0;
    nodeState = "notready";
    const client = apiClient(await readKubeconfig(tls.kubeconfig(url)));
    const e = await waitForReady({ client, nodeName: "n1", timeoutMs: 400, pollMs: 50 }).catch((x) => x);
    expect(e).toBeInstanceOf(NotReadyError);
    expect(e.phase).toBe("node");
    expect(e.message).toMatch(/node did not become Ready within 0 s \(last: Ready=False \(KubeletNotReady\)\)/);
  });

  it("a Ready node whose default namespace gets no ServiceAccount times out in that phase, naming the controller-manager", async () => {
    readyzFailures = 0;
    nodeState = "ready";
    account = false;
    const client = apiClient(await readKubeconfig(tls.kubeconfig(url)));
    const e = await waitForReady({ client, nodeName: "n1", timeoutMs: 400, pollMs: 50 }).catch((x) => x);
    account = true;
    expect(e).toBeInstanceOf(NotReadyError);
    expect(e.phase).toBe("account");
    expect(e.message).toMatch(
      /the node is Ready, but the default namespace got no ServiceAccount within 0 s \(last: no ServiceAccount default\/default yet\)/,
    );
    expect(e.fix).toContain("rootless-k8s logs kube-controller-manager");
  });

  it("after a kubelet restart, a Ready posted before it does not count until the new kubelet posts one (stop/start, rollback)", async () => {
    readyzFailures = 0;
    account = true;
    nodeState = "ready";
    const restartedAt = Date.now();
    // The old kubelet's Ready, a minute before the restart, in whole seconds as the kubelet writes it.
    heartbeat = new Date(restartedAt - 60_000).toISOString().replace(/\.\d+Z$/, "Z");
    const client = apiClient(await readKubeconfig(tls.kubeconfig(url)));
    const timedOut = await waitForReady({ client, nodeName: "n1", timeoutMs: 300, pollMs: 50, freshSince: restartedAt }).catch((x) => x);
    expect(timedOut).toBeInstanceOf(NotReadyError);
    expect(timedOut.message).toContain(`Ready=True as posted at ${heartbeat}, before the kubelet started again`);
    // The new kubelet posts within the same second as the restart: whole seconds count.
    setTimeout(() => (heartbeat = new Date(restartedAt).toISOString().replace(/\.\d+Z$/, "Z")), 300);
    const t0 = Date.now();
    const r = await waitForReady({ client, nodeName: "n1", timeoutMs: 10_000, pollMs: 50, freshSince: restartedAt });
    expect(r.node.ready).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    // Without a restart the same old Ready is the node's current state.
    heartbeat = new Date(restartedAt - 60_000).toISOString();
    expect((await waitForReady({ client, nodeName: "n1", timeoutMs: 2000, pollMs: 50 })).node.ready).toBe(true);
    heartbeat = null;
  });

  it("never gets past the handshake with a client cert from another CA", async () => {
    readyzFailures = 0;
    const client = apiClient(await readKubeconfig(tls.kubeconfig(url, { stranger: true })));
    const e = await waitForReady({ client, nodeName: "n1", timeoutMs: 300, pollMs: 50 }).catch((x) => x);
    expect(e).toBeInstanceOf(NotReadyError);
    expect(e.phase).toBe("api");
    expect(e.lastSeen).not.toMatch(/HTTP/);
  });

  it("stops at once on Ctrl-C (AbortSignal)", async () => {
    nodeState = "absent";
    const client = apiClient(await readKubeconfig(tls.kubeconfig(url)));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 150);
    // Without the abort this would wait 10 minutes, far past the test's own limit.
    const e = await waitForReady({ client, nodeName: "n1", timeoutMs: 600_000, pollMs: 50, signal: ac.signal }).catch((x) => x);
    expect(e).toBeInstanceOf(InterruptedError);
  });

  it("stops when the probe reports a failed unit", async () => {
    nodeState = "absent";
    const client = apiClient(await readKubeconfig(tls.kubeconfig(url)));
    let calls = 0;
    const probe = async () => {
      if (++calls === 3) throw new UserError("unit rootless-k8s-kubelet.service failed");
    };
    const e = await waitForReady({ client, nodeName: "n1", timeoutMs: 60_000, pollMs: 20, probe, probeEveryMs: 0 }).catch((x) => x);
    expect(e.message).toBe("unit rootless-k8s-kubelet.service failed");
  });
});
