// --merge-kubeconfig: the admin context added to ~/.kube/config (never replacing an entry of the
// user's), recorded in the receipt first, with the digest of each entry as merged, so that
// uninstall takes out exactly what was added and nothing the user changed since. The file is
// written where it really is: through a symlink (a ~/.kube/config kept in a dotfiles repository
// stays a link), atomically, with its target's mode and its comments.
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { UserError, messageOf } from "../errors";
import type { Plan } from "../plan/plan";
import { adminKubeconfig, mergeKubeconfig, unmergeKubeconfig, type KubeconfigDigests, type KubeconfigNames } from "../render/kubeconfig";
import type { Pki } from "../render/pki";
import { ensureDir, isSha256, isWithin, writeFileAtomic } from "./files";
import type { KubeconfigMerge, Receipt } from "./receipt";

/** The receipt's record of a merge: where, under which names, and the digest of each entry as merged. */
export type MergeRecord = KubeconfigMerge & { digests?: KubeconfigDigests };

export async function mergeAdminContext(
  plan: Plan,
  pki: Pki,
  receipt: Receipt,
  record: (r: Receipt) => Promise<void>,
): Promise<string | null> {
  const file = plan.paths.userKubeconfig;
  const target = await linkTarget(file);
  // None yet: a new one. One we cannot read is never replaced: the error names it (exit 1).
  const existing = await fsp.readFile(target, "utf8").catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return null;
    throw e;
  });
  let result;
  try {
    result = mergeKubeconfig(existing, adminKubeconfig(plan, pki));
  } catch (e) {
    throw new UserError(`cannot merge into ${file}: ${messageOf(e)}`, {
      fix: `use the node's own kubeconfig (${plan.paths.adminKubeconfig}), or re-run with --no-merge-kubeconfig`,
    });
  }
  const merge: MergeRecord = { file, ...result.names, digests: result.digests };
  if (result.content !== null) {
    await record({ ...receipt, kubeconfigMerge: merge });
    const dir = path.dirname(target);
    if (!(await fsp.stat(dir).catch(() => null))) await ensureDir(dir, 0o700);
    // Our admin key goes into it: never readable by others, whatever the file's mode was.
    await writeThrough(target, result.content, 0o077);
  } else if (JSON.stringify(receipt.kubeconfigMerge) !== JSON.stringify(merge)) await record({ ...receipt, kubeconfigMerge: merge });
  return result.names.context;
}

/**
 * Takes our context, cluster and user out of ~/.kube/config, each only if it is still exactly what
 * install merged (the receipt's digests); removes the file (inside `home`, and not a symlink) when
 * nothing else was in it. What stays (an entry the user changed, one a context of theirs uses, or
 * all of ours when the receipt recorded no digests) is named in the note returned, with the
 * commands that take it out; so is a file that is no kubeconfig any more, which is left as it is.
 * Never stops the uninstall.
 */
export async function unmergeAdminContext(m: KubeconfigMerge, home: string, removed: string[]): Promise<string | null> {
  const target = await linkTarget(m.file);
  let text: string;
  try {
    text = await fsp.readFile(target, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    return `${m.file} could not be read (${(e as NodeJS.ErrnoException).code ?? messageOf(e)}), so it was left as it is: take the context ${m.context} (cluster ${m.cluster}, user ${m.user}) out by hand`;
  }
  const names: KubeconfigNames = { cluster: m.cluster, user: m.user, context: m.context };
  const r = unmergeKubeconfig(text, names, recordedDigests(m));
  if (!r)
    return `${m.file} is no kubeconfig any more, so it was left as it is: take the context ${m.context} (cluster ${m.cluster}, user ${m.user}) out by hand`;
  if (r.content !== null) {
    const isLink = (await fsp.lstat(m.file).catch(() => null))?.isSymbolicLink() ?? false;
    if (r.empty && !isLink && isWithin(m.file, home)) {
      await fsp.rm(m.file, { force: true });
      await fsp.rmdir(path.dirname(m.file)).catch(() => {});
    } else await writeThrough(target, r.content);
    removed.push(`${m.file} (${r.removed.join(", ")})`);
  }
  if (!r.kept.length) return null;
  const what = r.kept.map((k) => `${k.kind} ${k.name} (${k.why})`).join("; ");
  const commands = r.kept.map((k) => `kubectl config --kubeconfig ${m.file} delete-${k.kind} ${k.name}`).join(" && ");
  return `kept in ${m.file}: ${what}; if you no longer need ${r.kept.length === 1 ? "it" : "them"}: ${commands}`;
}

/** The receipt's digests when it recorded them (an older receipt did not): each a sha256, else none. */
function recordedDigests(m: KubeconfigMerge): KubeconfigDigests | null {
  const d = (m as MergeRecord).digests;
  if (!d || typeof d !== "object") return null;
  return isSha256(d.cluster) && isSha256(d.user) && isSha256(d.context) ? { cluster: d.cluster, user: d.user, context: d.context } : null;
}

/** Where `file` really is: symlinks followed (to a target that may not exist yet); `file` itself when it is none. */
async function linkTarget(file: string): Promise<string> {
  let p = file;
  for (let hops = 0; hops < 40; hops++) {
    const link = await fsp.readlink(p).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "EINVAL" || e.code === "ENOENT") return null; // not a link, or nothing there yet
      throw e;
    });
    if (link === null) return p;
    p = path.resolve(path.dirname(p), link);
  }
  throw new UserError(`${file}: too many levels of symbolic links`, { fix: `point ${file} at a kubeconfig file (or remove the link)` });
}

/**
 * Replaces the file at `target` (no symlink: linkTarget resolved it) atomically, keeping its mode
 * less the bits in `drop` (0600 when new).
 */
async function writeThrough(target: string, content: string, drop = 0): Promise<void> {
  const st = await fsp.stat(target).catch(() => null);
  await writeFileAtomic(target, content, { mode: st ? st.mode & 0o7777 & ~drop : 0o600 });
}
