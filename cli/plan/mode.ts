// The node's cgroup mode: what the cgroups allow (cli/host/cgroups.ts, the one rule doctor uses
// too), then --mode, which only goes delegated → none. `none` is the KEP's "none" cgroup driver,
// approximated with stock kubelet settings because upstream never merged it.
import { ExitCode, UserError } from "../errors";
import { decideSupervisor } from "./supervisor";
import { NONE_GIVES_UP } from "../doctor/verdict";
import { cgroupAllows } from "../host/cgroups";
import type { Facts } from "../host/facts";
import type { ModePlan, PlanOptions } from "./plan";

export function decideMode(facts: Facts, options: PlanOptions): ModePlan {
  const allowed = cgroupAllows(facts.cgroup, facts.user.uid);
  // The delegated cgroup is the one the user's systemd gives the owner unit (Delegate=yes): under
  // `rootless-k8s up` there is none to write limits in.
  const up = decideSupervisor(facts, options).kind === "up";
  const possible = up ? "none" : allowed.mode;
  const reasons = [
    up && allowed.mode === "delegated"
      ? "the node runs under `rootless-k8s up`: only the user's systemd gives it a delegated cgroup (Delegate=yes)"
      : allowed.reason,
  ];
  if (options.mode === "delegated" && possible === "none") {
    throw new UserError(`--mode delegated is not possible here: ${reasons[0]}`, {
      exitCode: ExitCode.Refused,
      fix: "run `rootless-k8s doctor` for the root fix that delegates cgroup v2, or use --mode none",
    });
  }
  const name = options.mode ?? possible;
  if (name === "none" && possible === "delegated") reasons.push("--mode none asked for: the node will not use the delegated controllers");
  return { name, reasons, givesUp: name === "none" ? [...NONE_GIVES_UP] : [], cgroup: facts.cgroup.mode };
}
