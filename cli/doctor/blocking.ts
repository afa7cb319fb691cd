// What stops install and upgrade: one policy for both, and for the dry run that predicts them.
import type { CheckOutcome } from "./check";

/**
 * The failing checks that stop an install or upgrade: every failure, except the checks the user
 * named with --ignore-check. A check fails only on what install would refuse (a taken API port
 * fails only when --api-port named it: port-choice.ts), so doctor and install agree.
 */
export function blockingFailures(outcomes: readonly CheckOutcome[], ignore: readonly string[]): CheckOutcome[] {
  return outcomes.filter((o) => o.status === "fail" && !ignore.includes(o.id));
}
