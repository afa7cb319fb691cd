// Every doctor check, in the order failures cascade, and the two entry points other
// commands use: diagnose(facts) for the verdict and outcomes, rootScript(outcomes, facts) for the
// single reviewed root script. `rootless-k8s install` stops on any failing check unless --ignore-check ID.
import { runChecks, type Check, type CheckOutcome } from "./check";
import type { Facts } from "../host/facts";
import { cgroupChecks } from "./checks/cgroup";
import { hostChecks } from "./checks/host";
import { kernelChecks } from "./checks/kernel";
import { limitChecks } from "./checks/limits";
import { networkChecks } from "./checks/network";
import { runtimeChecks } from "./checks/runtimes";
import { systemdChecks } from "./checks/systemd";
import { userChecks } from "./checks/user";
import { usernsChecks } from "./checks/userns";
import { decideMode, type Mode } from "./verdict";

export { rootScript } from "./root-script";
export { NONE_GIVES_UP, type Mode } from "./verdict";
export type { Check, CheckOutcome } from "./check";

export const CHECKS: readonly Check[] = [
  ...hostChecks,
  ...userChecks,
  ...usernsChecks,
  ...cgroupChecks,
  ...systemdChecks,
  ...kernelChecks,
  ...limitChecks,
  ...networkChecks,
  ...runtimeChecks,
];

export const CHECK_IDS: readonly string[] = CHECKS.map((c) => c.id);

/** The ids in `ids` (from --ignore-check) that name no check. */
export function unknownCheckIds(ids: readonly string[]): string[] {
  return ids.filter((id) => !CHECK_IDS.includes(id));
}

export interface Diagnosis {
  mode: Mode;
  /** Why this mode: the blocking failures, or what the cgroups allow. */
  reasons: string[];
  /** For `none`: what the node gives up, in plain words; empty otherwise. */
  givesUp: string[];
  outcomes: CheckOutcome[];
}

export function diagnose(facts: Facts, checks: readonly Check[] = CHECKS): Diagnosis {
  const outcomes = runChecks(checks, facts);
  return { ...decideMode(facts, outcomes), outcomes };
}

/** True when any check failed: doctor exits 1, install stops (unless --ignore-check). */
export function anyFailed(outcomes: readonly CheckOutcome[], ignore: readonly string[] = []): boolean {
  return outcomes.some((o) => o.status === "fail" && !ignore.includes(o.id));
}
