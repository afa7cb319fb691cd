// `rootless-k8s doctor`: can this host run a rootless node, in which mode, and what fixes each
// problem. Thin: facts (cli/host/gather) -> checks (cli/doctor) -> text, JSON or the root script.
import { opt, type CommandSpec, type Parsed } from "../args";
import { joinCredentials } from "./join-args";
import { ExitCode, UsageError } from "../errors";
import { statSync } from "node:fs";
import { hostname } from "node:os";
import { localHost } from "../host/host";
import { gatherFacts, UnknownUserError } from "../host/gather";
import * as doctor from "../doctor/index";
import { doctorJson } from "../doctor/json";
import { renderReport } from "../doctor/report";
import { runChecks, type CheckOutcome } from "../doctor/check";
import { joinChecks } from "../doctor/checks/join";
import { isServerUrl } from "../host/parse/bootstrap-token";
import { joinFacts } from "../host/join-facts";
import { nodeNameFrom } from "../plan/node";
import { TOKEN_ENV } from "../render/join";
import { nodeChecks } from "../doctor/checks/node";
import { showOutcomes } from "../doctor/present";
import { readReceipt, receiptLocation, requireReceipt } from "../apply/receipt";
import type { Plan } from "../plan/plan";
import { nodeFacts } from "../inspect/node-facts";
import type { Context } from "../context";

export const spec: CommandSpec = {
  name: "doctor",
  summary: "Check whether this host can run a rootless node, and how to fix it",
  usage:
    "rootless-k8s doctor [--json | --root-script] [--user NAME|UID] [--root DIR] [--data-dir DIR]  |  rootless-k8s doctor --node [--json]\n" +
    "       ROOTLESS_K8S_TOKEN=ID.SECRET rootless-k8s doctor --join URL --ca-hash sha256:HASH [--node-name NAME] [--json]",
  description: `
Reads the host (nothing is changed) and prints one line per check: ok, warn, fail or skip, with the
exact fix, root commands kept apart from your own. Then the verdict: delegated (cgroup v2 with cpu,
memory and pids delegated: real per-pod limits), none (runs without cgroup control, and says what
that gives up) or blocked (no rootless node until the failures are fixed).

With --join (the line \`rootless-k8s token create\` prints on a control plane): whether this host
can join it: the API server reached, cluster-info published, its CA matching the pin, the token
valid, the server's certificate naming the address, the node name free. The token is read from
ROOTLESS_K8S_TOKEN or --token-file, never from the command line; it is sent to the server only
once the CA matches the pin and cluster-info carries the token's signature.

Exit status: 0 when no check failed (warnings allowed), 1 when any check failed, 2 for bad usage
(also a --token-file its group or others may read).`,
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
    join: {
      type: "string",
      valueName: "URL",
      description: "Check whether this host can join the control plane at URL (https://HOST:PORT)",
    },
    "ca-hash": { type: "string", valueName: "sha256:HASH", description: "With --join: the pin of the cluster's CA, from the join line" },
    "token-file": {
      type: "string",
      valueName: "FILE",
      description: `With --join: read the token (ID.SECRET) from FILE (- for standard input) instead of ${TOKEN_ENV}; a file its group or others may read is refused (chmod 600 FILE)`,
    },
    token: {
      type: "string",
      valueName: "T",
      description: `Refused: a token on the command line is visible to every user; use ${TOKEN_ENV}`,
    },
    "node-name": { type: "string", valueName: "NAME", description: "With --join: the node name to check (default: from the host name)" },
  },
  environment: [{ name: TOKEN_ENV, description: "With --join: the bootstrap token, ID.SECRET" }],
  examples: [
    "rootless-k8s doctor",
    "rootless-k8s doctor --root-script | sudo sh",
    "sudo rootless-k8s doctor --user alice",
    "rootless-k8s doctor --json | jq .mode",
  ],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  if (opt.str(parsed, "token") !== undefined)
    throw new UsageError(
      `--token puts the token where \`ps\` shows it to every user: pass it as ${TOKEN_ENV}=ID.SECRET or --token-file FILE`,
      spec.name,
    );
  if (opt.str(parsed, "join") !== undefined) return joinDoctor(ctx, parsed);
  for (const o of ["ca-hash", "token-file", "node-name"])
    if (opt.str(parsed, o) !== undefined) throw new UsageError(`--${o} works with --join only`, spec.name);
  if (opt.bool(parsed, "node")) return nodeDoctor(ctx, { json: opt.bool(parsed, "json"), prefix: opt.str(parsed, "prefix") });
  return hostDoctor(ctx, parsed);
}

/** The checks as --json shows them. */
function shownChecks(checks: CheckOutcome[]) {
  return checks.map(({ id, label, status, summary, fix, details }) => ({
    id,
    label,
    status,
    summary,
    fix,
    ...(details ? { details } : {}),
  }));
}

/** `doctor --node`: exit 0 when nothing failed (warnings allowed), 1 otherwise. */
async function nodeDoctor(ctx: Context, opts: { json: boolean; prefix?: string }): Promise<number> {
  const receipt = await requireReceipt(ctx.env, opts.prefix);
  const checks = runChecks(nodeChecks, await nodeFacts(receipt, ctx.env));
  const failed = doctor.anyFailed(checks);
  if (opts.json) {
    const shown = shownChecks(checks);
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

/** `doctor --join`: exit 0 when nothing failed (warnings allowed), 1 otherwise. */
async function joinDoctor(ctx: Context, parsed: Parsed): Promise<number> {
  const server = opt.str(parsed, "join")!;
  if (!isServerUrl(server)) throw new UsageError(`--join "${server}" is not an https://HOST:PORT URL`, spec.name);
  const { caHash, token } = joinCredentials(ctx, parsed, spec.name, "--join");
  const nodeName = opt.str(parsed, "node-name") ?? nodeNameFrom(hostname());
  const facts = await joinFacts({ server: server.replace(/\/$/, ""), caHash, token, nodeName });
  const checks = runChecks(joinChecks, facts);
  const failed = doctor.anyFailed(checks);
  if (opt.bool(parsed, "json")) {
    ctx.out.out(
      JSON.stringify({ schemaVersion: 1, join: facts.server, node: nodeName, ready: !failed, checks: shownChecks(checks) }, null, 2),
    );
  } else {
    ctx.out.out(ctx.out.style.bold(`Joining ${facts.server} as node ${nodeName}`));
    for (const l of showOutcomes(checks, ctx.out.style)) ctx.out.out(l);
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
  // The installed node's API port and published ports, as install reads them: its own ports are no
  // obstacle while this user holds them (one rule, doctor/port-choice.ts).
  const mine = root === undefined && opt.str(parsed, "user") === undefined ? await installedPlan(ctx.env) : null;
  let facts;
  try {
    facts = await gatherFacts(host, {
      user: opt.str(parsed, "user"),
      dataDir,
      ...(mine && { ports: [mine.ports.apiServer, mine.ports.kubelet], ownPorts: mine.network.published.map((p) => p.hostPort) }),
    });
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

/** The plan of this user's installed node (default place), or null: none, uninstalled, or a receipt that cannot be read. */
async function installedPlan(env: NodeJS.ProcessEnv): Promise<Plan | null> {
  const r = await readReceipt(receiptLocation(env)).catch(() => null);
  return r && r.state !== "uninstalled" && r.plan ? (r.plan as Plan) : null;
}
