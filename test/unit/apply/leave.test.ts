// A worker leaving its cluster (uninstall of a joined node): against a real HTTPS server on
// loopback that keeps the node's pods and records every request, with the worker's client read from
// the kubelet's kubeconfig as in production. Cordon, evict what a drain evicts (not DaemonSet or
// mirror pods), wait for them to go, delete the Node; a refusal becomes a note naming what to run.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import * as https from "node:https";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { leaveCluster, podsToEvict } from "../../../cli/apply/leave";
import { buildPlan } from "../../../cli/plan/index";
import { workerPlan } from "../../../cli/plan/worker";
import { layout } from "../../../cli/render/layout";
import { listen, type Listening } from "../../helpers/net";
import { tempDir } from "../../helpers/temp";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";
import { makeTlsFixture, type TlsFixture } from "../../helpers/tls-fixture";

const pod = (name: string, extra: Record<string, unknown> = {}) => ({
  metadata: { name, namespace: "e2e", ...extra },
  status: { phase: "Running" },
});
const WEB = pod("web");
const DB = pod("db");
const DS = pod("proxy", { ownerReferences: [{ kind: "DaemonSet" }] });
const MIRROR = pod("static", { annotations: { "kubernetes.io/config.mirror": "x" } });

let tls: TlsFixture;
let api: Listening;
const seen: string[] = [];
let pods = [WEB, DB, DS, MIRROR];
let deleteStatus = 200;
let budgetAsked = false;

function handle(req: IncomingMessage, res: ServerResponse) {
  seen.push(`${req.method} ${req.url}`);
  const send = (status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  req.resume();
  req.on("end", () => {
    if (req.method === "PATCH" && req.url === "/api/v1/nodes/w1") return send(200, { kind: "Node" });
    if (req.method === "GET" && req.url?.startsWith("/api/v1/pods?fieldSelector=spec.nodeName%3Dw1")) return send(200, { items: pods });
    const evict = /^\/api\/v1\/namespaces\/e2e\/pods\/([a-z]+)\/eviction$/.exec(req.url ?? "");
    // "budget" is refused once (its budget allows it a second later), "guarded" always
    if (req.method === "POST" && evict?.[1] === "budget" && !budgetAsked) {
      budgetAsked = true;
      return send(429, { kind: "Status", message: "Cannot evict pod as it would violate the pod's disruption budget." });
    }
    if (req.method === "POST" && evict?.[1] === "guarded")
      return send(429, { kind: "Status", message: "Cannot evict pod as it would violate the pod's disruption budget." });
    if (req.method === "POST" && evict) {
      // "slow" is accepted and never goes (a finalizer that does not finish)
      if (evict[1] !== "slow") pods = pods.filter((p) => p.metadata.name !== evict[1]);
      return send(201, { kind: "Status", status: "Success" });
    }
    if (req.method === "DELETE" && req.url === "/api/v1/nodes/w1")
      return deleteStatus === 200
        ? send(200, { kind: "Node" })
        : send(deleteStatus, { kind: "Status", message: "a node may delete only its own Node object" });
    send(404, { kind: "Status", message: "not found" });
  });
}

const home = tempDir("rk8s-leave-");
const base = buildPlan(baseFacts(), { nodeName: "w1", prefix: path.join(home, "prefix") }, upstreamVersions());

/** The control plane's parameters both workers here joined with. */
const CLUSTER = {
  pods: "10.244.0.0/16",
  services: "10.96.0.0/16",
  firstServiceIP: "10.96.0.1",
  dns: null,
  kubernetes: base.versions.components.kubernetes!,
};

beforeAll(async () => {
  tls = makeTlsFixture();
  api = await listen(https.createServer({ cert: tls.serverCert, key: tls.serverKey, ca: tls.ca, requestCert: true }, handle));
});
afterAll(() => api.close());

function joined() {
  const plan = workerPlan(base, {
    server: api.url,
    caPem: tls.ca.toString(),
    caHash: `sha256:${"d".repeat(64)}`,
    cluster: CLUSTER,
    nodeIP: "198.51.100.2",
  });
  const file = layout(plan).kubeconfigs.kubelet;
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, readFileSync(tls.kubeconfig(api.url)));
  return plan;
}

describe("podsToEvict", () => {
  it("leaves the node's own pods (DaemonSet, mirror) and finished ones", () => {
    const done = { ...pod("job"), status: { phase: "Succeeded" } };
    expect(podsToEvict([WEB, DS, MIRROR, done]).map((p) => p.metadata.name)).toEqual(["web"]);
  });
});

describe("leaveCluster", () => {
  it("cordons, evicts the node's workloads, waits for them, deletes the Node", async () => {
    seen.length = 0;
    const out = await leaveCluster(joined(), { drainTimeoutMs: 10_000 });
    expect(out).toEqual({ done: ["node w1 drained (2 pods evicted)", `Node w1 deleted from ${api.url}`], notes: [] });
    expect(seen[0]).toBe("PATCH /api/v1/nodes/w1");
    expect(seen.filter((s) => s.startsWith("POST"))).toEqual([
      "POST /api/v1/namespaces/e2e/pods/web/eviction",
      "POST /api/v1/namespaces/e2e/pods/db/eviction",
    ]);
    expect(seen.at(-1)).toBe("DELETE /api/v1/nodes/w1");
  });

  it("an eviction a disruption budget refuses is asked again each second, as kubectl drain does", async () => {
    pods = [WEB, pod("budget")];
    budgetAsked = false;
    seen.length = 0;
    const out = await leaveCluster(joined(), { drainTimeoutMs: 10_000 });
    expect(out).toEqual({ done: ["node w1 drained (2 pods evicted)", `Node w1 deleted from ${api.url}`], notes: [] });
    expect(seen.filter((x) => x === "POST /api/v1/namespaces/e2e/pods/budget/eviction")).toHaveLength(2);
  });

  it("a drain that cannot finish (a disruption budget, a pod slow to go) is a note, and the Node is still deleted (#44)", async () => {
    pods = [WEB, pod("guarded"), pod("slow")];
    seen.length = 0;
    let stopped = false;
    const out = await leaveCluster(joined(), { drainTimeoutMs: 1500, beforeDelete: async () => void (stopped = true) });
    expect(out.done).toEqual([`Node w1 deleted from ${api.url}`]);
    expect(out.notes).toEqual([
      "the drain of node w1 did not finish (2 pod(s) still on the node after 2 s: e2e/guarded (eviction refused: HTTP 429: Cannot evict pod as it would violate the pod's disruption budget.), e2e/slow): what is left on it goes with the Node; pods a controller owns are made anew elsewhere",
    ]);
    expect(seen.filter((x) => x === "POST /api/v1/namespaces/e2e/pods/guarded/eviction").length).toBeGreaterThanOrEqual(2);
    expect(seen.filter((x) => x === "POST /api/v1/namespaces/e2e/pods/slow/eviction")).toHaveLength(1);
    expect(stopped).toBe(true);
    expect(seen.at(-1)).toBe("DELETE /api/v1/nodes/w1");
  });

  it("a refused delete is a note with the commands to run on the control plane, never an error", async () => {
    pods = [WEB];
    deleteStatus = 403;
    try {
      const out = await leaveCluster(joined(), { drainTimeoutMs: 10_000 });
      expect(out.done).toEqual(["node w1 drained (1 pod evicted)"]);
      expect(out.notes[0]).toMatch(/HTTP 403: a node may delete only its own Node object.*kubectl delete node w1/);
    } finally {
      deleteStatus = 200;
    }
  });

  it("a worker whose kubelet never got its certificate: nothing to do there, said so", async () => {
    const plan = workerPlan(buildPlan(baseFacts(), { nodeName: "w2", prefix: path.join(home, "other") }, upstreamVersions()), {
      server: "https://192.0.2.2:6443",
      caPem: "x",
      caHash: `sha256:${"d".repeat(64)}`,
      cluster: CLUSTER,
    });
    expect(await leaveCluster(plan)).toEqual({ done: [], notes: [expect.stringMatching(/never got its certificate/)] });
  });
});
