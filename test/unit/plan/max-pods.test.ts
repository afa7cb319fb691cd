// The kubelet's maxPods from the user's limits (issue 45; the rule: podBoundOfLimits in
// cli/doctor/checks/limits.ts, decided in cli/plan/kubelet.ts): below 110 only when the limits allow
// fewer pods for the planned runtime, from the limits alone so a running node's own pods never move
// it, rendered into the KubeletConfiguration and said in the plan.
import { describe, expect, it } from "vitest";
import type { Facts, UserLimitFacts } from "../../../cli/host/facts";
import { buildPlan } from "../../../cli/plan/index";
import { kubeletConfiguration } from "../../../cli/render/kube-configs";
import { baseFacts, upstreamVersions } from "./facts-builder";

const versions = upstreamVersions();
const withLimits = (limits: Partial<UserLimitFacts>): Facts => ({
  ...baseFacts(),
  limits: { keys: null, nproc: "unlimited", threads: 300, threadsMax: 1_000_000, ...limits },
});

describe("maxPods", () => {
  it("CRI-O under the kernel's default kernel.keys.maxkeys (200): 98 pods, 2 keys each, and the plan says why", () => {
    const plan = buildPlan(withLimits({ keys: { used: 4, max: 200 } }), { runtime: "crio" }, versions);
    expect(plan.kubelet.maxPods).toBe(98);
    expect(kubeletConfiguration(plan)).toMatchObject({ maxPods: 98 });
    expect(plan.kubelet.reasons.join("\n")).toMatch(
      /^maxPods: 98, not the kubelet's 110: kernel\.keys\.maxkeys 200 allows about 98 pods \(CRI-O keeps a session keyring per container: 2 keys a pod\)/m,
    );
  });

  it("containerd under the same keys: the kubelet's 110 (no keyring per container), nothing rendered", () => {
    const plan = buildPlan(withLimits({ keys: { used: 4, max: 200 } }), {}, versions);
    expect(plan.runtime.name).toBe("containerd");
    expect(plan.kubelet.maxPods).toBeUndefined();
    expect(kubeletConfiguration(plan)).not.toHaveProperty("maxPods");
  });

  it("ulimit -u 1024 bounds every runtime: 59 pods, from the limit, not from the threads in use now", () => {
    const idle = buildPlan(withLimits({ nproc: 1024, threads: 200 }), {}, versions);
    const full = buildPlan(withLimits({ nproc: 1024, threads: 1000 }), {}, versions);
    expect(idle.kubelet.maxPods).toBe(59);
    expect(full.kubelet).toEqual(idle.kubelet);
    expect(idle.kubelet.reasons.join("\n")).toMatch(/maxPods: 59, not the kubelet's 110: ulimit -u 1024 allows about 59 pods/);
  });

  it("a pids.max on the user's slice or manager bounds pods as ulimit -u does", () => {
    const plan = buildPlan(withLimits({ pidsMax: { max: 1200, cgroup: "user@1000.service" } }), {}, versions);
    expect(plan.kubelet.maxPods).toBe(72);
    expect(plan.kubelet.reasons.join("\n")).toMatch(
      /maxPods: 72, not the kubelet's 110: pids\.max 1200 of user@1000\.service allows about 72 pods/,
    );
  });

  it("the lower of the two bounds wins; a limit that allows 110 or more changes nothing", () => {
    expect(buildPlan(withLimits({ nproc: 1024, keys: { used: 0, max: 200 } }), { runtime: "crio" }, versions).kubelet.maxPods).toBe(59);
    expect(
      buildPlan(withLimits({ nproc: 65536, keys: { used: 0, max: 2000 } }), { runtime: "crio" }, versions).kubelet.maxPods,
    ).toBeUndefined();
    expect(buildPlan(withLimits({ nproc: null, keys: null }), { runtime: "crio" }, versions).kubelet.maxPods).toBeUndefined();
  });
});
