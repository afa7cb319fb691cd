// The receipt (~/.local/share/rootless-k8s/receipt.json): what this tool put on the machine. Every
// file and unit written, with its hash and mode; the version sets with their binaries; the folders
// we created; the plan, versions and mode. Install compares against it to change only what changed;
// uninstall removes only what it lists inside the tool's own folders (cli/apply/trust.ts).
// It is written BEFORE each change (with what is about to be written) and again after, so an
// interrupted run leaves a receipt that covers everything it may have touched.
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { UserError } from "../errors";
import { toolDir } from "../xdg";
import type { Plan } from "../plan/plan";
import { ensureDir, writeFileAtomic } from "./files";
import { checkReceiptOwnership } from "./trust";

export const RECEIPT_SCHEMA = 1;

/** The rendered kinds (cli/render RenderedKind) plus the installed binaries. */
export type FileKind = "unit" | "config" | "pki" | "kubeconfig" | "env" | "cni" | "script" | "addon" | "binary";

export interface ReceiptFile {
  path: string;
  sha256: string;
  mode: number;
  kind: FileKind;
  /** For kind "unit": the unit name; for others: the unit that reads the file (restart on change). */
  unit?: string;
}

export interface ReceiptSet {
  /** Version-set id, e.g. "k8s-1.36.0-a1b2c3d4". */
  id: string;
  /** versions/<id>/bin */
  binDir: string;
  versions: Record<string, string>;
  binaries: ReceiptFile[];
}

/** The folders that are ours entirely: uninstall may remove anything below them. */
export interface OwnedRoots {
  /** ~/.local/share/rootless-k8s (receipt, versions/, data/) */
  state: string;
  /** ~/.local/share/rootless-k8s/data: kept by uninstall, removed by --purge */
  data: string;
  /** ~/.config/rootless-k8s (configs, env, kubeconfigs; pki/ below it is kept by uninstall) */
  config: string;
  /** ~/.config/rootless-k8s/pki: kept by uninstall, removed by --purge */
  pki: string;
  /** $XDG_RUNTIME_DIR/rootless-k8s */
  runtime: string;
  /** ~/.local/share/rootless-k8s/versions */
  versions: string;
  /** ~/.local/state/rootless-k8s: unit log files where the user manager has no journal */
  logs?: string;
  /** libexec: helper scripts rendered from the plan */
  libexec?: string;
}

export interface KubeconfigMerge {
  /** ~/.kube/config */
  file: string;
  context: string;
  cluster: string;
  user: string;
}

export type ReceiptState = "installing" | "installed" | "failed" | "upgrading" | "uninstalled";

export interface Receipt {
  schemaVersion: typeof RECEIPT_SCHEMA;
  /** rootless-k8s version that wrote it. */
  tool: string;
  state: ReceiptState;
  /** The step that failed or was interrupted, when state is "failed". */
  failedStep?: string;
  mode: string;
  runtime: string;
  /** The target unit and every unit, in start order (owner first). */
  target: string;
  units: string[];
  /** Rendered files (units, configs, PKI, kubeconfigs, env, CNI). */
  files: ReceiptFile[];
  /** Installed version sets, by id; `current` is the one the `current` link points at. */
  sets: Record<string, ReceiptSet>;
  current: string | null;
  previous: string | null;
  /**
   * Units a run wrote new files or binaries for and had not yet restarted: recorded before the
   * write, cleared once the restarts are asked for, so a run killed in between leaves them to the next.
   */
  restartsOwed?: string[];
  /** versions/current */
  currentLink: string;
  roots: OwnedRoots;
  /** Folders this tool created outside its roots (e.g. ~/.config/systemd/user), removed only if empty. */
  createdDirs: string[];
  kubeconfigMerge: KubeconfigMerge | null;
  /** The plan the files were rendered from (opaque here; cli/plan owns its type). */
  plan: unknown;
  /**
   * The plan of the set a run last moved off (opaque, as `plan`): an upgrade that resumes a run
   * that did not finish rolls back to it, since `plan` is already the new one's.
   */
  previousPlan?: unknown;
  /** The set an upgrade started from, while it has not finished (cleared once the node is installed). */
  upgradingFrom?: string;
  updatedAt: string;
}

export function receiptPath(stateRoot: string): string {
  return path.join(stateRoot, "receipt.json");
}

/**
 * Reads the receipt; null when there is none. A damaged receipt is a clear error, never a guess; so is
 * one that someone else could have written (not the user's, writable by others, or in a folder
 * writable by others): what it lists would be removed on its word.
 */
export async function readReceipt(file: string): Promise<Receipt | null> {
  let text: string;
  try {
    checkReceiptOwnership(file);
    text = await fsp.readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new UserError(`the receipt ${file} is not valid JSON`, {
      fix: `restore it from a backup, or move it away and run \`rootless-k8s uninstall\` to remove what lies under the tool's own folders`,
    });
  }
  const r = data as Partial<Receipt>;
  if (r.schemaVersion !== RECEIPT_SCHEMA || !Array.isArray(r.files) || !r.roots || typeof r.sets !== "object") {
    throw new UserError(`the receipt ${file} has an unknown format (schema ${String(r.schemaVersion)})`, {
      fix: "use the rootless-k8s version that installed the node, or move the receipt away",
    });
  }
  return r as Receipt;
}

/** Writes the receipt atomically (0600, its folder 0700). */
export async function writeReceipt(file: string, receipt: Receipt): Promise<void> {
  await ensureDir(path.dirname(file), 0o700);
  const body = JSON.stringify({ ...receipt, updatedAt: new Date().toISOString() }, null, 2) + "\n";
  await writeFileAtomic(file, body, { mode: 0o600 });
}

/** Merges file entries by path (later ones win), sorted for stable diffs. */
export function mergeFiles(a: readonly ReceiptFile[], b: readonly ReceiptFile[]): ReceiptFile[] {
  const byPath = new Map<string, ReceiptFile>();
  for (const f of [...a, ...b]) byPath.set(f.path, f);
  return [...byPath.values()].sort((x, y) => x.path.localeCompare(y.path));
}

/** Every path the receipt lists (files, binaries of every set, the current link). */
export function listedPaths(r: Receipt): Set<string> {
  const out = new Set<string>(r.files.map((f) => f.path));
  for (const s of Object.values(r.sets)) for (const b of s.binaries) out.add(b.path);
  out.add(r.currentLink);
  return out;
}

/**
 * Where the receipt of the user's node is, before any plan exists (status, logs, uninstall): below
 * --prefix when given, else $XDG_DATA_HOME/rootless-k8s or ~/.local/share/rootless-k8s, the same
 * rule as the plan's shareDir (cli/plan/paths.ts).
 */
export function receiptLocation(env: NodeJS.ProcessEnv, prefix?: string): string {
  return receiptPath(prefix ? path.resolve(prefix) : toolDir(env, "XDG_DATA_HOME"));
}

/** The installed node's receipt and plan, or a clear "not installed" error. */
export async function requireReceipt(env: NodeJS.ProcessEnv, prefix?: string): Promise<Receipt & { plan: Plan }> {
  const file = receiptLocation(env, prefix);
  const r = await readReceipt(file);
  if (!r || r.state === "uninstalled" || !r.plan) {
    throw new UserError(
      `no node is installed for this user (no receipt at ${file}${r?.state === "uninstalled" ? ": uninstalled, data kept" : ""})`,
      {
        fix: prefix
          ? "check the --prefix, or install with `rootless-k8s install --prefix DIR`"
          : "install one with `rootless-k8s install` (or pass the --prefix it was installed with)",
      },
    );
  }
  return r as Receipt & { plan: Plan };
}

/** What an upgrade to a set resumes: the one an upgrade to it that did not finish started from. */
export interface UnfinishedUpgrade {
  /** The set the node ran before that upgrade. */
  left: ReceiptSet;
  /** Its plan, when the receipt still holds it (opaque here): what a failure rolls back to. */
  leftPlan: unknown;
}

/**
 * The upgrade to `toId` that a receipt shows unfinished (killed, or failed after it switched), or
 * null: only an upgrade marks it (`upgradingFrom`), so a failed install or join on the same set is
 * never taken for one, and a rollback plan counts only when it is that set's and the set is still there.
 */
export function unfinishedUpgrade(receipt: Receipt, toId: string): UnfinishedUpgrade | null {
  const plan = receipt.plan as { versions?: { id?: string } } | undefined;
  if (receipt.state === "installed" || !receipt.upgradingFrom || plan?.versions?.id !== toId) return null;
  const left = receipt.sets[receipt.upgradingFrom];
  if (!left || left.id === toId) return null;
  const prev = receipt.previousPlan as { versions?: { id?: string } } | undefined;
  return { left, leftPlan: prev?.versions?.id === left.id ? receipt.previousPlan : null };
}
