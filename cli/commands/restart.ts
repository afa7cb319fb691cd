// `rootless-k8s restart`: stop, then start, the installed node. Thin: cli/apply/lifecycle.ts.
import { opt, type CommandSpec, type Parsed } from "../args";
import { restartNode } from "../apply/lifecycle";
import type { Context } from "../context";
import { LIFECYCLE_EXIT, LIFECYCLE_OPTIONS, timeoutOf } from "./durations";

export const spec: CommandSpec = {
  name: "restart",
  summary: "Stop the node, then start it and wait until it is Ready",
  usage: "rootless-k8s restart [--timeout SECONDS] [--prefix DIR]",
  description: `
\`rootless-k8s stop\`, then \`rootless-k8s start\`: every unit of the node stops (no process of it is
left), then the node starts and is waited for until Ready. Pods come back from the runtime's state.
${LIFECYCLE_EXIT}`,
  options: LIFECYCLE_OPTIONS,
  examples: ["rootless-k8s restart"],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  return restartNode(ctx, { prefix: opt.str(parsed, "prefix"), timeoutSeconds: timeoutOf(parsed, spec.name) });
}
