// Which units start in which order, and which restart after a change: a real plan of a Debian 12
// host (built by cli/plan), fed file and binary changes.
import { describe, expect, it } from "vitest";
import { allUnits, restartsFor, startOrder, unitOfBinary, unitsWithNewBinaries, unitsWithNewVersions } from "../../../cli/apply/node";
import { buildPlan } from "../../../cli/plan/index";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

const plan = buildPlan(baseFacts(), {}, upstreamVersions());
const u = plan.units;

describe("startOrder", () => {
  it("starts the namespace owner, then etcd, the control plane, the kubelet, kube-proxy, the NetworkPolicy enforcer, the port publisher, the overlay, the CSR approver", () => {
    expect(startOrder(plan)).toEqual([
      u.owner,
      u.etcd,
      u.apiServer,
      u.controllerManager,
      u.scheduler,
      u.kubelet,
      u.kubeProxy,
      u.networkPolicy,
      u.ports,
      u.overlay,
      u.csrApprover,
    ]);
    expect(u.networkPolicy).toBe("rootless-k8s-netpol.service");
    expect(u.ports).toBe("rootless-k8s-ports.service");
    expect(u.overlay).toBe("rootless-k8s-overlay.service");
    expect(u.csrApprover).toBe("rootless-k8s-csr-approver.service");
  });
});

describe("allUnits", () => {
  it("is every unit uninstall stops and removes: the target, the owner last in start order, the CSR approver first to stop", () => {
    const all = allUnits(plan);
    expect(all).toEqual([u.target, ...startOrder(plan)]);
    expect(all).toContain("rootless-k8s-ports.service");
    expect([...startOrder(plan)].reverse()[0]).toBe(u.csrApprover);
    expect([...startOrder(plan)].reverse().at(-1)).toBe(u.owner);
  });
});

describe("restartsFor", () => {
  it("restarts nothing when nothing changed", () => {
    expect(restartsFor(plan, [], new Set())).toEqual([]);
  });
  it("restarts only the unit that reads a changed file", () => {
    expect(restartsFor(plan, [{ kind: "config", unit: u.kubelet }], new Set())).toEqual([u.kubelet]);
  });
  it("restarts a unit whose own file changed, in start order with the others", () => {
    expect(
      restartsFor(
        plan,
        [
          { kind: "unit", unit: u.kubeProxy },
          { kind: "unit", unit: u.apiServer },
        ],
        new Set(),
      ),
    ).toEqual([u.apiServer, u.kubeProxy]);
  });
  it("restarts everything when a file every component reads changed (CA, env)", () => {
    expect(restartsFor(plan, [{ kind: "pki", unit: u.target }], new Set())).toEqual(startOrder(plan));
  });
  it("only reloads for the target's own unit file", () => {
    expect(restartsFor(plan, [{ kind: "unit", unit: u.target }], new Set())).toEqual([]);
  });
  it("restarts everything bound to the owner when the owner restarts", () => {
    expect(restartsFor(plan, [{ kind: "config", unit: u.owner }], new Set())).toEqual(startOrder(plan));
  });
  it("ignores files no unit reads (the CNI conflist is re-read by the runtime)", () => {
    expect(restartsFor(plan, [{ kind: "cni" }], new Set())).toEqual([]);
  });
});

describe("binaries and versions → units", () => {
  it("maps each installed binary to the unit that runs it", () => {
    expect(unitOfBinary(plan, "kubelet", null)).toBe(u.kubelet);
    expect(unitOfBinary(plan, "kube-apiserver", null)).toBe(u.apiServer);
    expect(unitOfBinary(plan, "etcd", null)).toBe(u.etcd);
    expect(unitOfBinary(plan, "containerd", null)).toBe(u.owner);
    expect(unitOfBinary(plan, "bridge", "cni")).toBe(u.owner);
    expect(unitOfBinary(plan, "kubectl", null)).toBeNull();
  });
  it("a Kubernetes-only upgrade restarts the control plane and the node agents, never the runtime", () => {
    const bin = (n: string, h: string, dir = "/v/a/bin") => ({ path: `${dir}/${n}`, sha256: h.repeat(64) });
    const from = [bin("kubelet", "1"), bin("kube-apiserver", "2"), bin("containerd", "3"), bin("cni/bridge", "4"), bin("kubectl", "5")];
    const to = [
      bin("kubelet", "9", "/v/b/bin"),
      bin("kube-apiserver", "8", "/v/b/bin"),
      bin("containerd", "3", "/v/b/bin"),
      bin("cni/bridge", "4", "/v/b/bin"),
      bin("kubectl", "7", "/v/b/bin"),
    ];
    const changed = unitsWithNewBinaries(plan, from, to, "/v/b/bin", "/v/a/bin");
    expect([...changed].sort()).toEqual([u.apiServer, u.kubelet].sort());
    expect(restartsFor(plan, [], changed)).toEqual([u.apiServer, u.kubelet]);
  });
  it("a binary whose recorded sha256 is empty or malformed counts as new, even when both sides agree (issue 34)", () => {
    const from = [
      { path: "/v/a/bin/kubelet", sha256: "" },
      { path: "/v/a/bin/etcd", sha256: "E".repeat(64) },
      { path: "/v/a/bin/kube-apiserver", sha256: "a".repeat(64) },
    ];
    const to = [
      { path: "/v/b/bin/kubelet", sha256: "" },
      { path: "/v/b/bin/etcd", sha256: "E".repeat(64) },
      { path: "/v/b/bin/kube-apiserver", sha256: "a".repeat(64) },
    ];
    expect([...unitsWithNewBinaries(plan, from, to, "/v/b/bin", "/v/a/bin")].sort()).toEqual([u.etcd, u.kubelet].sort());
  });
  it("a first install restarts everything it runs", () => {
    const to = [
      { path: "/b/kubelet", sha256: "1" },
      { path: "/b/etcd", sha256: "2" },
    ];
    expect([...unitsWithNewBinaries(plan, null, to, "/b", null)].sort()).toEqual([u.etcd, u.kubelet].sort());
  });
  it("a dry run derives the restarts from component versions", () => {
    const from = { kubernetes: "1.36.0", etcd: "3.6.14", containerd: "2.3.4" };
    expect([...unitsWithNewVersions(plan, from, { ...from, kubernetes: "1.37.0" })].sort()).toEqual(
      [u.apiServer, u.controllerManager, u.scheduler, u.kubelet, u.kubeProxy].sort(),
    );
    expect([...unitsWithNewVersions(plan, from, { ...from, containerd: "2.3.5" })]).toEqual([u.owner]);
  });
});
