// install --node-port-range (issue 40): the API server's --service-node-port-range from the plan,
// kept by upgrade, shown in the plan; bad ranges refused by the one parsing rule.
import { describe, expect, it } from "vitest";
import { optionsFromPlan } from "../../../cli/apply/upgrade";
import { buildPlan } from "../../../cli/plan/index";
import { describePlan } from "../../../cli/plan/describe";
import { DEFAULT_NODE_PORTS, nodePortsOf, parseNodePortRange } from "../../../cli/plan/node-ports";
import { renderNode } from "../../../cli/render/index";
import { generatePki } from "../../../cli/render/pki";
import { baseFacts, upstreamVersions } from "./facts-builder";

describe("parseNodePortRange", () => {
  it.each([
    ["31000-31099", 6443, { first: 31000, last: 31099 }],
    ["1024-2000", 6443, { first: 1024, last: 2000 }],
    ["30000", 6443, "a range FIRST-LAST, e.g. 30000-32767"],
    ["a-b", 6443, "a range FIRST-LAST, e.g. 30000-32767"],
    ["32000-31000", 6443, "it is reversed: 32000 is above 31000"],
    ["80-2000", 6443, "it starts below 1024, where an ordinary user cannot publish"],
    ["60000-70000", 6443, "70000 is above 65535"],
    ["6000-7000", 6443, "it holds the API server's port 6443; choose a range without it, or another --api-port"],
    ["6000-7000", 7443, { first: 6000, last: 7000 }],
  ])("%s (API port %i)", (text, api, want) => {
    expect(parseNodePortRange(text, api)).toEqual(want);
  });
});

describe("the plan's range", () => {
  it("reaches the API server's flags, the plan's words and an upgrade's options", async () => {
    const versions = upstreamVersions();
    const plan = buildPlan(baseFacts(), { nodePortRange: { first: 31000, last: 31099 } }, versions);
    expect(nodePortsOf(plan)).toEqual({ first: 31000, last: 31099 });
    const files = renderNode(plan, await generatePki(plan));
    const api = files.find((f) => f.unit === plan.units.apiServer)!;
    expect(api.content.toString()).toContain("--service-node-port-range=31000-31099");
    expect(describePlan(plan).join("\n")).toMatch(/Services' NodePorts from 31000-31099/);
    expect(optionsFromPlan(plan, {}).nodePortRange).toEqual({ first: 31000, last: 31099 });
    // The default is upstream's, explicit; a plan written before the field reads as the default.
    const plain = buildPlan(baseFacts(), {}, versions);
    expect(plain.network.nodePorts).toEqual(DEFAULT_NODE_PORTS);
    const { nodePorts: _, ...older } = plain.network;
    expect(nodePortsOf({ network: older })).toEqual({ first: 30000, last: 32767 });
  });
});
