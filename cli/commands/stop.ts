// `rootless-k8s stop`: stop the installed node; nothing is removed. Thin: cli/apply/lifecycle.ts.
import { opt, type CommandSpec, type Parsed } from "../args";
import { stopNode } from "../apply/lifecycle";
import type { Context } from "../context";
import { LIFECYCLE_OPTIONS } from "./durations";

export const spec: CommandSpec = {
  name: "stop",
  summary: "Stop the node (its units, pods and namespaces); nothing is removed",
  usage: "rootless-k8s stop [--prefix DIR]",
  description: `
Stops rootless-k8s.target and every unit of the node in one systemd transaction, in reverse start
order (the agents and the kubelet first, the namespace owner with the runtime and every pod last),
and returns once none of them runs. Files, data and images stay; \`rootless-k8s start\` starts it
again. The node also stays enabled: it starts with your user manager (at login, or at boot with linger).

Exit status: 0 when stopped (or already stopped), 1 when a unit did not stop, 2 bad usage,
3 when no node is installed or when run as root.`,
  options: { prefix: LIFECYCLE_OPTIONS.prefix! },
  examples: ["rootless-k8s stop", "rootless-k8s status   # says: stopped (exit 7)"],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  return stopNode(ctx, { prefix: opt.str(parsed, "prefix") });
}
