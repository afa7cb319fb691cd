// What the cgroups allow: the one rule, below doctor and plan, with one wording of its reasons.
// `delegated` needs cgroup v2 with cpu, memory and pids delegated to user@UID.service; anything
// else allows only `none`. Doctor adds `blocked` (a failing blocking check); plan adds --mode.
import type { CgroupFacts, CgroupMode } from "./facts";

/** The controllers the `delegated` mode needs, delegated to the user and passed down to the node. */
export const DELEGATION_CORE = ["cpu", "memory", "pids"] as const;

/** Those of DELEGATION_CORE that `have` lacks (all of them when it is unknown). */
export function missingCore(have: readonly string[] | null): string[] {
  return DELEGATION_CORE.filter((c) => !have?.includes(c));
}

/** cgroup v2 with every controller of DELEGATION_CORE in `userControllers`. */
export function delegatesCore(mode: CgroupMode, userControllers: readonly string[] | null): boolean {
  return mode === "v2" && userControllers !== null && missingCore(userControllers).length === 0;
}

export interface CgroupAllowance {
  /** The best mode the cgroups allow. */
  mode: "delegated" | "none";
  /** Why, in one line. */
  reason: string;
}

export function cgroupAllows(c: Pick<CgroupFacts, "mode" | "userControllers">, uid: number): CgroupAllowance {
  const svc = `user@${uid}.service`;
  if (delegatesCore(c.mode, c.userControllers))
    return { mode: "delegated", reason: `cgroup v2 with ${c.userControllers!.join(" ")} delegated to ${svc}` };
  const reason =
    c.mode === "v1"
      ? "cgroup v1: controllers cannot be delegated to a user"
      : c.mode === "hybrid"
        ? "cgroup v1 hybrid: every controller is bound to a v1 hierarchy, none can be delegated to a user"
        : c.userControllers === null
          ? `cgroup v2, but ${svc} was not found (no running user manager), so no delegation can be seen`
          : `cgroup v2, but ${svc} has ${c.userControllers.join(" ") || "no controllers"}: ${missingCore(c.userControllers).join(", ")} not delegated (cpu, memory and pids must all be)`;
  return { mode: "none", reason };
}
