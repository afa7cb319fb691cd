// What `status` says about NetworkPolicies (issue 44): enforced, with what, or not, with why. Never
// silent: a plan without enforcement (--no-network-policy, a host that cannot), an enforcer that is
// not running (its last rules stay, but pods that came since are not covered) and a pass that
// could not put its rules in place are each a "not enforced" line. Read-only: the plan, the unit's
// state and the enforcer's state file (only the enforcer saw what iptables accepted).
import type { NetworkPolicyState } from "../agents/network-policy";
import { networkPolicyOf } from "../plan/network-policy";
import type { Plan } from "../plan/plan";
import { layout } from "../render/layout";
import { readStateFile } from "./state-file";
import type { UnitState } from "../clients/systemd";

export interface NetworkPolicyStatus {
  enforced: boolean;
  /** What is enforced, or why not. */
  detail: string;
  /** Enforcement the plan asked for is not in place: a problem of the node, not a choice. */
  problem: boolean;
}

/** The words for one node (pure). */
export function networkPolicyView(
  plan: Plan,
  unit: Pick<UnitState, "unit" | "activeState" | "subState"> | null,
  state: NetworkPolicyState | null,
): NetworkPolicyStatus {
  const np = networkPolicyOf(plan);
  if (!np.enforced) return { enforced: false, detail: np.why ?? "off", problem: false };
  if (!unit || unit.activeState !== "active")
    return {
      enforced: false,
      detail: `${plan.units.networkPolicy ?? "the enforcer"} is ${unit ? `${unit.activeState} (${unit.subState})` : "not installed"}: its last rules stay, pods that came since are not covered; start it with \`rootless-k8s start\``,
      problem: true,
    };
  if (!state) return { enforced: false, detail: "the enforcer has not finished its first pass yet", problem: true };
  if (!state.enforced) return { enforced: false, detail: state.why ?? "its last pass failed", problem: true };
  const what = `${state.policies} ${state.policies === 1 ? "policy" : "policies"}; ${state.isolated.ingress} of this node's pods isolated for ingress, ${state.isolated.egress} for egress`;
  const partial = state.problems.length
    ? `; ${state.problems.length} part(s) of policies match nothing (kubectl describe networkpolicy)`
    : "";
  return { enforced: true, detail: `${what}${partial}${state.why ? `; ${state.why}` : ""}`, problem: Boolean(state.why) };
}

export function readNetworkPolicyState(plan: Plan): Promise<NetworkPolicyState | null> {
  return readStateFile<NetworkPolicyState>(layout(plan).run.networkPolicyState);
}
