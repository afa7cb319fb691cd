// What runs the node's services (issue 38): the user's systemd (systemctl --user), or, on a host
// where no systemd user manager answers (containers, CI jobs, batch nodes without linger, WSL
// without systemd, OpenRC), `rootless-k8s up`: the tool's own supervisor, in the foreground or
// detached, running the same services from the same plan (cli/render/services.ts). Pure.
import type { Facts } from "../host/facts";
import { UP_GIVES_UP } from "../doctor/up";
import type { Plan, PlanOptions, Reasoned } from "./plan";

export type SupervisorKind = "systemd" | "up";

export interface SupervisorPlan extends Reasoned {
  kind: SupervisorKind;
}

export function decideSupervisor(facts: Facts, options: Pick<PlanOptions, "supervisor">): SupervisorPlan {
  if (options.supervisor === "up")
    return { kind: "up", reasons: ["--supervisor up: the node runs under `rootless-k8s up`, the tool's own supervisor", UP_GIVES_UP] };
  if (options.supervisor === "systemd" || facts.systemd.userManager)
    return { kind: "systemd", reasons: ["the user's systemd manager answers: the node runs as systemd user services"] };
  const why = facts.systemd.pid1 ? `no systemd user manager answers for ${facts.user.name}` : "PID 1 is not systemd";
  return {
    kind: "up",
    reasons: [`${why}: the node runs under \`rootless-k8s up\`, the tool's own supervisor (install starts it detached)`, UP_GIVES_UP],
  };
}

/** The supervisor of a plan; plans written before `up` existed ran under systemd. */
export function supervisorOf(plan: Pick<Plan, "supervisor">): SupervisorKind {
  return plan.supervisor?.kind ?? "systemd";
}

/** Where `rootless-k8s up` keeps its pid, its control socket and its own log. */
export interface UpPaths {
  /** The supervisor's pid: a second `up` of the same node refuses while it runs. */
  pidFile: string;
  /** The control socket (HTTP on a unix socket, in the 0700 runtime folder): start, stop, state. */
  socket: string;
  /** The supervisor's own output when detached. */
  log: string;
  /** Made while the owner is stopped on purpose: its network watch then knows it is no fault. */
  ownerStopping: string;
  /** The running services' main pids and start times: what the next `up` ends after a supervisor was killed. */
  groups: string;
}

export function upPaths(paths: Pick<Plan["paths"], "runtimeDir" | "logDir">): UpPaths {
  return {
    pidFile: `${paths.runtimeDir}/up.pid`,
    socket: `${paths.runtimeDir}/up.sock`,
    log: `${paths.logDir}/rootless-k8s-up.log`,
    ownerStopping: `${paths.runtimeDir}/owner-stopping`,
    groups: `${paths.runtimeDir}/up.groups`,
  };
}
