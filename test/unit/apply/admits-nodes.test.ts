// The on-demand units (#33): a single node runs without the overlay agent and the CSR approver;
// `token create` admits other nodes: a file in the data folder, then the units started and waited
// for. Real plans of a Debian 12 host (cli/plan), real files in a temporary home.
import { statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { admitNodes, admitsNodes, expectedUnits } from "../../../cli/apply/admits-nodes";
import { startOrder } from "../../../cli/apply/node";
import type { SystemdUser, UnitState } from "../../../cli/clients/systemd";
import { buildPlan } from "../../../cli/plan/index";
import { admitsNodesFile } from "../../../cli/plan/on-demand";
import { tempDir } from "../../helpers/temp";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

function planIn(home: string) {
  const facts = baseFacts();
  facts.user.home = home;
  return buildPlan(facts, {}, upstreamVersions());
}

/** A user manager that starts what it is asked to and records it; `broken` never comes up. */
function manager(broken: string | null = null) {
  const active = new Set<string>();
  const calls: string[] = [];
  const state = async (unit: string): Promise<UnitState> => {
    const on = active.has(unit);
    const failed = unit === broken && calls.length > 0;
    return {
      unit,
      activeState: on ? "active" : failed ? "failed" : "inactive",
      subState: on ? "running" : failed ? "failed" : "dead",
      result: failed ? "exit-code" : "success",
      loadState: "loaded",
      mainPid: 0,
      nRestarts: 0,
      needDaemonReload: false,
    };
  };
  const systemd = {
    start: async (units: string[]) => {
      calls.push(`start ${units.join(" ")}`);
      for (const u of units) if (u !== broken) active.add(u);
    },
    state,
  } as unknown as SystemdUser;
  return { systemd, calls, active };
}

describe("the units a single node does without", () => {
  it("a server's overlay and approver are on demand; the node runs everything else", () => {
    const plan = planIn(tempDir("rk8s-admit-"));
    expect(plan.onDemand?.units).toEqual([plan.units.overlay, plan.units.csrApprover]);
    expect(plan.onDemand?.reasons[0]).toContain("token create");
    const run = expectedUnits(plan, false);
    expect(run).not.toContain(plan.units.overlay);
    expect(run).not.toContain(plan.units.csrApprover);
    expect(run).toContain(plan.units.ports);
    expect(expectedUnits(plan, true)).toEqual(startOrder(plan));
  });

  it("an older plan (no onDemand) runs every unit as before", () => {
    const { onDemand: _, ...older } = planIn(tempDir("rk8s-admit-"));
    expect(expectedUnits(older, false)).toEqual(startOrder(older));
  });
});

describe("admitNodes (token create)", () => {
  it("writes the file 0600, starts the overlay and the approver, and says which it started; the second time none", async () => {
    const plan = planIn(tempDir("rk8s-admit-"));
    const m = manager();
    expect(await admitsNodes(plan)).toBe(false);
    expect(await admitNodes(plan, m.systemd)).toEqual([plan.units.overlay, plan.units.csrApprover]);
    expect(await admitsNodes(plan)).toBe(true);
    expect(statSync(admitsNodesFile(plan.paths)).mode & 0o777).toBe(0o600);
    expect(m.calls).toEqual([`start ${plan.units.overlay} ${plan.units.csrApprover}`]);
    expect(await admitNodes(plan, m.systemd)).toEqual([]);
  });

  it("a unit that fails to start is named, and the error says so", async () => {
    const plan = planIn(tempDir("rk8s-admit-"));
    const m = manager(plan.units.csrApprover as string);
    await expect(admitNodes(plan, m.systemd)).rejects.toThrow(plan.units.csrApprover as string);
  });
});
