// Whether the node admits other nodes, which starts its on-demand units (cli/plan/on-demand.ts):
// the overlay agent and the CSR approver. `token create` admits; an upgrade of a node whose plan
// ran them always (written before they were on demand) keeps them running the same way.
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import type { Plan } from "../plan/plan";
import { ADMITS_NODES_TEXT, admitsNodesFile } from "../plan/on-demand";
import type { SystemdUser } from "../clients/systemd";
import { unitStates, waitForUnitsActive } from "../readiness/watch";
import { ensureDir, writeFileAtomic } from "./files";
import { startOrder } from "./node";

export async function admitsNodes(plan: Plan): Promise<boolean> {
  return fsp
    .stat(admitsNodesFile(plan.paths))
    .then((s) => s.isFile())
    .catch(() => false);
}

/** The units that must be active for the node to run, in start order: the on-demand ones only once it admits other nodes. */
export function expectedUnits(plan: Plan, admits: boolean): string[] {
  const later = admits ? [] : (plan.onDemand?.units ?? []);
  return startOrder(plan).filter((u) => !later.includes(u));
}

/** The on-demand units that wait for the node to admit another, as the disk says now (none once it does). */
export async function awaitingNodes(plan: Plan): Promise<string[]> {
  return (await admitsNodes(plan)) ? [] : (plan.onDemand?.units ?? []);
}

/** The node's expected units as the disk says now. */
export async function unitsToRun(plan: Plan): Promise<string[]> {
  return expectedUnits(plan, await admitsNodes(plan));
}

/**
 * Marks the node as one that admits others, starts its on-demand units and waits until they run
 * (a unit that fails is named, exit 1). Returns the units that were not running before.
 */
export async function admitNodes(plan: Plan, systemd: SystemdUser, signal?: AbortSignal): Promise<string[]> {
  const units = plan.onDemand?.units ?? [];
  if (units.length === 0) return [];
  const before = await unitStates(systemd, units);
  await markAdmits(plan);
  await systemd.start(units);
  await waitForUnitsActive(systemd, units, 60_000, signal);
  return before.filter((s) => s.activeState !== "active").map((s) => s.unit);
}

/** The file alone (an upgrade of a node whose plan ran the on-demand units always). */
export async function markAdmits(plan: Plan): Promise<void> {
  const file = admitsNodesFile(plan.paths);
  await ensureDir(path.dirname(file), 0o700);
  await writeFileAtomic(file, ADMITS_NODES_TEXT, { mode: 0o600 });
}
