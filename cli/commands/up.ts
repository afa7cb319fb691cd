// `rootless-k8s up`: run the installed node under the tool's own supervisor, for hosts without a
// systemd user manager. Thin: cli/supervisor/up.ts (the supervisor), cli/apply/lifecycle.ts (--detach).
import { opt, type CommandSpec, type Parsed } from "../args";
import { startNode } from "../apply/lifecycle";
import type { Context } from "../context";
import { UP_GIVES_UP } from "../doctor/up";
import { detachUp, runUp, upPlan } from "../supervisor/up";
import { LIFECYCLE_OPTIONS, timeoutOf } from "./durations";

export const spec: CommandSpec = {
  name: "up",
  summary: "Run the node in the foreground without systemd (--detach: in the background)",
  usage: "rootless-k8s up [--detach [--no-wait] [--timeout DURATION]] [--prefix DIR]",
  description: `
Runs the installed node's services as children of this process, on hosts where no systemd user
manager runs (containers, CI jobs, batch nodes, WSL without systemd, OpenRC): the same services,
order, commands and environment as the systemd units, from the same plan. A service that exits is
started again with backoff; one that fails 10 times in a row (3 for the namespace owner) stops the
node, with its last log lines. Output goes to one file per service (\`rootless-k8s logs\`).
Ctrl-C or SIGTERM stops every service in reverse order and leaves no process behind.

--detach runs the supervisor in the background (its pid in $XDG_RUNTIME_DIR/rootless-k8s/up.pid, its
output in the logs folder, rootless-k8s-up.log) and waits until the node is Ready, as \`rootless-k8s
start\` does; --no-wait returns as soon as the supervisor answers. \`rootless-k8s stop\` stops it.
What it gives up against systemd: ${UP_GIVES_UP}.

Exit status: 0 once stopped (foreground) or Ready (--detach), 1 when a service gave up or the node did
not become Ready, 2 bad usage, 3 when no node is installed, when the node runs in systemd, when
another \`up\` runs it (its pid is named), or when run as root.`,
  options: {
    detach: { type: "boolean", description: "Run in the background and wait until the node is Ready" },
    "no-wait": { type: "boolean", description: "With --detach: return once the supervisor answers" },
    ...LIFECYCLE_OPTIONS,
  },
  examples: ["rootless-k8s up", "rootless-k8s up --detach", "rootless-k8s up --detach --no-wait && rootless-k8s status"],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  const prefix = opt.str(parsed, "prefix");
  const detach = opt.bool(parsed, "detach");
  const timeoutSeconds = timeoutOf(parsed, spec.name);
  const plan = await upPlan(ctx, spec.name, prefix);
  if (!detach) return runUp(ctx, plan);
  if (!opt.bool(parsed, "no-wait")) return startNode(ctx, { prefix, timeoutSeconds });
  const pid = await detachUp(ctx, plan);
  ctx.out.out(`rootless-k8s up runs the node ${plan.node.name} in the background (pid ${pid}); \`rootless-k8s status\` shows it.`);
  return 0;
}
