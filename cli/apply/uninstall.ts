// `rootless-k8s uninstall [--purge]`: stop and disable the node, remove its units (daemon-reload,
// reset-failed), binaries, configuration, helper scripts, logs and runtime state; keep the data and
// the PKI. --purge removes those too, and the download cache, including files owned by sub-UIDs
// (removed from inside a user namespace, as `rootlesskit rm -rf` would). Idempotent: it works after
// a partial or failed install, and a second run finds nothing to do. It never removes a path the
// receipt does not list or that lies outside the tool's own folders.
import { promises as fsp } from "node:fs";
import { homedir } from "node:os";
import * as path from "node:path";
import { ExitCode, UserError, refuseRoot } from "../errors";
import type { Context } from "../commands/registry";
import type { Plan } from "../plan/plan";
import { createPrompter } from "../ui/prompt";
import { exists, isWithin, writeFileAtomic } from "./files";
import { allUnits, rootsOf } from "./node";
import { readReceipt, receiptLocation, writeReceipt, type KubeconfigMerge, type Receipt } from "./receipt";
import { checkOwnedRoots, currentIdentity, mayRemove, removeEmptyDirs, removeTrees } from "./remove";
import { systemdUser } from "./systemd";

export interface UninstallOptions {
  purge: boolean;
  yes: boolean;
  prefix?: string;
}

export interface UninstallReport {
  removed: string[];
  kept: string[];
  stoppedUnits: string[];
  /** What was left for the user to do by hand, one line each. */
  notes: string[];
}

export async function uninstallNode(ctx: Context, o: UninstallOptions): Promise<number> {
  refuseRoot("uninstall");
  const out = ctx.out;
  const file = receiptLocation(ctx.env, o.prefix);
  const receipt = await readReceipt(file);
  if (!receipt) {
    out.out(`Nothing to uninstall: no node is installed for this user (no receipt at ${file}).`);
    return ExitCode.Ok;
  }
  // The receipt's folders are judged against what the receipt cannot vouch for itself: the user's
  // home and the --prefix given now (never the receipt's own plan, which could name any prefix).
  const home = ctx.env.HOME || homedir();
  checkOwnedRoots(receipt.roots, { home, prefix: o.prefix ? path.resolve(o.prefix) : null });
  if (receipt.state === "uninstalled" && !o.purge) {
    out.out(`The node is already uninstalled; its data is kept in ${receipt.roots.data} and ${receipt.roots.pki}.`);
    out.out("Remove those too with: rootless-k8s uninstall --purge");
    return ExitCode.Ok;
  }

  const prompter = createPrompter({ out, yes: o.yes, stdinIsTTY: ctx.stdinIsTTY, signal: ctx.signal });
  if (!o.yes && !prompter.interactive) {
    throw new UserError("uninstall asks before it removes anything, and cannot ask here (no terminal)", {
      exitCode: ExitCode.Refused,
      fix: `re-run with --yes to confirm: rootless-k8s uninstall${o.purge ? " --purge" : ""} --yes`,
    });
  }
  const what = o.purge
    ? `Remove the node and ALL its data (etcd, images, volumes, PKI, download cache) from ${home}?`
    : `Stop and remove the node (units, binaries, configuration)? Data and PKI are kept.`;
  if (!(await prompter.confirm(what, { default: false, unattended: true }))) {
    out.err("Nothing was changed.");
    return ExitCode.Ok;
  }

  const { acquireInstallLock } = await import("../fetch/index");
  const lock = await acquireInstallLock({ env: ctx.env, purpose: "rootless-k8s uninstall" });
  let report: UninstallReport;
  try {
    report = await removeNode(ctx, receipt, file, o.purge, lock.dir);
  } finally {
    await lock.release();
  }
  if (o.purge) await removeEmptyDirs(receipt.roots.state, path.dirname(receipt.roots.state)).catch(() => {});
  out.out(`Uninstalled: ${report.stoppedUnits.length} units stopped, ${report.removed.length} paths removed.`);
  for (const n of report.notes) out.err(`${out.errStyle.yellow("note:")} ${n}`);
  if (report.kept.length) {
    out.out(`Kept (your data): ${report.kept.join(", ")}`);
    out.out("Remove it too with: rootless-k8s uninstall --purge");
  } else out.out("Nothing of the node is left.");
  return ExitCode.Ok;
}

/** Stops the units, then removes what the receipt lists and the tool's folders (but data/PKI unless purge). */
export async function removeNode(ctx: Context, receipt: Receipt, receiptFile: string, purge: boolean, lockDir: string): Promise<UninstallReport> {
  const plan = receipt.plan as Plan | null;
  const systemd = systemdUser({ env: ctx.env });
  const removed: string[] = [];
  const gone = async (paths: string[]) => {
    const present: string[] = [];
    for (const p of paths) {
      if (!mayRemove(p, receipt)) throw new UserError(`refusing to remove ${p}: neither listed in the receipt nor below the tool's folders`);
      if (await exists(p)) present.push(p);
    }
    await removeTrees(present, currentIdentity, ctx.signal);
    removed.push(...present);
  };

  // 1. Stop and disable. The user's own docker.service (docker runtime) is never touched.
  await systemd.ensureReachable();
  const ours = plan ? allUnits(plan).filter((u) => !(plan.runtime.name === "docker" && u === plan.units.owner)) : receipt.units;
  const loaded = [];
  for (const u of ours) if ((await systemd.state(u)).loadState !== "not-found") loaded.push(u);
  if (loaded.length) {
    await systemd.stop([...loaded].reverse());
    await systemd.disable(loaded.filter((u) => u.endsWith(".target") || u === receipt.target));
  }

  // 2. Unit files and every other rendered file, except the PKI (kept unless purge).
  const files = receipt.files.filter((f) => purge || f.kind !== "pki");
  await gone(files.map((f) => f.path));
  const unitDir = plan?.paths.unitDir;
  if (unitDir) await removeUnitLinks(unitDir, ours, receipt, removed);
  await systemd.daemonReload().catch(() => {});
  await systemd.resetFailed(ours);

  // 3. Binaries (every version set), helper scripts, logs and runtime state: never data.
  const r = receipt.roots;
  await gone([r.versions, ...(r.libexec ? [r.libexec] : []), ...(r.logs ? [r.logs] : []), r.runtime]);

  // 4. The config folder, keeping the PKI (unless purge); the data (unless purge).
  const keepPki = !purge && (await exists(r.pki));
  const configLeft = (await fsp.readdir(r.config).catch(() => [] as string[])).map((n) => path.join(r.config, n)).filter((p) => !(keepPki && p === r.pki));
  await gone(configLeft);
  if (!keepPki) await gone([r.config]);
  if (purge) {
    await gone([r.data]);
    if (plan) await removeCache(plan.paths.cacheDir, removed);
  }
  const note = receipt.kubeconfigMerge ? await unmergeKubeconfig(receipt.kubeconfigMerge, ctx.env.HOME || homedir(), removed) : null;

  // 5. The receipt: gone with a purge; otherwise it records what was kept, for a later --purge.
  const kept = [...(!purge && (await exists(r.data)) ? [r.data] : []), ...(keepPki ? [r.pki] : [])];
  if (purge) {
    const leftovers = (await fsp.readdir(r.state).catch(() => [] as string[])).map((n) => path.join(r.state, n)).filter((p) => p !== lockDir && p !== receiptFile);
    await gone(leftovers);
    await fsp.rm(receiptFile, { force: true });
  } else {
    await writeReceipt(receiptFile, {
      ...receipt,
      state: "uninstalled",
      files: receipt.files.filter((f) => f.kind === "pki"),
      sets: {},
      current: null,
      previous: null,
      kubeconfigMerge: null,
      roots: plan ? rootsOf(plan) : receipt.roots,
    });
    // Folders only this node used (its libexec, versions) are gone; keep the state root for the receipt.
  }
  for (const d of receipt.createdDirs) await removeEmptyDirs(d, path.dirname(d)).catch(() => {});
  if (plan) await removeEmptyDirs(path.dirname(plan.paths.logDir), plan.paths.home).catch(() => {});
  return { removed, kept, stoppedUnits: loaded, notes: note ? [note] : [] };
}

/** Links `systemctl enable` made (default.target.wants/…) for our units, when they are still there. */
async function removeUnitLinks(unitDir: string, units: string[], receipt: Receipt, removed: string[]): Promise<void> {
  const wantsDirs = (await fsp.readdir(unitDir).catch(() => [] as string[])).filter((n) => n.endsWith(".wants") || n.endsWith(".requires"));
  for (const d of wantsDirs) {
    for (const u of units) {
      const link = path.join(unitDir, d, u);
      const target = await fsp.readlink(link).catch(() => null);
      if (target !== null && receipt.files.some((f) => f.path === path.resolve(path.dirname(link), target))) {
        await fsp.rm(link, { force: true });
        removed.push(link);
      }
    }
    await fsp.rmdir(path.join(unitDir, d)).catch(() => {});
  }
}

async function removeCache(dir: string, removed: string[]): Promise<void> {
  if (!dir.split("/").some((s) => s.includes("rootless-k8s")) || !(await exists(dir))) return;
  await fsp.rm(dir, { recursive: true, force: true });
  removed.push(dir);
}

/**
 * Takes our context, cluster and user out of ~/.kube/config; removes the file (inside `home`) when
 * only ours was in it. A file that is no kubeconfig any more (not YAML, or no contexts list) is left
 * as it is, and the note returned says what to do by hand: it never stops the uninstall.
 */
export async function unmergeKubeconfig(m: KubeconfigMerge, home: string, removed: string[]): Promise<string | null> {
  const text = await fsp.readFile(m.file, "utf8").catch(() => null);
  if (text === null) return null;
  const YAML = await import("yaml");
  type Doc = Record<string, unknown> & { clusters?: { name: string }[]; users?: { name: string }[]; contexts?: { name: string }[]; "current-context"?: string };
  let doc: Doc | null;
  try {
    const parsed: unknown = YAML.parse(text);
    doc = parsed && typeof parsed === "object" && Array.isArray((parsed as Doc).contexts) ? (parsed as Doc) : null;
  } catch {
    doc = null;
  }
  if (!doc) return `${m.file} is no kubeconfig any more, so it was left as it is: take the context ${m.context} (cluster ${m.cluster}, user ${m.user}) out by hand`;
  const drop = <T extends { name: string }>(list: T[] | undefined, name: string) => (list ?? []).filter((e) => e.name !== name);
  const next = { ...doc, clusters: drop(doc.clusters, m.cluster), users: drop(doc.users, m.user), contexts: drop(doc.contexts, m.context) };
  if (next["current-context"] === m.context) delete next["current-context"];
  if (next.clusters.length + next.users.length + next.contexts.length === 0 && isWithin(m.file, home)) {
    await fsp.rm(m.file, { force: true });
    await fsp.rmdir(path.dirname(m.file)).catch(() => {});
  } else await writeFileAtomic(m.file, YAML.stringify(next, { lineWidth: 0 }), { mode: 0o600 });
  removed.push(`${m.file} (context ${m.context})`);
  return null;
}
