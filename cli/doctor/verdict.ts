// The verdict: `blocked` when a check that makes any rootless node impossible fails; otherwise
// `delegated` when cgroup v2 delegates cpu, memory and pids to the user, else `none`, which says
// plainly what the node gives up.
import type { CheckOutcome } from "./check";
import { cgroupAllows } from "../host/cgroups";
import type { Facts } from "../host/facts";

export type Mode = "delegated" | "none" | "blocked";

/** What a node without cgroup control gives up, point by point. */
export const NONE_GIVES_UP: readonly string[] = [
  "no per-pod resource limits: CPU and memory requests and limits are accepted but not enforced",
  "no QoS cgroups: Guaranteed, Burstable and BestEffort pods are not isolated from each other",
  "kube-reserved and system-reserved are not enforced (enforceNodeAllocatable is empty)",
  "eviction works from node-level signals only (memory.available, nodefs.available), not per-pod usage",
  "no per-pod metrics: kubectl top pods shows every pod with the CPU and memory of the cgroup all pods share, not its own (kubectl top nodes is right)",
];

/**
 * What replaces the first of NONE_GIVES_UP when the node runs in the user's dockerd on its systemd
 * cgroup driver: dockerd puts each container in a docker-<id>.scope of the user's systemd with its
 * limits (on the e2e's VM a pod limited to 64Mi had memory.max 67108864 there).
 */
export const NONE_DOCKER_LIMITS =
  "per-container limits only: dockerd (its systemd cgroup driver) sets each container's CPU and memory limits in its own docker-<id>.scope; no pod-level cgroup or limit";

/** What a node on dockerd's systemd cgroup driver gets instead of pod cgroups (doctor's docker check, the plan's refusal of mode delegated). */
export const DOCKERD_LIMITS_WORDS =
  "dockerd still limits each container in its own docker-<id>.scope through your systemd (no pod or QoS cgroups)";

/** Mode none's list, for a node whose containers dockerd limits (dockerdLimits) or not. */
export function noneGivesUp(dockerdLimits: boolean): string[] {
  return dockerdLimits ? [NONE_DOCKER_LIMITS, ...NONE_GIVES_UP.slice(1)] : [...NONE_GIVES_UP];
}

export function decideMode(facts: Facts, outcomes: readonly CheckOutcome[]): { mode: Mode; reasons: string[]; givesUp: string[] } {
  const blockers = outcomes.filter((o) => o.blocks && o.status === "fail");
  if (blockers.length) return { mode: "blocked", reasons: blockers.map((o) => `${o.label}: ${o.summary}`), givesUp: [] };
  const allowed = cgroupAllows(facts.cgroup, facts.user.uid);
  return { mode: allowed.mode, reasons: [allowed.reason], givesUp: allowed.mode === "none" ? [...NONE_GIVES_UP] : [] };
}
