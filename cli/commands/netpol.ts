// `rootless-k8s netpol run --config FILE`: NetworkPolicy enforcement for this node's pods, as the
// enforcer unit runs it (rootless-k8s-netpol.service, inside the node's namespaces) until SIGTERM,
// then exits 0. Thin: the loop is cli/agents/network-policy.ts.
import { opt, type CommandSpec, type Parsed } from "../args";
import { networkPolicyRun } from "../agents/network-policy";
import type { Context } from "../context";
import { ExitCode, UsageError } from "../errors";

export const spec: CommandSpec = {
  name: "netpol",
  summary: "Enforce NetworkPolicies for this node's pods (run by rootless-k8s-netpol.service)",
  usage: "rootless-k8s netpol run --config FILE",
  description: `
\`run\` is what the node's NetworkPolicy unit runs, inside the node's namespaces: it watches the
cluster's pods, Namespaces and NetworkPolicies with the kubelet's credential and keeps iptables
rules in the node's namespace that allow a selected pod only what its policies allow, in each
direction they name. \`rootless-k8s status\` says whether policies are enforced. You do not run it
yourself: \`systemctl --user status rootless-k8s-netpol\`; install with --no-network-policy to go
without.`,
  positionals: [{ name: "action", description: "run", required: true }],
  options: {
    config: { type: "string", valueName: "FILE", description: "The config install wrote (~/.config/rootless-k8s/netpol.json)" },
  },
  examples: ["systemctl --user status rootless-k8s-netpol", "rootless-k8s logs netpol"],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const action = args.positionals[0];
  if (action !== "run") throw new UsageError(`unknown action "${action}" (use run)`, spec.name);
  const config = opt.str(args, "config");
  if (!config) throw new UsageError("netpol run needs --config FILE", spec.name);
  await networkPolicyRun(config, (line) => ctx.out.out(`${new Date().toISOString()} ${line}`), ctx.signal);
  return ExitCode.Ok;
}
