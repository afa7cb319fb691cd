// What stops install and upgrade: one policy for both, and for the dry run that predicts them.
import type { CheckOutcome } from "./check";

/**
 * The failing checks that stop an install or upgrade: every failure, except the checks the user
 * named with --ignore-check, and except "ports" when every busy port is one of `ownPorts`: the
 * ports of the node being re-installed or upgraded (it holds them itself), and for an install
 * without --api-port the default API port (install then asks for another one).
 */
export function blockingFailures(
  outcomes: readonly CheckOutcome[],
  ignore: readonly string[],
  ownPorts: readonly number[],
  busyPorts: readonly number[],
): CheckOutcome[] {
  const own = new Set(ownPorts);
  return outcomes.filter((o) => o.status === "fail" && !ignore.includes(o.id) && !(o.id === "ports" && busyPorts.every((p) => own.has(p))));
}
