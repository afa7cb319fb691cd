// `rootless-k8s ports run --config FILE`: the port publisher, as the ports unit runs it
// (rootless-k8s-ports.service). It publishes every NodePort, LoadBalancer port and pod hostPort on
// the host through RootlessKit's port API, until SIGTERM (systemctl --user stop), then exits 0.
// Thin: the loop is cli/agents/ports-controller.ts.
import { opt, type CommandSpec, type Parsed } from "../args";
import { portsRun } from "../agents/ports-controller";
import type { Context } from "../context";
import { ExitCode, UsageError } from "../errors";

export const spec: CommandSpec = {
  name: "ports",
  summary: "Publish Services' and pods' ports on the host (run by rootless-k8s-ports.service)",
  usage: "rootless-k8s ports run --config FILE",
  description: `
\`run\` is what the node's ports unit runs: it watches Services and the node's pods through the API
server and keeps RootlessKit's published ports at exactly every NodePort, every LoadBalancer
Service's port and every pod hostPort (TCP and UDP), on the address chosen at install
(--publish-address). A port it cannot publish gets an Event on its Service or pod, and a line in
\`rootless-k8s status\`. It runs until stopped (SIGTERM); the ports stay published until the node's
namespace owner stops. You do not run it yourself: \`systemctl --user status rootless-k8s-ports\`.`,
  positionals: [{ name: "action", description: "run", required: true }],
  options: {
    config: { type: "string", valueName: "FILE", description: "The config install wrote (~/.config/rootless-k8s/ports.json)" },
  },
  examples: ["systemctl --user status rootless-k8s-ports", "rootless-k8s status"],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const action = args.positionals[0];
  if (action !== "run") throw new UsageError(`unknown action "${action}" (use run)`, spec.name);
  const config = opt.str(args, "config");
  if (!config) throw new UsageError("ports run needs --config FILE", spec.name);
  await portsRun(config, (line) => ctx.out.out(`${new Date().toISOString()} ${line}`), ctx.signal);
  return ExitCode.Ok;
}
