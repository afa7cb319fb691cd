// `rootless-k8s netpol run --config FILE`: NetworkPolicy enforcement for this node's pods, as the
// enforcer unit runs it (rootless-k8s-netpol.service, inside the node's namespaces) until SIGTERM,
// then exits 0. Thin: the loop is cli/agents/network-policy.ts.
import { opt, type CommandSpec, type Parsed } from "../args";
import { networkPolicyRun, removeNetworkPolicyRules } from "../agents/network-policy";
import type { NetworkPolicyBackend } from "../plan/network-policy";
import type { Context } from "../context";
import { ExitCode, UsageError, UserError } from "../errors";

export const spec: CommandSpec = {
  name: "netpol",
  summary: "Enforce NetworkPolicies for this node's pods (run by rootless-k8s-netpol.service)",
  usage: "rootless-k8s netpol run --config FILE | netpol remove --backend iptables|nftables",
  description: `
\`run\` is what the node's NetworkPolicy unit runs, inside the node's namespaces: it watches the
cluster's pods, Namespaces and NetworkPolicies with the kubelet's credential and keeps iptables
rules in the node's namespace that allow a selected pod only what its policies allow, in each
direction they name. \`rootless-k8s status\` says whether policies are enforced. You do not run it
yourself: \`systemctl --user status rootless-k8s-netpol\`; install with --no-network-policy to go
without.`,
  positionals: [
    {
      name: "action",
      description: "run, or remove (what install runs in the node's namespaces when it turns enforcement off)",
      required: true,
    },
  ],
  options: {
    config: { type: "string", valueName: "FILE", description: "The config install wrote (~/.config/rootless-k8s/netpol.json)" },
    backend: {
      type: "string",
      valueName: "TOOL",
      choices: ["iptables", "nftables"],
      description: "remove: the tool the rules were written with",
    },
  },
  examples: ["systemctl --user status rootless-k8s-netpol", "rootless-k8s logs netpol"],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const action = args.positionals[0];
  if (action === "remove") {
    const backend = opt.str(args, "backend") as NetworkPolicyBackend | undefined;
    if (!backend) throw new UsageError("netpol remove needs --backend iptables|nftables", spec.name);
    const failed = await removeNetworkPolicyRules(backend, (line) => ctx.out.out(line));
    if (failed)
      throw new UserError(`could not remove the NetworkPolicy rules: ${failed}`, {
        fix: "restart the node (rootless-k8s restart): its network namespace is made anew",
      });
    return ExitCode.Ok;
  }
  if (action !== "run") throw new UsageError(`unknown action "${action}" (use run or remove)`, spec.name);
  const config = opt.str(args, "config");
  if (!config) throw new UsageError("netpol run needs --config FILE", spec.name);
  await networkPolicyRun(config, (line) => ctx.out.out(`${new Date().toISOString()} ${line}`), ctx.signal);
  return ExitCode.Ok;
}
