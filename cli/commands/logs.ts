// `rootless-k8s logs [COMPONENT] [-f]`: journalctl --user for the node's units, or, where the user
// manager has no journal, the units' log files (tail). Changes nothing.
import { opt, type CommandSpec, type Parsed } from "../args";
import { ExitCode, UsageError } from "../errors";
import { spawn } from "node:child_process";
import { requireReceipt } from "../apply/receipt";
import { startOrder } from "../apply/node";
import { lastLogLines, unitLogFile } from "../clients/systemd";
import { rotateLogFiles } from "../apply/log-files";
import { LOG_FILE_CAP_BYTES, LOG_GENERATIONS } from "../plan/logging";
import * as path from "node:path";
import type { UnitNames } from "../plan/plan";
import { supervisorOf, upPaths } from "../plan/supervisor";
import type { Context } from "../context";

/** Component names (and the short forms people type) → the plan's unit role. */
export const COMPONENTS: Record<string, keyof UnitNames> = {
  rootlesskit: "owner",
  runtime: "owner",
  containerd: "owner",
  crio: "owner",
  etcd: "etcd",
  "kube-apiserver": "apiServer",
  apiserver: "apiServer",
  "kube-controller-manager": "controllerManager",
  "controller-manager": "controllerManager",
  "kube-scheduler": "scheduler",
  scheduler: "scheduler",
  kubelet: "kubelet",
  "kube-proxy": "kubeProxy",
  proxy: "kubeProxy",
  "cri-dockerd": "criDockerd",
  ports: "ports",
  overlay: "overlay",
  netpol: "networkPolicy",
  "network-policy": "networkPolicy",
  "csr-approver": "csrApprover",
  approver: "csrApprover",
};

export const spec: CommandSpec = {
  name: "logs",
  summary: "Show the logs of a node component (journalctl --user)",
  usage: "rootless-k8s logs [COMPONENT] [-f] [-n LINES] [--prefix DIR]",
  description: `
Shows the output of the node's units: all of them, or one component. Uses \`journalctl --user\`;
where the user manager has no journal (no journald), the units write to log files instead, and
these are shown (with -f, followed like tail -F). Each file is rotated past ${LOG_FILE_CAP_BYTES / 2 ** 20} MiB, with
${LOG_GENERATIONS} older generations kept (<unit>.log.1, .2): the shown lines are read across them.

Components: rootlesskit (also: runtime, containerd), etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kubelet, kube-proxy, ports, overlay, netpol, csr-approver, cri-dockerd (docker runtime only);
up (also: supervisor), the lines of \`rootless-k8s up\` itself on a node it runs.`,
  options: {
    follow: { type: "boolean", short: "f", description: "Keep printing new lines (Ctrl-C stops)" },
    lines: { type: "string", short: "n", valueName: "N", description: "How many lines to show first (default 100)" },
    prefix: { type: "string", valueName: "DIR", description: "The --prefix the node was installed with" },
    rotate: {
      type: "boolean",
      description: `Rotate the log files past ${LOG_FILE_CAP_BYTES / 2 ** 20} MiB now (a timer of the node does it every 5 minutes)`,
    },
  },
  positionals: [{ name: "COMPONENT", description: "One component (default: every unit of the node)" }],
  examples: ["rootless-k8s logs kubelet", "rootless-k8s logs -f", "rootless-k8s logs kube-apiserver -n 20"],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  const lines = opt.int(parsed, "lines", 0, 1_000_000, spec.name) ?? 100;
  const name = parsed.positionals[0];
  // `rootless-k8s up`'s own lines (a node it runs): which service it started, restarted or gave up on.
  const supervisor = name === "up" || name === "supervisor";
  const role = name === undefined || supervisor ? null : COMPONENTS[name];
  if (name !== undefined && !role && !supervisor) {
    throw new UsageError(`no component "${name}" (one of: ${[...new Set(Object.keys(COMPONENTS))].join(", ")})`, spec.name);
  }
  const { plan } = await requireReceipt(ctx.env, opt.str(parsed, "prefix"));
  if (opt.bool(parsed, "rotate")) {
    if (plan.logging.to !== "file") {
      ctx.out.out("Nothing to rotate: the node's units log to the journal (journald bounds it).");
      return ExitCode.Ok;
    }
    const rotated = await rotateLogFiles(plan.paths.logDir);
    ctx.out.out(
      rotated.length
        ? rotated.map((r) => `rotated ${path.basename(r.file)} (${(r.bytes / 2 ** 20).toFixed(1)} MiB)`).join("\n")
        : `No log file past ${LOG_FILE_CAP_BYTES / 2 ** 20} MiB.`,
    );
    return ExitCode.Ok;
  }
  if (supervisor) {
    if (supervisorOf(plan) !== "up")
      throw new UsageError(`the node runs in your systemd, not under rootless-k8s up: see \`rootless-k8s logs\``, spec.name);
    const file = upPaths(plan.paths).log;
    const shown = (await lastLogLines(file, lines)) ?? [];
    if (shown.length) ctx.out.out(shown.join("\n"));
    if (!opt.bool(parsed, "follow")) return ExitCode.Ok;
    return runFollower(ctx, { cmd: "tail", argv: ["-n", "0", "-F", file] });
  }
  const unit = role ? plan.units[role] : null;
  if (role && !unit) throw new UsageError(`${name} is not part of this node (runtime ${plan.runtime.name})`, spec.name);
  const units = unit ? [unit] : startOrder(plan);
  const follow = opt.bool(parsed, "follow");
  if (plan.logging.to === "file") {
    // Each file's last lines across its rotations, headed as tail heads them when there are several.
    const files = units.map((u) => unitLogFile(plan.paths.logDir, u));
    for (const f of files) {
      const shown = (await lastLogLines(f, lines)) ?? [];
      if (files.length > 1) ctx.out.out(`==> ${f} <==`);
      if (shown.length) ctx.out.out(shown.join("\n"));
    }
    if (!follow) return ExitCode.Ok;
  }
  const args =
    plan.logging.to === "journal"
      ? {
          cmd: "journalctl",
          argv: ["--user", ...units.flatMap((u) => ["-u", u]), "-n", String(lines), "--no-pager", ...(follow ? ["-f"] : [])],
        }
      : { cmd: "tail", argv: ["-n", "0", "-F", ...units.map((u) => unitLogFile(plan.paths.logDir, u))] };
  return runFollower(ctx, args);
}

/** journalctl -f or tail -F, until it ends or Ctrl-C. */
function runFollower(ctx: Context, args: { cmd: string; argv: string[] }): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(args.cmd, args.argv, { stdio: "inherit", env: ctx.env });
    const stop = () => child.kill("SIGTERM");
    ctx.signal.addEventListener("abort", stop, { once: true });
    child.on("error", (e) => {
      ctx.out.err(`error: ${args.cmd}: ${e.message}`);
      resolve(ExitCode.Failure);
    });
    child.on("close", (code) => {
      ctx.signal.removeEventListener("abort", stop);
      resolve(ctx.signal.aborted ? ExitCode.Ok : code === 0 ? ExitCode.Ok : ExitCode.Failure);
    });
  });
}
