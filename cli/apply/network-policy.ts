// The install, join and upgrade step that waits for NetworkPolicy enforcement: a node that
// enforces policies is ready once the enforcer has made its first pass (its state file, read by
// `status`), after the add-ons step applied its RBAC; until then a policy would be accepted and not
// yet held. Changes nothing itself.
import { execFile } from "node:child_process";
import type { NetworkPolicyBackend } from "../plan/network-policy";
import type { Plan } from "../plan/plan";
import { selfCommand } from "../self-command";
import { UserError } from "../errors";
import { waitForStateFile } from "../readiness/first-pass";
import { layout } from "../render/layout";
import type { Progress } from "../ui/progress";

export const ENFORCER_FIRST_PASS_MS = 60_000;

export async function networkPolicyStep(plan: Plan, progress: Progress, signal: AbortSignal): Promise<void> {
  const unit = plan.units.networkPolicy;
  if (!unit) return;
  await progress.step("netpol", `Waiting for ${unit} to enforce NetworkPolicies`, async (h) => {
    if (await waitForStateFile(layout(plan).run.networkPolicyState, ENFORCER_FIRST_PASS_MS, signal)) return h.update("enforcing");
    throw new UserError(`${unit} has not enforced NetworkPolicies within ${ENFORCER_FIRST_PASS_MS / 1000} s of the node being Ready`, {
      fix: "see why in `rootless-k8s logs netpol`, then re-run the same command (or install with --no-network-policy)",
    });
  });
}

/**
 * A plan that turns enforcement off (install --no-network-policy): the enforcer's rules come out
 * of the node's namespace, run there through the enter script as the units run (this binary's
 * `netpol remove`), once its unit has stopped: a stopped enforcer leaves its rules. A namespace
 * that is not running has no rules to remove.
 */
export async function removeNetworkPolicyRulesOf(plan: Plan, backend: NetworkPolicyBackend): Promise<string | null> {
  const argv = [layout(plan).scripts.enter, ...selfCommand(), "netpol", "remove", "--backend", backend];
  return new Promise((resolve) => {
    execFile(argv[0]!, argv.slice(1), { timeout: 30_000, encoding: "utf8" }, (err, stdout, stderr) =>
      resolve(err ? `${(stderr || stdout || err.message).trim().split("\n").pop()}` : null),
    );
  });
}
