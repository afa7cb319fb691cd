// Whether a node enforces NetworkPolicies (cli/plan/network-policy.ts), and what `status` says of it
// (cli/inspect/netpol-status.ts): on by default with kube-proxy's tool, off with the flag, not
// possible without iptables and nft, without br_netfilter or with --runtime docker; and at run
// time, the enforcer not running or its last pass refused is "not enforced", never silence.
import { describe, expect, it } from "vitest";
import type { NetworkPolicyState } from "../../../cli/agents/network-policy";
import { networkPolicyView } from "../../../cli/inspect/netpol-status";
import { buildPlan } from "../../../cli/plan/index";
import { decideNetworkPolicy } from "../../../cli/plan/network-policy";
import { baseFacts, upstreamVersions, withFacts } from "./facts-builder";

describe("the plan's NetworkPolicy decision", () => {
  it("enforces by default, with iptables where the host has it, and runs the unit", () => {
    const plan = buildPlan(baseFacts(), {}, upstreamVersions());
    expect(plan.networkPolicy).toMatchObject({ enforced: true, backend: "iptables", why: null });
    expect(plan.units.networkPolicy).toBe("rootless-k8s-netpol.service");
  });

  it("writes nftables where kube-proxy does (no iptables, nft present)", () => {
    const f = withFacts(baseFacts(), (x) => {
      x.runtimes.iptables = null;
      x.runtimes.nft = { path: "/usr/sbin/nft", version: "1.0.9", raw: "nftables v1.0.9" } as never;
    });
    expect(decideNetworkPolicy(f, {}, "containerd", "nftables")).toMatchObject({ enforced: true, backend: "nftables" });
  });

  it("--no-network-policy: not enforced, no unit, and the words say how to turn it on", () => {
    const plan = buildPlan(baseFacts(), { networkPolicy: false }, upstreamVersions());
    expect(plan.networkPolicy).toMatchObject({ enforced: false, why: "turned off with --no-network-policy" });
    expect(plan.units.networkPolicy).toBeNull();
  });

  it("not possible: without br_netfilter (root's modprobe), or with --runtime docker", () => {
    const f = withFacts(baseFacts(), (x) => void (x.features.modules.br_netfilter = "missing"));
    const d = decideNetworkPolicy(f, {}, "containerd", "iptables");
    expect(d.enforced).toBe(false);
    expect(d.why).toMatch(/^br_netfilter is not loaded/);
    expect(d.fix?.root?.join("\n")).toContain("br_netfilter");
    expect(decideNetworkPolicy(baseFacts(), {}, "docker", "iptables")).toMatchObject({
      enforced: false,
      fix: { user: expect.stringContaining("--runtime containerd") },
    });
  });
});

describe("status's NetworkPolicy words", () => {
  const plan = buildPlan(baseFacts(), {}, upstreamVersions());
  const active = { unit: "rootless-k8s-netpol.service", activeState: "active", subState: "running" };
  const state: NetworkPolicyState = {
    schemaVersion: 1,
    updated: "2026-12-06T12:00:00Z",
    enforced: true,
    why: null,
    policies: 3,
    isolated: { ingress: 2, egress: 1 },
    rules: 12,
    problems: [],
  };

  it("enforced: the policies and the pods they isolate", () => {
    expect(networkPolicyView(plan, active, state)).toEqual({
      enforced: true,
      detail: "3 policies; 2 of this node's pods isolated for ingress, 1 for egress",
      problem: false,
    });
  });

  it("the enforcer down: not enforced, a problem, and the last rules said to stay", () => {
    const v = networkPolicyView(plan, { ...active, activeState: "failed", subState: "failed" }, state);
    expect(v).toMatchObject({ enforced: false, problem: true });
    expect(v.detail).toMatch(/^rootless-k8s-netpol.service is failed \(failed\): its last rules stay/);
  });

  it("a pass that iptables refused, or no pass yet: not enforced, a problem", () => {
    expect(networkPolicyView(plan, active, { ...state, enforced: false, why: "iptables-restore refused the rules: x" })).toEqual({
      enforced: false,
      detail: "iptables-restore refused the rules: x",
      problem: true,
    });
    expect(networkPolicyView(plan, active, null)).toMatchObject({ enforced: false, problem: true });
  });

  it("turned off: not enforced, with the reason, and not a problem of the node", () => {
    const off = buildPlan(baseFacts(), { networkPolicy: false }, upstreamVersions());
    expect(networkPolicyView(off, null, null)).toEqual({ enforced: false, detail: "turned off with --no-network-policy", problem: false });
  });
});
