// `rootless-k8s start`: start the installed node and wait until it is Ready. Thin: cli/apply/lifecycle.ts.
import { opt, type CommandSpec, type Parsed } from "../args";
import { startNode } from "../apply/lifecycle";
import type { Context } from "../context";
import { LIFECYCLE_EXIT, LIFECYCLE_OPTIONS, timeoutOf } from "./durations";

export const spec: CommandSpec = {
  name: "start",
  summary: "Start the installed node and wait until it is Ready",
  usage: "rootless-k8s start [--timeout SECONDS] [--prefix DIR]",
  description: `
Clears the failed state of the node's units (and systemd's count of their starts), starts
rootless-k8s.target in your systemd, and waits until the API server answers, the node is Ready and
every unit runs, with the progress and --timeout of install. A node that already runs is left as it is.
${LIFECYCLE_EXIT}`,
  options: LIFECYCLE_OPTIONS,
  examples: ["rootless-k8s start", "rootless-k8s start --timeout 600"],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  return startNode(ctx, { prefix: opt.str(parsed, "prefix"), timeoutSeconds: timeoutOf(parsed, spec.name) });
}
