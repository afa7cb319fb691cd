// `rootless-k8s upgrade [--to VERSION]`: move the node to another version set. The new set is
// downloaded and verified next to the old one (versions/<set>), the skew is checked first (one minor
// at a time, no downgrade, the kubelet never newer than the API server), the units are rendered
// again, the `current` link is switched atomically, and only the units whose binary or files changed
// restart, in dependency order. If the node is not Ready on the new versions in time, the old set
// comes back the same way, automatically, and the command says so.
import { gitVersionOf } from "../clients/kubernetes";
import { supervisorOf } from "../plan/supervisor";
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { ExitCode, InterruptedError, UserError, messageOf, refuseRoot } from "../errors";
import type { Context } from "../context";
import { acquireInstallLock } from "../fetch/index";
import type { Plan, PlanOptions } from "../plan/plan";
import { generatePki, readPki, renderNode } from "../render/index";
import { createProgress } from "../ui/progress";
import { createPrompter } from "../ui/prompt";
import { loadComponents, type ComponentSource } from "./components";
import { applyPlan } from "./apply-plan";
import { addonsStep } from "./addons";
import { networkPolicyStep } from "./network-policy";
import { prepareNode, refuseOnBlocking } from "./prepare";
import { inStartOrder, restartsFor, unitsWithNewVersions } from "./node";
import { readReceipt, requireReceipt, unfinishedUpgrade, writeReceipt, type Receipt } from "./receipt";
import { skewProblem } from "../plan/skew";
import { clusterParameters } from "../render/join";
import { workerClient } from "./worker-ready";
import { type ClusterParameters, workerAvoids, workerPlan, workerSkewProblem } from "../plan/worker";
import { diffFiles } from "./sync";
import { evictionOptions } from "../plan/eviction";

export interface UpgradeOptions {
  /** --to VERSION: the Kubernetes version the chosen set must carry. */
  to?: string;
  source: ComponentSource;
  dryRun: boolean;
  yes: boolean;
  timeoutSeconds: number;
  prefix?: string;
  ignoreChecks: string[];
}

/** The plan options that reproduce the installed node's choices on the new versions. */
export function optionsFromPlan(p: Plan, env: NodeJS.ProcessEnv): PlanOptions {
  return {
    mode: p.mode.name,
    runtime: p.runtime.name,
    runtimeBin: p.runtime.source === "host" && p.runtime.name === "containerd" ? p.runtime.binary : undefined,
    network: p.network.driver === "docker" ? undefined : p.network.driver,
    apiPort: p.ports.apiServer,
    prefix: p.paths.prefix ?? undefined,
    nodeName: p.node.name,
    // A server's --node-ip stays; a worker's address comes from its join.
    nodeIP: p.join ? undefined : p.node.ip,
    taintNone: p.node.taints.some((t) => t.key === "rootless-k8s.io/resource-isolation"),
    // A node installed before add-ons existed gets the defaults; --no-dns stays off.
    dns: p.addons ? p.addons.dns.enabled : undefined,
    storage: p.addons?.storage ? p.addons.storage.enabled : undefined,
    metrics: p.addons?.metrics ? p.addons.metrics.enabled : undefined,
    // A node installed before ports were published gets the default address.
    publishAddress: p.publish?.bindAddress,
    // What runs the node stays what it was (`up`, or the user's systemd).
    supervisor: supervisorOf(p),
    nodePortRange: p.network.nodePorts,
    pkiAlgorithm: p.pki.algorithm,
    // The thresholds chosen at install stay (the defaults are re-applied, so new ones reach old nodes).
    ...evictionOptions(p.kubelet.eviction),
    // A worker's namespace keeps clear of its control plane, as when it joined.
    ...(p.join ? { avoidCidrs: workerAvoids(p.join.server, p.cidrs) } : {}),
    env,
  };
}

export async function upgradeNode(ctx: Context, o: UpgradeOptions): Promise<number> {
  refuseRoot("upgrade");
  const out = ctx.out;
  const receipt = await requireReceipt(ctx.env, o.prefix);
  const from = receipt.plan;
  const components = await loadComponents(o.source, from.arch, ctx.env, ctx.signal);
  const to = components.versions;
  // An upgrade to this set that did not finish (killed, or failed after it switched): it is resumed,
  // and said to be from the set it left; a failure rolls back to that set's plan when the receipt has it.
  const unfinished = unfinishedUpgrade(receipt, to.id);
  const resumed = unfinished?.left;
  const rollbackTo = (unfinished?.leftPlan as Plan | null | undefined) ?? from;
  const fromK8s = resumed?.versions.kubernetes ?? from.versions.components.kubernetes ?? "?";
  const toK8s = to.components.kubernetes ?? "?";
  const origin = o.source.manifestFile
    ? `the manifest ${o.source.manifestFile}`
    : o.source.bundle
      ? `the bundle ${o.source.bundle}`
      : "this rootless-k8s's built-in manifest";

  if (o.to && o.to.replace(/^v/, "") !== toK8s) {
    throw new UserError(`--to ${o.to}: ${origin} offers Kubernetes ${toK8s}, not ${o.to.replace(/^v/, "")}`, {
      exitCode: ExitCode.Refused,
      fix: `pass the manifest of that version set with --manifest FILE (or a newer rootless-k8s: rootless-k8s self-upgrade)`,
    });
  }
  if (to.id === receipt.current && receipt.state === "installed") {
    out.out(`The node already runs version set ${to.id} (Kubernetes ${toK8s}); nothing to do.`);
    return ExitCode.Ok;
  }
  const skew = to.id === receipt.current ? null : skewProblem(from.versions.components, to.components);
  if (skew) {
    throw new UserError(`refusing to upgrade: ${skew}`, {
      exitCode: ExitCode.Refused,
      fix: "upgrade through each minor version in turn (rootless-k8s upgrade --to MINOR for each, or --manifest FILE)",
    });
  }

  // A worker never runs a kubelet newer than its control plane's API server: asked now, not remembered.
  const cluster = from.role === "worker" ? await workerCluster(from, toK8s) : null;

  // The new plan: the same choices (mode, runtime, ports, paths, node) on the new versions.
  const options = optionsFromPlan(from, ctx.env);
  const prepared = await prepareNode(
    { command: "upgrade", env: ctx.env, plan: options, source: o.source, ignoreChecks: o.ignoreChecks },
    {
      async beforePlan(_facts, _diagnosis, blocking) {
        refuseOnBlocking(out, blocking, "upgrade");
        return options;
      },
      // A worker stays the worker it is: the same control plane, address and pod range.
      ...(cluster && from.join
        ? {
            shapePlan: (p: Plan) =>
              workerPlan(p, {
                server: from.join!.server,
                caPem: from.join!.caPem,
                caHash: from.join!.caHash,
                cluster,
                nodeIP: from.join!.nodeIP,
                podCidr: from.cidrs.node ?? null,
              }),
          }
        : {}),
    },
    components,
  );
  const plan = prepared.plan;
  out.err(
    `${out.errStyle.bold("upgrade")} Kubernetes ${fromK8s} → ${toK8s} (version set ${resumed?.id ?? receipt.current} → ${to.id}${resumed ? "; resuming an upgrade that did not finish" : ""})`,
  );
  for (const line of await describeChanges(rollbackTo, plan, receipt.restartsOwed ?? [])) out.err(`  ${line}`);
  if (o.dryRun) {
    out.out(`Dry run: nothing was changed. Run without --dry-run to upgrade.`);
    return ExitCode.Ok;
  }
  const prompter = createPrompter({ out, yes: o.yes, stdinIsTTY: ctx.stdinIsTTY, signal: ctx.signal });
  if (!(await prompter.confirm(`Upgrade the node to Kubernetes ${toK8s}?`, { default: true, unattended: true }))) {
    out.err("Nothing was changed.");
    return ExitCode.Ok;
  }

  const lock = await acquireInstallLock({ env: ctx.env, purpose: "rootless-k8s upgrade" });
  try {
    const progress = await createProgress(out);
    const timeoutMs = o.timeoutSeconds * 1000;
    try {
      const upgradeFrom = resumed?.id ?? receipt.current ?? undefined;
      await applyPlan(ctx, { plan, previous: receipt, components, progress, merge: false, timeoutMs, source: o.source, upgradeFrom });
    } catch (e) {
      if (e instanceof InterruptedError || ctx.signal.aborted) throw e;
      if (e instanceof UserError && e.exitCode !== ExitCode.Failure) throw e; // refused, verification, network: nothing was switched
      // The step that failed, as this run saw it (the receipt's word may not have reached a full disk).
      if (!resumed && progress.current === "fetch") return stoppedBeforeSwitch(receipt, plan, e);
      return rollBack(ctx, rollbackTo, plan, e, timeoutMs);
    }
    // The new version set may bring new add-on images: re-applied (no change when there is none).
    if (plan.role !== "worker") await addonsStep(plan, progress, ctx.signal);
    await networkPolicyStep(plan, progress, ctx.signal);
    const done = await readReceipt(plan.paths.receipt);
    if (done) await pruneSets(done, plan);
    out.out(
      `✔ Node ${plan.node.name} is Ready on Kubernetes ${toK8s} (version set ${to.id}; previous ${done?.previous ?? receipt.current} kept for a rollback).`,
    );
    return ExitCode.Ok;
  } finally {
    await lock.release();
  }
}

/**
 * The new set failed in its fetch step (a full disk, say): nothing was written, linked or restarted,
 * so there is nothing to roll back. The receipt says installed again, and the error keeps its own fix.
 */
async function stoppedBeforeSwitch(receipt: Receipt, failed: Plan, cause: unknown): Promise<never> {
  await writeReceipt(failed.paths.receipt, receipt).catch(() => undefined);
  const from = receipt.plan as Plan;
  throw new UserError(
    `upgrade to Kubernetes ${failed.versions.components.kubernetes} stopped before anything was switched (${messageOf(cause)}); the node runs Kubernetes ${from.versions.components.kubernetes} as before`,
    {
      fix: cause instanceof UserError && cause.fix ? cause.fix : "see the lines above, then run the same upgrade again",
      cause,
    },
  );
}

/** The new set failed: bring the old one back the same way (link, files, restarts, readiness). */
async function rollBack(ctx: Context, from: Plan, failed: Plan, cause: unknown, timeoutMs: number): Promise<number> {
  const out = ctx.out;
  const why = messageOf(cause);
  out.err(`${out.errStyle.red("upgrade failed")}: ${why}`);
  out.err(`Rolling back to version set ${from.versions.id} (Kubernetes ${from.versions.components.kubernetes}) ...`);
  const receipt = await readReceipt(from.paths.receipt);
  try {
    const progress = await createProgress(out);
    await applyPlan(ctx, { plan: from, previous: receipt, components: null, progress, merge: false, timeoutMs, source: {} });
  } catch (e) {
    throw new UserError(
      `upgrade to Kubernetes ${failed.versions.components.kubernetes} failed (${why}), and the rollback to ${from.versions.components.kubernetes} failed too: ${messageOf(e)}`,
      {
        fix: "see `rootless-k8s status` and `rootless-k8s logs`; `rootless-k8s install --manifest FILE` with the old set's manifest restores it",
      },
    );
  }
  throw new UserError(
    `upgrade to Kubernetes ${failed.versions.components.kubernetes} failed (${why}); rolled back: the node is Ready on Kubernetes ${from.versions.components.kubernetes} again`,
    {
      fix: "see the log lines above for why the new versions did not come up; nothing else was changed",
    },
  );
}

/** What an upgrade changes: component versions, and the units that restart (in order). */
async function describeChanges(from: Plan, to: Plan, owed: readonly string[]): Promise<string[]> {
  const a = from.versions.components;
  const b = to.versions.components;
  const lines: string[] = [];
  for (const c of [...new Set([...Object.keys(a), ...Object.keys(b)])]) {
    if (a[c] !== b[c]) lines.push(`${c}: ${a[c] ?? "none"} → ${b[c] ?? "none"}`);
  }
  const pki = await generatePki(to, { existing: await readPki(to, (f) => fsp.readFile(f, "utf8").catch(() => null)) });
  const changes = await diffFiles(renderNode(to, pki), null);
  lines.push(`files to rewrite: ${changes.write.length ? changes.write.map((f) => f.path.split("/").pop()).join(", ") : "none"}`);
  const restarts = inStartOrder(to, [...restartsFor(to, changes.write, unitsWithNewVersions(to, a, b)), ...owed]);
  lines.push(`restarts, in order: ${restarts.length ? restarts.join(" → ") : "none"}`);
  return lines;
}

/** Keeps the current set and the previous one; older sets' folders go (they are listed in the receipt). */
async function pruneSets(receipt: Receipt, plan: Plan): Promise<void> {
  // Never the set the `current` link names, whatever the receipt says.
  const linked = await fsp.readlink(plan.paths.currentLink).catch(() => null);
  const keep = new Set([receipt.current, receipt.previous, linked].filter((x): x is string => !!x));
  const drop = Object.keys(receipt.sets).filter((id) => !keep.has(id));
  if (!drop.length) return;
  for (const id of drop) await fsp.rm(path.join(plan.paths.versionsDir, id), { recursive: true, force: true });
  const sets = Object.fromEntries(Object.entries(receipt.sets).filter(([id]) => keep.has(id)));
  await writeReceipt(plan.paths.receipt, { ...receipt, sets });
}

/**
 * The control plane a worker belongs to, as it is now: its version from its /version (anyone may
 * read it), the rest from the worker's plan. Refused (exit 3) when the new set's Kubernetes would be
 * newer than that API server, or when the API server cannot be asked.
 */
async function workerCluster(from: Plan, toK8s: string): Promise<ClusterParameters> {
  const server = from.join?.server ?? "the control plane";
  const client = await workerClient(from);
  const r = client ? await client.get("/version", 10_000).catch((e: unknown) => ({ status: 0, body: messageOf(e) })) : null;
  const version = r?.status === 200 ? gitVersionOf(r.body) : "";
  if (!version)
    throw new UserError(
      `refusing to upgrade: the control plane at ${server} cannot be asked its version (${r ? r.body.slice(0, 120) || `HTTP ${r.status}` : "the kubelet has no certificate"})`,
      {
        exitCode: ExitCode.Refused,
        fix: "check that this host reaches it (rootless-k8s status), then upgrade again",
      },
    );
  const skew = workerSkewProblem(toK8s, version);
  if (skew)
    throw new UserError(`refusing to upgrade: ${skew}`, {
      exitCode: ExitCode.Refused,
      fix: `upgrade the control plane at ${server} first (rootless-k8s upgrade there), then this worker`,
    });
  // The worker's plan holds the cluster's networks and DNS as it took them; the version is now's.
  return { ...clusterParameters(from), kubernetes: version };
}
