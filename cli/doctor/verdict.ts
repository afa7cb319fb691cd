// The verdict: `blocked` when a check that makes any rootless node impossible fails; otherwise
// `delegated` when cgroup v2 delegates cpu, memory and pids to the user, else `none`, which says
// plainly what the node gives up.
import type { CheckOutcome } from "./check";
import type { Facts } from "../host/facts";

export type Mode = "delegated" | "none" | "blocked";

/** What a node without cgroup control gives up, point by point. */
export const NONE_GIVES_UP: readonly string[] = [
  "no per-pod resource limits: CPU and memory requests and limits are accepted but not enforced",
  "no QoS cgroups: Guaranteed, Burstable and BestEffort pods are not isolated from each other",
  "kube-reserved and system-reserved are not enforced (enforceNodeAllocatable is empty)",
  "eviction works from node-level signals only (memory.available, nodefs.available), not per-pod usage",
  "reduced per-container metrics: CPU and memory figures per container are missing or approximate",
];

export function decideMode(facts: Facts, outcomes: readonly CheckOutcome[]): { mode: Mode; reasons: string[]; givesUp: string[] } {
  const blockers = outcomes.filter((o) => o.blocks && o.status === "fail");
  if (blockers.length) return { mode: "blocked", reasons: blockers.map((o) => `${o.label}: ${o.summary}`), givesUp: [] };
  const c = facts.cgroup;
  const svc = `user@${facts.user.uid}.service`;
  if (c.delegated) return { mode: "delegated", reasons: [`cgroup v2 with ${c.userControllers!.join(" ")} delegated to ${svc}`], givesUp: [] };
  const why =
    c.mode === "v1"
      ? "cgroup v1: controllers cannot be delegated to a user"
      : c.mode === "hybrid"
        ? "cgroup v1 hybrid: every controller is bound to a v1 hierarchy, none can be delegated to a user"
        : c.userControllers === null
          ? `cgroup v2, but ${svc} was not found (no running user manager), so no delegation can be seen`
          : `cgroup v2, but ${svc} has ${c.userControllers.join(" ") || "no controllers"}: cpu, memory and pids must all be delegated`;
  return { mode: "none", reasons: [why], givesUp: [...NONE_GIVES_UP] };
}
