// The receipt of a node about to be installed for the first time (or again after an uninstall,
// whose kept data, version sets and kubeconfig entry it carries over).
import type { Plan } from "../plan/plan";
import { allUnits, rootsOf } from "./node";
import type { Receipt } from "./receipt";
import { VERSION } from "../version";

export function freshReceipt(plan: Plan, previous: Receipt | null): Receipt {
  return {
    schemaVersion: 1,
    tool: VERSION,
    state: "installing",
    mode: plan.mode.name,
    runtime: plan.runtime.name,
    target: plan.units.target,
    units: allUnits(plan),
    files: previous?.files ?? [],
    sets: previous?.sets ?? {},
    current: null,
    previous: null,
    currentLink: plan.paths.currentLink,
    roots: rootsOf(plan),
    createdDirs: previous?.createdDirs ?? [],
    kubeconfigMerge: previous?.kubeconfigMerge ?? null,
    plan,
    updatedAt: new Date().toISOString(),
  };
}
