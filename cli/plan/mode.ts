// The node's cgroup mode. `delegated` needs cgroup v2 with cpu, memory and pids delegated to the
// user; everything else is `none`: the KEP's "none" cgroup driver, approximated with stock kubelet
// settings because upstream never merged it (anchors §0.1). --mode only goes delegated → none.
import { ExitCode, UserError } from "../errors";
import { NONE_GIVES_UP } from "../doctor/verdict";
import type { Facts } from "../host/facts";
import type { ModePlan, PlanOptions } from "./plan";

const REQUIRED = ["cpu", "memory", "pids"] as const;

export function decideMode(facts: Facts, options: PlanOptions): ModePlan {
  const cg = facts.cgroup;
  const reasons: string[] = [];
  let possible: ModePlan["name"];
  if (cg.mode !== "v2") {
    possible = "none";
    reasons.push(
      cg.mode === "v1"
        ? "cgroup v1: controllers cannot be delegated to a user"
        : "cgroup v1/v2 hybrid: the controllers are bound to v1 and cannot be delegated to a user",
    );
  } else if (!cg.delegated) {
    possible = "none";
    const have = cg.userControllers ?? [];
    const missing = REQUIRED.filter((c) => !have.includes(c));
    reasons.push(
      cg.userControllers === null
        ? "cgroup v2, but the controllers delegated to the user could not be read"
        : `cgroup v2 without delegation: ${missing.join(", ")} not delegated to user@${facts.user.uid}.service`,
    );
  } else {
    possible = "delegated";
    reasons.push(`cgroup v2 with ${(cg.userControllers ?? []).join(", ")} delegated to the user`);
  }

  if (options.mode === "delegated" && possible === "none") {
    throw new UserError(`--mode delegated is not possible here: ${reasons[0]}`, {
      exitCode: ExitCode.Refused,
      fix: "run `rootless-k8s doctor` for the root fix that delegates cgroup v2, or use --mode none",
    });
  }
  const name = options.mode ?? possible;
  if (name === "none" && possible === "delegated") reasons.push("--mode none asked for: the node will not use the delegated controllers");
  return { name, reasons, givesUp: name === "none" ? [...NONE_GIVES_UP] : [], cgroup: cg.mode };
}
