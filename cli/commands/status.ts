// `rootless-k8s status`: units, readiness, mode, versions, published ports and the node's
// conditions, in words or --json. Exit 0 when the node is healthy, 1 when not (or not installed).
import { opt, type CommandSpec, type Parsed } from "../args";
import { ExitCode } from "../errors";
import { requireReceipt } from "../apply/receipt";
import { nodeStatus } from "../inspect/status";
import { renderStatus } from "../inspect/status-text";
import type { Context } from "../context";

export const spec: CommandSpec = {
  name: "status",
  summary: "Show units, readiness, mode, versions and ports of the node",
  usage: "rootless-k8s status [--json] [--prefix DIR]",
  description: `
Reads the install receipt, asks the user's systemd about every unit, the API server about its
readiness and the node's conditions (with the admin certificate), and the runtime whether it answers
CRI. Changes nothing.

Exit status: 0 when the node is healthy (every unit active, API ready, node Ready, runtime answering),
1 when it is not, or when no node is installed, 7 when it is stopped (no unit of it runs:
\`rootless-k8s start\` starts it).`,
  options: {
    json: { type: "boolean", description: "Print the status as JSON (schemaVersion 1)" },
    prefix: { type: "string", valueName: "DIR", description: "The --prefix the node was installed with" },
  },
  examples: ["rootless-k8s status", "rootless-k8s status --json | jq .nodeView.conditions"],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  const receipt = await requireReceipt(ctx.env, opt.str(parsed, "prefix"));
  const st = await nodeStatus(receipt, ctx.env);
  if (opt.bool(parsed, "json")) ctx.out.out(JSON.stringify(st, null, 2));
  else {
    for (const l of renderStatus(st, receipt.plan.paths.home, ctx.out.style)) ctx.out.out(l);
  }
  return st.healthy ? ExitCode.Ok : st.stopped ? ExitCode.Stopped : ExitCode.Failure;
}
