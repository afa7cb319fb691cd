// The labels and taints rootless-k8s owns on the Node object: a merge patch only for what differs,
// never touching anyone else's. And before a stop, the Node's Ready becomes Unknown, against a real
// mutual-TLS API fixture on loopback (its status subresource honours the resourceVersion precondition).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { markKubeletStopping, nodePatch } from "../../../cli/apply/node-object";
import { apiClient, readKubeconfig, type NodeView } from "../../../cli/clients/kubernetes";
import { type KubeApiFixture, kubeApiFixture } from "../../helpers/kube-api-fixture";
import { makeTlsFixture } from "../../helpers/tls-fixture";
import { buildPlan } from "../../../cli/plan/index";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

const plain = buildPlan(baseFacts(), {}, upstreamVersions());
const tainted = buildPlan(baseFacts(), { taintNone: true }, upstreamVersions());
const view = (labels: Record<string, string>, taints: NodeView["taints"]): NodeView => ({
  name: plain.node.name,
  ready: true,
  conditions: [],
  kubeletVersion: "v1.36.0",
  labels,
  taints,
  podCidr: null,
});

describe("nodePatch", () => {
  it("is null when the node already has the plan's labels and taints", () => {
    expect(nodePatch(view({ ...plain.node.labels, "kubernetes.io/os": "linux" }, []), plain)).toBeNull();
  });
  it("adds the none taint and keeps other taints", () => {
    expect(tainted.node.taints.length).toBe(1);
    const other = { key: "example.com/gpu", value: "x", effect: "NoSchedule" };
    const p = nodePatch(view(tainted.node.labels, [other]), tainted);
    expect(p).toEqual({ spec: { taints: [other, ...tainted.node.taints] } });
  });
  it("removes our taint and our stale labels, with null for a label", () => {
    const p = nodePatch(view({ ...plain.node.labels, "rootless-k8s.io/old": "x", team: "a" }, tainted.node.taints), plain);
    expect(p).toEqual({ metadata: { labels: { "rootless-k8s.io/old": null } }, spec: { taints: [] } });
  });
});

describe("markKubeletStopping (issue 41)", () => {
  let api: KubeApiFixture;
  let client: ReturnType<typeof apiClient>;
  beforeAll(async () => {
    const tls = makeTlsFixture();
    api = await kubeApiFixture(tls);
    client = apiClient(await readKubeconfig(tls.kubeconfig(api.url)));
  });
  afterAll(async () => {
    await api?.close();
  });
  const ready = (name: string, status: string) =>
    api.put("nodes", {
      metadata: { name },
      status: {
        conditions: [
          { type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory" },
          {
            type: "Ready",
            status,
            reason: "KubeletReady",
            lastHeartbeatTime: "2026-12-06T00:00:00Z",
            lastTransitionTime: "2026-12-06T00:00:00Z",
          },
        ],
      },
    });

  it("turns a Ready node's Ready to Unknown, keeping its other conditions and the last heartbeat", async () => {
    ready("n1", "True");
    expect(await markKubeletStopping(client, "n1", new Date("2026-12-06T01:02:03.456Z"))).toBe(true);
    const conds = api.get("nodes", "default", "n1")?.status.conditions;
    expect(conds).toEqual([
      { type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory" },
      {
        type: "Ready",
        status: "Unknown",
        reason: "NodeStatusUnknown",
        message: "Kubelet stopped posting node status (rootless-k8s stop).",
        lastHeartbeatTime: "2026-12-06T00:00:00Z",
        lastTransitionTime: "2026-12-06T01:02:03Z",
      },
    ]);
  });

  it("leaves a node that is not Ready alone, and answers false for a node that does not exist", async () => {
    const before = ready("n2", "False");
    expect(await markKubeletStopping(client, "n2")).toBe(false);
    expect(api.get("nodes", "default", "n2")?.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(await markKubeletStopping(client, "absent")).toBe(false);
  });

  it("sends the resourceVersion it read, so a status the kubelet posted meanwhile is not overwritten", async () => {
    ready("n3", "True");
    const patches = () => api.requests.filter((r) => r.method === "PATCH" && r.url.endsWith("/nodes/n3/status")).length;
    // The kubelet posts between our read and our patch: the fixture bumps the node after each GET.
    const orig = client.get.bind(client);
    const racing = {
      ...client,
      get: async (path: string, t?: number) => {
        const r = await orig(path, t);
        ready("n3", "True");
        return r;
      },
    };
    expect(await markKubeletStopping(racing, "n3")).toBe(false);
    expect(patches()).toBe(1);
    expect(api.get("nodes", "default", "n3")?.status.conditions[1].status).toBe("True");
  });

  it("answers false at once when the API server does not answer", async () => {
    const tls = makeTlsFixture();
    const dead = apiClient(await readKubeconfig(tls.kubeconfig("https://127.0.0.1:9")));
    expect(await markKubeletStopping(dead, "n1")).toBe(false);
  });
});
