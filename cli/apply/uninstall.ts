// `rootless-k8s uninstall [--purge]`: stop and disable the node, remove its units (daemon-reload,
// reset-failed), binaries, configuration, helper scripts, logs and runtime state; keep the data and
// the PKI. --purge removes those too, and the download cache, including files owned by sub-UIDs
// (removed from inside a user namespace, as `rootlesskit rm -rf` would). Idempotent: it works after
// a partial or failed install, and a second run finds nothing to do. It removes a file only when
// the receipt lists it AND it lies inside the tool's own folders (computed from the environment and
// --prefix, never from the receipt: cli/apply/trust.ts), and keeps a listed file whose content changed.
import { promises as fsp } from "node:fs";
import { privateFolderProblem, serviceManager } from "../clients/supervisor";
import { selfCommand } from "../self-command";
import { homedir } from "node:os";
import * as path from "node:path";
import { PREFIX_MARKER } from "../plan/paths";
import { ExitCode, UserError, refuseRoot } from "../errors";
import type { Context } from "../context";
import { acquireInstallLock } from "../fetch/index";
import type { Plan } from "../plan/plan";
import { createPrompter } from "../ui/prompt";
import { removeAddons } from "./addons";
import { leaveCluster } from "./leave";
import { exists, hasRecordedContent, isSha256, isWithin } from "./files";
import { unmergeAdminContext } from "./kubeconfig-merge";
import { allUnits } from "./node";
import { layout } from "../render/layout";
import { readReceipt, receiptLocation, writeReceipt, type Receipt } from "./receipt";
import { currentIdentity, removeEmptyDirs, removeTrees } from "./remove";
import { systemdUser } from "../clients/systemd";
import { checkReceiptPaths, mayRemoveEmptyDir, mayRemovePath, ownFolders, resolvedPath, type OwnFolders } from "./trust";

export interface UninstallOptions {
  purge: boolean;
  yes: boolean;
  prefix?: string;
}

export interface UninstallReport {
  removed: string[];
  /** Add-on objects deleted through the API server ("Deployment kube-system/coredns"). */
  addons: string[];
  /** A worker: what leaving its cluster did (drained, Node deleted). */
  cluster: string[];
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
  // Everything the receipt names is judged against what the receipt cannot vouch for itself: the
  // tool's folders computed from the environment and the --prefix given now (never the receipt's
  // own plan, which could name any prefix). A path that fails stops the run before anything changes.
  const home = ctx.env.HOME || homedir();
  const own = ownFolders(ctx.env, o.prefix ? path.resolve(o.prefix) : null);
  checkReceiptPaths(receipt, own);
  if (receipt.state === "uninstalled" && !o.purge) {
    out.out(`The node is already uninstalled; its data is kept in ${own.roots.data} and ${own.roots.pki}.`);
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
    ? `Remove the node and ALL its data (etcd, images, volumes, PKI, download cache) from ${own.prefix ?? home}?`
    : `Stop and remove the node (units, binaries, configuration)? Data and PKI are kept.`;
  if (!(await prompter.confirm(what, { default: false, unattended: true }))) {
    out.err("Nothing was changed.");
    return ExitCode.Ok;
  }

  const lock = await acquireInstallLock({ env: ctx.env, purpose: "rootless-k8s uninstall" });
  let report: UninstallReport;
  try {
    report = await removeNode(ctx, receipt, file, o.purge, lock.dir, own);
  } finally {
    await lock.release();
  }
  if (o.purge) await removeEmptyDirs(own.roots.state, path.dirname(own.roots.state)).catch(() => {});
  out.out(
    `Uninstalled: ${report.stoppedUnits.length} units stopped, ${report.removed.length} paths removed${report.addons.length ? `, ${report.addons.length} add-on objects deleted` : ""}.`,
  );
  for (const c of report.cluster) out.out(`  ${c}`);
  for (const n of report.notes) out.err(`${out.errStyle.yellow("note:")} ${n}`);
  if (report.kept.length) {
    out.out(`Kept (your data): ${report.kept.join(", ")}`);
    out.out("Remove it too with: rootless-k8s uninstall --purge");
  } else out.out("Nothing of the node is left.");
  return ExitCode.Ok;
}

/**
 * Stops the units, then removes what the receipt lists and the tool's own folders (but data/PKI unless
 * purge). `own`: the tool's folders computed from the environment; the receipt has passed
 * checkReceiptPaths against them.
 */
export async function removeNode(
  ctx: Context,
  receipt: Receipt,
  receiptFile: string,
  purge: boolean,
  lockDir: string,
  own: OwnFolders,
): Promise<UninstallReport> {
  const plan = receipt.plan as Plan | null;
  const systemd = plan ? serviceManager(plan, { env: ctx.env, self: selfCommand() }) : systemdUser({ env: ctx.env });
  const removed: string[] = [];
  const notes: string[] = [];
  const keptFiles: string[] = [];
  // The /tmp runtime folder of a node run by `up` is ours only when this node used it and it is a
  // real folder of the user's own (never through a link someone else put in /tmp).
  const upRuntime =
    plan?.paths?.runtimeDir === own.upRuntime && privateFolderProblem(path.dirname(own.upRuntime)) === null ? own.upRuntime : null;
  const trees = [...Object.values(own.roots), own.cache, ...(upRuntime ? [upRuntime] : [])].map((t) => resolvedPath(t));
  // A whole tree goes only when it is one of the tool's own folders or lies inside one.
  const gone = async (paths: string[]) => {
    const present: string[] = [];
    for (const p of paths) {
      const r = resolvedPath(p);
      if (!trees.some((t) => isWithin(r, t))) throw new UserError(`refusing to remove ${p}: it is not inside the tool's own folders`);
      if (await exists(p)) present.push(p);
    }
    await removeTrees(present, currentIdentity, ctx.signal);
    removed.push(...present);
  };
  // A listed file goes when it is still the file the tool wrote (same sha256); a folder never. A
  // receipt entry whose sha256 is empty or malformed proves nothing: the file is kept, like a changed one.
  const goneListed = async (files: Receipt["files"]) => {
    for (const f of files) {
      if (!mayRemovePath(f.path, own)) throw new UserError(`refusing to remove ${f.path}: it lies outside the tool's own folders`);
      const st = await fsp.lstat(f.path).catch(() => null);
      if (!st) continue;
      if (st.isDirectory()) {
        notes.push(`kept ${f.path}: the receipt lists it as a file, but it is a folder`);
        keptFiles.push(f.path);
        continue;
      }
      if (st.isFile() && !(await hasRecordedContent(f.path, f.sha256))) {
        notes.push(
          isSha256(f.sha256)
            ? `kept ${f.path}: changed since rootless-k8s wrote it (remove it by hand if you do not need it)`
            : `kept ${f.path}: the receipt records no valid sha256 for it, so it cannot be shown to be the file rootless-k8s wrote (remove it by hand if you do not need it)`,
        );
        keptFiles.push(f.path);
        continue;
      }
      await fsp.rm(f.path, { force: true });
      removed.push(f.path);
    }
  };

  // 0. The add-ons' objects, through the API server while it runs: the data (etcd) may stay.
  //    A worker leaves its cluster instead: drained while its kubelet runs, then its kubelet
  //    stopped, then its Node deleted (a running kubelet would register it anew).
  const worker = plan?.role === "worker";
  const addonsGone = plan && !worker && !purge && receipt.state !== "uninstalled" ? await removeAddons(plan) : { removed: [], notes: [] };
  notes.push(...addonsGone.notes);
  const left =
    plan && worker && receipt.state !== "uninstalled"
      ? await leaveCluster(plan, { signal: ctx.signal, beforeDelete: () => systemd.stop([plan.units.kubelet]) })
      : { done: [], notes: [] };
  notes.push(...left.notes);

  // 1. Stop and disable. The user's own docker.service (docker runtime) is never touched.
  //    No published port outlives this: every one (the API server's and the port publisher's) is a
  //    listening socket of RootlessKit's own process, the main process of the namespace owner unit,
  //    which stops here (last, after the ports unit); the kernel closes its sockets when it exits,
  //    also when it is killed. The publisher only asks RootlessKit; it holds no port itself.
  await systemd.ensureReachable();
  const ours = (plan ? allUnits(plan).filter((u) => !(plan.runtime.name === "docker" && u === plan.units.owner)) : receipt.units).filter(
    (u) => /^[A-Za-z0-9@:._-]+$/.test(u),
  );
  const loaded = [];
  for (const u of ours) if ((await systemd.state(u)).loadState !== "not-found") loaded.push(u);
  if (loaded.length) {
    await systemd.stop([...loaded].reverse());
    await systemd.disable(loaded.filter((u) => u.endsWith(".target") || u === receipt.target));
  }

  // 2. Unit files and every other rendered file, except the PKI (kept unless purge).
  // Under --purge the config folder goes whole below, so only the files outside it are judged one by one.
  const files = receipt.files.filter((f) => purge || f.kind !== "pki");
  await goneListed(purge ? files.filter((f) => !isWithin(resolvedPath(f.path), resolvedPath(own.roots.config))) : files);
  await removeUnitLinks(own.unitDir, ours, receipt, removed);
  await systemd.daemonReload().catch(() => {});
  await systemd.resetFailed(ours);

  // 3. Binaries (every version set), helper scripts, logs and runtime state: never data.
  // These are the tool's own folders (computed, never taken from the receipt), removed whole.
  const r = own.roots;
  await gone([r.versions, r.libexec, r.logs, r.runtime, ...(upRuntime ? [upRuntime] : [])]);
  // The user's folder in /tmp that `up` made for it (0700, cli/xdg.ts), once empty.
  if (upRuntime) await fsp.rmdir(path.dirname(upRuntime)).catch(() => {});

  // 4. The config folder: with --purge whole; otherwise its listed files went above, and what is left
  //    of it goes only when empty (the PKI and any file the user put there stay).
  //    A worker's kubelet wrote its own kubeconfig (and the join the token's, if it never finished):
  //    no rendered files, so not in the receipt; they go with the node.
  if (plan && worker) {
    const l = layout(plan);
    for (const f of [l.kubeconfigs.kubelet, l.kubeconfigs.kubeletBootstrap])
      if (mayRemovePath(f, own) && (await exists(f))) {
        await fsp.rm(f, { force: true });
        removed.push(f);
      }
  }
  const keepPki = !purge && (await exists(r.pki));
  if (purge) await gone([r.config]);
  else await removeEmptyTree(r.config, [r.pki]);
  if (purge) {
    await gone([r.data]);
    if (await exists(own.cache)) await gone([own.cache]);
  }
  const note = receipt.kubeconfigMerge
    ? await unmergeAdminContext({ ...receipt.kubeconfigMerge, file: own.kubeconfig }, own.home, removed)
    : null;
  if (note) notes.push(note);

  // 5. The receipt: gone with a purge; otherwise it records what was kept, for a later --purge.
  const kept = [...(!purge && (await exists(r.data)) ? [r.data] : []), ...(keepPki ? [r.pki] : []), ...keptFiles];
  if (purge) {
    // The XDG folder is named rootless-k8s: all of it is ours. A --prefix may have got files of the
    // user's since: only what rootless-k8s makes there goes.
    const ours = new Set(
      [r.data, r.config, r.versions, r.libexec, r.logs, own.cache, path.join(r.state, PREFIX_MARKER)].map((p) => path.resolve(p)),
    );
    const entries = (await fsp.readdir(r.state).catch(() => [] as string[])).map((n) => path.join(r.state, n));
    const leftovers = entries.filter((p) => p !== lockDir && p !== receiptFile && (!own.prefix || ours.has(path.resolve(p))));
    const foreign = entries.filter((p) => p !== lockDir && p !== receiptFile && !leftovers.includes(p));
    if (foreign.length) notes.push(`kept in --prefix ${own.prefix}: ${foreign.join(", ")} (not made by rootless-k8s)`);
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
      roots: own.roots,
    });
    // Folders only this node used (its libexec, versions) are gone; keep the state root for the receipt.
  }
  for (const d of receipt.createdDirs.filter((d) => mayRemoveEmptyDir(d, own))) await removeEmptyDirs(d, path.dirname(d)).catch(() => {});
  await removeEmptyDirs(own.state, own.home).catch(() => {});
  return { removed, addons: addonsGone.removed, cluster: left.done, kept, stoppedUnits: loaded, notes };
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

/** Removes the empty folders of `dir` bottom-up (never a folder of `keep`, nor anything that is not a folder). */
async function removeEmptyTree(dir: string, keep: string[]): Promise<void> {
  const st = await fsp.lstat(dir).catch(() => null);
  if (!st?.isDirectory() || keep.includes(dir)) return;
  for (const n of await fsp.readdir(dir).catch(() => [] as string[])) await removeEmptyTree(path.join(dir, n), keep);
  await fsp.rmdir(dir).catch(() => {});
}
