// The units a single node does not need (issue 33): the overlay agent (the pod network across
// nodes) and the CSR approver (its workers' serving certificates) run once the node admits another
// node, which `rootless-k8s token create` marks with a file in the data folder. Until then systemd
// skips them (ConditionPathExists=), and the node runs two Node.js processes fewer: measured on the
// host route, 81 MiB of PSS at rest (overlay 42, approver 39), of which the port publisher then
// holds the part of the binary the three shared. Pure.
import * as path from "node:path";
import type { Paths, Plan, UnitNames } from "./plan";

/** The file that says the node admits other nodes (created by `token create`, or by an upgrade of a node that ran them always). */
export function admitsNodesFile(paths: Pick<Paths, "dataDir">): string {
  return path.join(paths.dataDir, "admits-nodes");
}

/** The services that start only once the node admits others: a server's overlay and approver; none on a worker (it joined one). */
export function onDemandUnits(units: Pick<UnitNames, "overlay" | "csrApprover">, role: "server" | "worker"): string[] {
  if (role === "worker") return [];
  return [units.overlay, units.csrApprover].filter((u): u is string => Boolean(u));
}

export function decideOnDemand(
  units: Pick<UnitNames, "overlay" | "csrApprover">,
  role: "server" | "worker",
): NonNullable<Plan["onDemand"]> {
  const list = onDemandUnits(units, role);
  return { units: list, reasons: list.length ? [ON_DEMAND_REASON] : [] };
}

/** What the file says, for the person who finds it. */
export const ADMITS_NODES_TEXT =
  "This node admits other nodes (`rootless-k8s token create`): its overlay agent and CSR approver run.\nRemoving this file stops them from starting with the node.\n";

export const ON_DEMAND_REASON =
  "the overlay agent and the CSR approver start once the node admits another node (`rootless-k8s token create`): a single node does without them";
