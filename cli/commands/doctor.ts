// `rootless-k8s doctor`: can this host run a rootless node, in which mode, and what fixes each
// problem. Thin: facts (cli/host/gather) -> checks (cli/doctor) -> text, JSON or the root script.
import { opt, type CommandSpec, type Parsed } from "../args";
import { ExitCode, UsageError } from "../errors";
import { statSync } from "node:fs";
import { localHost } from "../host/host";
import { gatherFacts, UnknownUserError } from "../host/gather";
import * as doctor from "../doctor/index";
import { doctorJson } from "../doctor/json";
import { renderReport } from "../doctor/report";
import { runChecks } from "../doctor/check";
import { nodeChecks } from "../doctor/checks/node";
import { showOutcomes } from "../doctor/present";
import { requireReceipt } from "../apply/receipt";
import { nodeFacts } from "../inspect/node-facts";
import type { Context } from "../context";

export const spec: CommandSpec = {
  name: "doctor",
  summary: "Check whether this host can run a rootless node, and how to fix it",
  usage:
    "rootless-k8s doctor [--json | --root-script] [--user NAME|UID] [--root DIR] [--data-dir DIR]  |  rootless-k8s doctor --node [--json]",
  description: `
Reads the host (nothing is changed) and prints one line per check: ok, warn, fail or skip, with the
exact fix, root commands kept apart from your own. Then the verdict: delegated (cgroup v2 with cpu,
memory and pids delegated: real per-pod limits), none (runs without cgroup control, and says what
that gives up) or blocked (no rootless node until the failures are fixed).

Exit status: 0 when no check failed (warnings allowed), 1 when any check failed, 2 for bad usage.`,
  options: {
    json: { type: "boolean", description: "Print the result as JSON (schemaVersion 1, see docs/doctor-json.md)" },
    "root-script": { type: "boolean", description: "Print only the root-side fixes as one script, for review then `| sudo sh`" },
    user: {
      type: "string",
      valueName: "NAME|UID",
      description: "Evaluate the host for this user (subids, delegation, linger); default: you",
    },
    root: {
      type: "string",
      valueName: "DIR",
      description: "Read host files under DIR instead of / (a mounted system image); no commands are run",
    },
    "data-dir": { type: "string", valueName: "DIR", description: "Folder the node's data would live in (free space, file system)" },
    node: {
      type: "boolean",
      description: "Check the installed node as it runs: units, readiness, owner cgroup, snapshotter in use, ports, linger",
    },
    prefix: { type: "string", valueName: "DIR", description: "With --node: the --prefix the node was installed with" },
  },
  examples: [
    "rootless-k8s doctor",
    "rootless-k8s doctor --root-script | sudo sh",
    "sudo rootless-k8s doctor --user alice",
    "rootless-k8s doctor --json | jq .mode",
  ],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  if (opt.bool(parsed, "node")) return nodeDoctor(ctx, { json: opt.bool(parsed, "json"), prefix: opt.str(parsed, "prefix") });
  return hostDoctor(ctx, parsed);
}

/** `doctor --node`: exit 0 when nothing failed (warnings allowed), 1 otherwise. */
async function nodeDoctor(ctx: Context, opts: { json: boolean; prefix?: string }): Promise<number> {
  const receipt = await requireReceipt(ctx.env, opts.prefix);
  const checks = runChecks(nodeChecks, await nodeFacts(receipt, ctx.env));
  const failed = doctor.anyFailed(checks);
  if (opts.json) {
    const shown = checks.map(({ id, label, status, summary, fix, details }) => ({
      id,
      label,
      status,
      summary,
      fix,
      ...(details ? { details } : {}),
    }));
    ctx.out.out(
      JSON.stringify(
        { schemaVersion: 1, node: receipt.plan.node.name, mode: receipt.plan.mode.name, healthy: !failed, checks: shown },
        null,
        2,
      ),
    );
  } else {
    const s = ctx.out.style;
    ctx.out.out(s.bold(`Node ${receipt.plan.node.name} (mode ${receipt.plan.mode.name})`));
    for (const l of showOutcomes(checks, s)) ctx.out.out(l);
  }
  return failed ? ExitCode.Failure : ExitCode.Ok;
}

async function hostDoctor(ctx: Context, parsed: Parsed): Promise<number> {
  const json = opt.bool(parsed, "json");
  const script = opt.bool(parsed, "root-script");
  if (json && script) throw new UsageError("--json and --root-script cannot be combined", spec.name);
  const root = opt.str(parsed, "root");
  const dataDir = opt.str(parsed, "data-dir");
  if (dataDir !== undefined && !dataDir.startsWith("/"))
    throw new UsageError(`--data-dir must be an absolute path (got "${dataDir}")`, spec.name);
  if (root !== undefined) {
    if (!statSync(root, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`--root ${root}: no such directory`, spec.name);
  }
  const host = localHost({ root, env: ctx.env });
  let facts;
  try {
    facts = await gatherFacts(host, { user: opt.str(parsed, "user"), dataDir });
  } catch (e) {
    if (e instanceof UnknownUserError) throw new UsageError(`--user: ${e.message}`, spec.name);
    throw e;
  }
  const d = doctor.diagnose(facts);
  if (script) {
    ctx.out.out(doctor.rootScript(d.outcomes, facts));
    return ExitCode.Ok;
  }
  if (json) {
    ctx.out.out(JSON.stringify(doctorJson(facts, d), null, 2));
  } else {
    ctx.out.out(renderReport(facts, d, ctx.out.style));
  }
  return doctor.anyFailed(d.outcomes) ? ExitCode.Failure : ExitCode.Ok;
}
