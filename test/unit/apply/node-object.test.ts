// The labels and taints rootless-k8s owns on the Node object: a merge patch only for what differs,
// never touching anyone else's.
import { describe, expect, it } from "vitest";
import { nodePatch } from "../../../cli/apply/node-object";
import type { NodeView } from "../../../cli/clients/kubernetes";
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
