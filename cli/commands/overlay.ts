// `rootless-k8s overlay run --config FILE`: the pod network across nodes, as the overlay unit runs
// it (rootless-k8s-overlay.service, inside the node's namespaces) until SIGTERM, then exits 0.
// Thin: the loop is cli/agents/overlay-agent.ts.
import { opt, type CommandSpec, type Parsed } from "../args";
import { overlayRun } from "../agents/overlay-agent";
import type { Context } from "../context";
import { ExitCode, UsageError } from "../errors";

export const spec: CommandSpec = {
  name: "overlay",
  summary: "Keep the pod network across nodes (run by rootless-k8s-overlay.service)",
  usage: "rootless-k8s overlay run --config FILE",
  description: `
\`run\` is what the node's overlay unit runs, inside the node's namespaces: it watches the cluster's
Nodes with the kubelet's credential, writes this host's address on its own Node
(rootless-k8s.io/public-ip), gives the VXLAN device rk8s.1 the node's address once the
controller-manager gave the node its pod range, and keeps one route, neighbour and forwarding entry
per other node (flannel's vxlan design). While the cluster has another node, UDP port 8472 is
published on the host through RootlessKit's port API. You do not run it yourself:
\`systemctl --user status rootless-k8s-overlay\`.`,
  positionals: [{ name: "action", description: "run", required: true }],
  options: {
    config: { type: "string", valueName: "FILE", description: "The config install wrote (~/.config/rootless-k8s/overlay.json)" },
  },
  examples: ["systemctl --user status rootless-k8s-overlay", "rootless-k8s logs overlay"],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const action = args.positionals[0];
  if (action !== "run") throw new UsageError(`unknown action "${action}" (use run)`, spec.name);
  const config = opt.str(args, "config");
  if (!config) throw new UsageError("overlay run needs --config FILE", spec.name);
  await overlayRun(config, (line) => ctx.out.out(`${new Date().toISOString()} ${line}`), ctx.signal);
  return ExitCode.Ok;
}
