// `rootless-k8s install`: plan the node from this host's facts, then (issue 5) write and start it.
// Thin: facts (cli/host) → checks (cli/doctor) → plan (cli/plan) → files (cli/render) → apply.
// `--dry-run` stops before apply: it prints the plan (or --json), and with --output DIR writes every
// file the node would get below DIR, mirroring its real path. Nothing else is changed.
import { parseNodePortRange } from "../plan/node-ports";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import * as path from "node:path";
import { checkOutputDir, openOutputDir } from "../apply/output-dir";
import { opt, type CommandSpec, type Parsed } from "../args";
import { ExitCode, UsageError } from "../errors";
import { caFileOption, componentSourceFrom, mirrorOption, versionOptions } from "../fetch/cli";
import { mirrorFrom } from "../fetch/mirror";
import { unknownCheckIds } from "../doctor/index";
import { showOutcomes } from "../doctor/present";
import type { Plan, PlanOptions } from "../plan/plan";
import { describePlan, tildify } from "../plan/describe";
import { isGoDuration, parseEvictionSpec } from "../plan/eviction";
import { folders, generatePki, readPki, renderNode, type RenderedFile } from "../render/index";
import { installNode, type InstallRequest } from "../apply/install";
import { prepareNode } from "../apply/prepare";
import type { Context } from "../context";
import { timeoutOf } from "./durations";

export const spec: CommandSpec = {
  name: "install",
  summary: "Install and start the node in the user's systemd",
  usage: "rootless-k8s install [--dry-run [--output DIR] [--json]] [options]",
  description: `
Checks the host (as \`rootless-k8s doctor\` does), plans the node (mode, runtime, network, ports,
networks, paths), downloads and verifies the components, writes the systemd user units, configs
and PKI, and starts rootless-k8s.target. Run it as the user who will own the node, never as root.

--dry-run shows the plan and changes nothing; with --output DIR it also writes every file the node
would get below DIR, at its real path (DIR/home/you/.config/...), for review. Exit status of a dry
run: 0 when install would go ahead, 3 when it would refuse (a failing check or a bad plan).`,
  options: {
    "dry-run": { type: "boolean", description: "Show the plan and change nothing" },
    output: {
      type: "string",
      valueName: "DIR",
      description:
        "With --dry-run: write every rendered file below DIR, mirroring its target path (DIR: new, or yours and writable by you alone)",
    },
    json: { type: "boolean", description: "With --dry-run: print the plan and the files as JSON" },
    mode: {
      type: "string",
      valueName: "MODE",
      choices: ["delegated", "none"],
      description: "Cgroup mode; only delegated → none can be forced",
    },
    runtime: {
      type: "string",
      valueName: "NAME",
      choices: ["containerd", "crio", "docker"],
      description: "Container runtime (default containerd)",
    },
    "runtime-bin": { type: "string", valueName: "PATH", description: "Use this containerd (1.6 or later) instead of the bundled one" },
    network: {
      type: "string",
      valueName: "DRIVER",
      choices: ["slirp4netns", "pasta", "builtin"],
      description: "RootlessKit network driver (default: the best this host has)",
    },
    "api-port": { type: "string", valueName: "PORT", description: "Host port for the API server (default 6443)" },
    prefix: { type: "string", valueName: "DIR", description: "Keep binaries, data, config and PKI below DIR instead of the XDG folders" },
    "node-name": { type: "string", valueName: "NAME", description: "Node name (default: the host name)" },
    "node-ip": {
      type: "string",
      valueName: "ADDR",
      description:
        "A host address the node advertises, for a control plane other hosts join (default: the namespace's own; pods then no longer reach a host program on ADDR)",
    },
    "taint-none": { type: "boolean", description: "In mode none, also taint the node rootless-k8s.io/resource-isolation=none:NoSchedule" },
    "no-storage": {
      type: "boolean",
      description: "No default StorageClass: skip the local-path provisioner (removes it from a node that has it; volumes stay)",
    },
    "no-metrics": {
      type: "boolean",
      description: "No metrics-server: `kubectl top` does not answer (removes it from a node that has it)",
    },
    "no-dns": {
      type: "boolean",
      description: "No cluster DNS: skip CoreDNS and the kubelet's clusterDNS (removes it from a node that has it)",
    },
    "no-network-policy": {
      type: "boolean",
      description: "Do not enforce NetworkPolicies (the API server still accepts them; `status` says they are not enforced)",
    },
    "node-port-range": {
      type: "string",
      valueName: "FIRST-LAST",
      description: "Where Services' NodePorts come from (default 30000-32767); on a shared host, a range of your own",
    },
    "publish-address": {
      type: "string",
      valueName: "ADDR",
      choices: ["0.0.0.0", "127.0.0.1"],
      description: "Host address for Services' and pods' published ports (default 0.0.0.0; 127.0.0.1: this host only)",
    },
    supervisor: {
      type: "string",
      valueName: "KIND",
      choices: ["systemd", "up"],
      description:
        "What runs the node: systemd (the user's systemd manager) or up (`rootless-k8s up`, no systemd needed); default: systemd where a user manager answers, else up",
    },
    "eviction-hard": {
      type: "string",
      valueName: "SIGNAL<VALUE,...",
      description:
        "The kubelet's hard eviction thresholds, over the defaults (memory.available<100Mi,nodefs.available<5%,nodefs.inodesFree<5%,imagefs.available<5%); 0% turns a signal off",
    },
    "eviction-soft": {
      type: "string",
      valueName: "SIGNAL<VALUE,...",
      description: "Soft eviction thresholds: pods are evicted once one holds for --eviction-soft-grace (none by default)",
    },
    "eviction-soft-grace": {
      type: "string",
      valueName: "DURATION",
      description: "How long a soft threshold must hold before pods are evicted (default 1m30s)",
    },
    "pki-algorithm": {
      type: "string",
      valueName: "ALG",
      choices: ["ecdsa-p256", "rsa-2048"],
      description: "Key algorithm of the PKI (default ecdsa-p256)",
    },
    yes: { type: "boolean", short: "y", description: "Answer yes to every question; never prompt" },
    "ignore-check": { type: "string", valueName: "ID", multiple: true, description: "Go ahead although this doctor check fails" },
    timeout: {
      type: "string",
      valueName: "DURATION",
      description: "How long to wait for the node to be Ready: seconds, or 90s, 5m (default 5m)",
    },
    ...versionOptions,
    mirror: mirrorOption,
    manifest: { type: "string", valueName: "FILE", description: "Use this components manifest instead of the built-in one" },
    bundle: { type: "string", valueName: "FILE", description: "Install offline from a bundle written by `rootless-k8s bundle`" },
    "trust-bundle": { type: "boolean", description: "Accept a bundle whose checksums differ from the built-in pins" },
    "ca-file": caFileOption,
    "merge-kubeconfig": { type: "boolean", description: "Add the admin context to ~/.kube/config (never replaces an entry)" },
    "no-merge-kubeconfig": { type: "boolean", description: "Do not touch ~/.kube/config" },
  },
  examples: [
    "rootless-k8s install",
    "rootless-k8s install --dry-run",
    "rootless-k8s install --dry-run --output /tmp/node && find /tmp/node -type f",
    "rootless-k8s install --dry-run --json | jq .plan.mode",
    "rootless-k8s install --yes --runtime crio --taint-none",
  ],
};

/** Every install flag, parsed and checked: the request of the real install (cli/apply), and the dry run's own flags. */
export interface InstallOptions extends InstallRequest {
  dryRun: boolean;
  output: string | null;
  json: boolean;
}

export function installOptions(parsed: Parsed, ctx: Pick<Context, "cwd" | "env">): InstallOptions {
  const dryRun = opt.bool(parsed, "dry-run");
  const output = opt.str(parsed, "output");
  const json = opt.bool(parsed, "json");
  if (output !== undefined && !dryRun) throw new UsageError("--output works with --dry-run only", spec.name);
  if (output !== undefined) checkOutputDir(path.resolve(ctx.cwd, output), ctx.env.HOME || homedir(), spec.name);
  if (json && !dryRun) throw new UsageError("--json works with --dry-run only", spec.name);
  if (opt.bool(parsed, "merge-kubeconfig") && opt.bool(parsed, "no-merge-kubeconfig")) {
    throw new UsageError("--merge-kubeconfig and --no-merge-kubeconfig cannot be combined", spec.name);
  }
  const timeoutSeconds = timeoutOf(parsed, spec.name);
  const nodeName = opt.str(parsed, "node-name");
  const runtimeBin = opt.str(parsed, "runtime-bin");
  const prefix = opt.str(parsed, "prefix");
  const plan: PlanOptions = {
    mode: opt.str(parsed, "mode") as PlanOptions["mode"],
    runtime: opt.str(parsed, "runtime") as PlanOptions["runtime"],
    runtimeBin: runtimeBin === undefined ? undefined : path.resolve(ctx.cwd, runtimeBin),
    network: opt.str(parsed, "network") as PlanOptions["network"],
    apiPort: opt.int(parsed, "api-port", 1, 65535, spec.name),
    prefix: prefix === undefined ? undefined : path.resolve(ctx.cwd, prefix),
    nodeName,
    nodeIP: opt.str(parsed, "node-ip"),
    taintNone: opt.bool(parsed, "taint-none"),
    dns: opt.bool(parsed, "no-dns") ? false : undefined,
    storage: opt.bool(parsed, "no-storage") ? false : undefined,
    metrics: opt.bool(parsed, "no-metrics") ? false : undefined,
    networkPolicy: opt.bool(parsed, "no-network-policy") ? false : undefined,
    publishAddress: opt.str(parsed, "publish-address") as PlanOptions["publishAddress"],
    nodePortRange: nodePortRangeFlag(parsed, opt.int(parsed, "api-port", 1, 65535, spec.name) ?? 6443),
    pkiAlgorithm: opt.str(parsed, "pki-algorithm") as PlanOptions["pkiAlgorithm"],
    supervisor: opt.str(parsed, "supervisor") as PlanOptions["supervisor"],
    ...evictionFlags(parsed),
    env: ctx.env,
  };
  const ignoreChecks = opt.list(parsed, "ignore-check");
  // A mirror that is no http(s) URL is bad usage (exit 2), refused before doctor runs.
  mirrorFrom(opt.str(parsed, "mirror"), ctx.env);
  const unknown = unknownCheckIds(ignoreChecks);
  if (unknown.length)
    throw new UsageError(`--ignore-check: no check named ${unknown.join(", ")} (see \`rootless-k8s doctor --json\`)`, spec.name);
  return {
    command: "install",
    env: ctx.env,
    dryRun,
    output: output === undefined ? null : path.resolve(ctx.cwd, output),
    json,
    plan,
    yes: opt.bool(parsed, "yes"),
    ignoreChecks,
    timeoutSeconds,
    source: { ...componentSourceFrom(parsed, spec.name), bundle: opt.str(parsed, "bundle"), trustBundle: opt.bool(parsed, "trust-bundle") },
    mergeKubeconfig: opt.bool(parsed, "merge-kubeconfig") ? true : opt.bool(parsed, "no-merge-kubeconfig") ? false : undefined,
  };
}

/** --node-port-range FIRST-LAST, checked before anything runs (exit 2). */
function nodePortRangeFlag(parsed: Parsed, apiPort: number): PlanOptions["nodePortRange"] {
  const text = opt.str(parsed, "node-port-range");
  if (text === undefined) return undefined;
  const r = parseNodePortRange(text, apiPort);
  if (typeof r === "string") throw new UsageError(`--node-port-range "${text}": ${r}`, spec.name);
  return r;
}

/** --eviction-hard, --eviction-soft and --eviction-soft-grace, checked as the kubelet checks them (exit 2 otherwise). */
function evictionFlags(parsed: Parsed): Pick<PlanOptions, "evictionHard" | "evictionSoft" | "evictionSoftGrace"> {
  const out: Pick<PlanOptions, "evictionHard" | "evictionSoft" | "evictionSoftGrace"> = {};
  for (const [flag, key] of [
    ["eviction-hard", "evictionHard"],
    ["eviction-soft", "evictionSoft"],
  ] as const) {
    const text = opt.str(parsed, flag);
    if (text === undefined) continue;
    const spec = parseEvictionSpec(text);
    if (typeof spec === "string") throw new UsageError(`--${flag} "${text}": ${spec}`, "install");
    out[key] = spec;
  }
  const grace = opt.str(parsed, "eviction-soft-grace");
  if (grace !== undefined) {
    if (!out.evictionSoft) throw new UsageError("--eviction-soft-grace works with --eviction-soft only", "install");
    if (!isGoDuration(grace)) throw new UsageError(`--eviction-soft-grace "${grace}" is not a duration (e.g. 90s, 1m30s, 5m)`, "install");
    out.evictionSoftGrace = grace;
  }
  return out;
}

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  const o = installOptions(parsed, ctx);
  if (!o.dryRun) return installNode(ctx, o);
  return dryRun(ctx, o);
}

type FileState = "new" | "changed" | "unchanged";

async function dryRun(ctx: Context, o: InstallOptions): Promise<number> {
  const prepared = await prepareNode(o);
  const { plan, blocking } = prepared;
  const read = (f: string) => readFile(f, "utf8").catch(() => null);
  const pki = await generatePki(plan, { existing: await readPki(plan, read) });
  const files = renderNode(plan, pki);
  const states = await Promise.all(
    files.map(async (f): Promise<FileState> => {
      const now = await read(f.path);
      return now === null ? "new" : now === f.content.toString() ? "unchanged" : "changed";
    }),
  );
  if (o.output) await writeOutput(o.output, plan, files);

  if (o.json) {
    ctx.out.out(
      JSON.stringify(
        {
          schemaVersion: 1,
          plan,
          files: files.map((f, i) => ({
            path: f.path,
            mode: `0${f.mode.toString(8)}`,
            kind: f.kind,
            unit: f.unit ?? null,
            sha256: createHash("sha256").update(f.content).digest("hex"),
            state: states[i],
          })),
          blockingChecks: blocking.map((c) => ({ id: c.id, summary: c.summary, fix: c.fix })),
          wouldInstall: blocking.length === 0,
          output: o.output,
        },
        null,
        2,
      ),
    );
    return blocking.length ? ExitCode.Refused : ExitCode.Ok;
  }

  const s = ctx.out.style;
  ctx.out.out(s.bold(`Node plan for ${plan.user.name} (dry run: nothing was changed)`));
  ctx.out.out("");
  for (const line of describePlan(plan, s)) ctx.out.out(line);
  ctx.out.out("");
  const counts = { new: 0, changed: 0, unchanged: 0 };
  for (const st of states) counts[st]++;
  ctx.out.out(s.bold(`Files (${files.length}: ${counts.new} new, ${counts.changed} changed, ${counts.unchanged} unchanged)`));
  files.forEach((f, i) =>
    ctx.out.out(`  ${states[i]!.padEnd(9)} ${`0${f.mode.toString(8)}`.padEnd(5)} ${f.kind.padEnd(10)} ${tildify(f.path, plan.paths.home)}`),
  );
  if (o.output) ctx.out.out(`\nWrote them below ${o.output}.`);
  ctx.out.out("");
  if (blocking.length) {
    ctx.out.out(
      s.bold(`Install would stop: ${blocking.length} doctor check${blocking.length > 1 ? "s" : ""} fail${blocking.length > 1 ? "" : "s"}`),
    );
    for (const l of showOutcomes(blocking, s, { name: "id" })) ctx.out.out(l);
    ctx.out.out(`Fix them (\`rootless-k8s doctor\` explains each), or name them with --ignore-check ID.`);
    return ExitCode.Refused;
  }
  ctx.out.out(`Install would go ahead: run \`rootless-k8s install\` without --dry-run.`);
  return ExitCode.Ok;
}

/** Writes every file below dir at its target path, with its mode; folders as the node would have them; no link followed. */
async function writeOutput(dir: string, plan: Plan, files: RenderedFile[]): Promise<void> {
  const out = await openOutputDir(dir);
  for (const f of folders(plan)) await out.mkdir(f.path, f.mode);
  for (const f of files) await out.write(f.path, f.content, f.mode);
}
