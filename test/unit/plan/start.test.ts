// Each unit's start gate (cli/plan/start.ts): the API server waits for etcd; on the control-plane
// node everything that talks to the API server waits for its /readyz, all but the
// controller-manager without the two polled bootstrap hooks once the node is bootstrapped (it gives
// /healthz only 10 s of its own); a worker's units wait for nothing.
import { describe, expect, it } from "vitest";
import { buildPlan } from "../../../cli/plan/index";
import { startGate } from "../../../cli/plan/start";
import { baseFacts, joinedWorker, upstreamVersions } from "./facts-builder";

const plan = buildPlan(baseFacts(), {}, upstreamVersions());
const u = plan.units;

describe("startGate", () => {
  it("the API server waits for etcd; its clients for /readyz, the controller-manager for all of it", () => {
    expect(startGate(plan, u.apiServer)).toEqual({ kind: "etcd" });
    expect(startGate(plan, u.controllerManager)).toEqual({ kind: "api", skipPolledHooks: false });
    for (const unit of [u.scheduler, u.kubelet, u.kubeProxy, u.ports, u.overlay, u.csrApprover]) {
      if (!unit) throw new Error("the plan names every unit");
      expect(startGate(plan, unit), unit).toEqual({ kind: "api", skipPolledHooks: true });
    }
    expect(startGate(plan, u.etcd)).toBeNull();
    expect(startGate(plan, u.owner)).toBeNull();
  });

  it("a worker's units wait for nothing: their API server is another host's", () => {
    const w = joinedWorker(plan);
    expect(startGate(w, w.units.kubelet)).toBeNull();
  });
});
