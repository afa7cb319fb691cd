// What uninstall may trust. The receipt says what the tool wrote, but a receipt is a file on disk that
// someone may have edited or planted, so nothing it says about WHERE is believed on its word:
// - the tool's own folders are computed from the environment (HOME, XDG_*) and --prefix, never read
//   from the receipt, and the receipt's `roots` must name exactly those;
// - a path is removed only when the receipt lists it AND it lies, after resolving `..` and symlinks,
//   inside one of those folders (a unit file: directly in the user's unit folder, named for the tool);
// - a listed file whose content no longer has the recorded sha256 is kept (the tool did not write it),
//   and so is one whose recorded sha256 is empty or malformed (nothing proves the tool wrote it);
// - the receipt itself must be the user's own: owned by them, not writable by others, in a folder not
//   writable by others.
import { lstatSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import * as path from "node:path";
import { ExitCode, UserError } from "../errors";
import { toolDir, upRuntimeBase } from "../xdg";
import { BIN_NAME } from "../version";
import { isWithin } from "./files";
import type { OwnedRoots, Receipt } from "./receipt";

/** The tool's folders for this user, from the environment and --prefix alone (the plan's rule, cli/plan/paths.ts). */
export interface OwnFolders {
  home: string;
  /** --prefix, resolved; null for the XDG folders. */
  prefix: string | null;
  roots: Required<OwnedRoots>;
  /** The download cache (removed by --purge). */
  cache: string;
  /** The folder of the unit log folder (~/.local/state/rootless-k8s, or the prefix). */
  state: string;
  /** ~/.config/systemd/user: only our unit files directly in it are ours. */
  unitDir: string;
  /** ~/.kube/config: the only kubeconfig our context may be merged into. */
  kubeconfig: string;
  /** The runtime folder of a node run by `rootless-k8s up` without XDG_RUNTIME_DIR (/tmp/rootless-k8s-UID/rootless-k8s). */
  upRuntime: string;
}

export function ownFolders(env: NodeJS.ProcessEnv, prefix: string | null, uid: number = process.getuid?.() ?? 0): OwnFolders {
  const home = path.resolve(env.HOME || homedir());
  const p = prefix ? path.resolve(prefix) : null;
  const share = p ?? toolDir(env, "XDG_DATA_HOME", home);
  const config = p ? path.join(p, "config") : toolDir(env, "XDG_CONFIG_HOME", home);
  const state = p ?? toolDir(env, "XDG_STATE_HOME", home);
  const runtimeBase = env.XDG_RUNTIME_DIR && path.isAbsolute(env.XDG_RUNTIME_DIR) ? env.XDG_RUNTIME_DIR : `/run/user/${uid}`;
  return {
    home,
    prefix: p,
    roots: {
      state: share,
      data: path.join(share, "data"),
      config,
      pki: path.join(config, "pki"),
      runtime: path.join(runtimeBase, BIN_NAME),
      versions: path.join(share, "versions"),
      logs: path.join(state, "logs"),
      libexec: path.join(share, "libexec"),
    },
    cache: p ? path.join(p, "cache") : toolDir(env, "XDG_CACHE_HOME", home),
    state,
    unitDir: path.join(home, ".config", "systemd", "user"),
    kubeconfig: path.join(home, ".kube", "config"),
    upRuntime: path.join(upRuntimeBase(uid), BIN_NAME),
  };
}

/**
 * `p` with `..` and every symlink of its folders resolved; the last part is kept as it is (removing a
 * symlink removes the link, not what it points at). Parts that do not exist yet are joined lexically.
 */
export function resolvedPath(p: string): string {
  const abs = path.resolve(p);
  const base = path.basename(abs);
  let dir = path.dirname(abs);
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(realpathSync(dir), ...rest, base);
    } catch {
      const up = path.dirname(dir);
      if (up === dir) return abs;
      rest.unshift(path.basename(dir));
      dir = up;
    }
  }
}

/** A folder with its own symlinks resolved too (the folder a link names is the one removed below). */
function resolvedDir(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolvedPath(p);
  }
}

/**
 * The receipt at `file` may be trusted: it and its folder belong to the user and nobody else can write
 * them. A receipt someone else could have written could name anything for removal.
 */
export function checkReceiptOwnership(file: string, uid: number = process.getuid?.() ?? 0): void {
  const refuse = (why: string, fix: string) => {
    throw new UserError(`refusing to trust the receipt ${file}: ${why}`, { exitCode: ExitCode.Refused, fix });
  };
  const st = lstatSync(file);
  if (!st.isFile()) refuse("it is not a regular file", "move it away; a receipt is only ever a plain file the tool wrote");
  if (st.uid !== uid)
    refuse(
      `it is owned by uid ${st.uid}, not by you (uid ${uid})`,
      "someone else may have written it: check it, and remove the node's files by hand if it is not yours",
    );
  if (st.mode & 0o022)
    refuse(`it is writable by others (mode 0${(st.mode & 0o777).toString(8)})`, `check its content, then: chmod 600 ${file}`);
  const dir = path.dirname(file);
  const d = statSync(dir);
  if (d.mode & 0o022)
    refuse(
      `its folder ${dir} is writable by others (mode 0${(d.mode & 0o777).toString(8)})`,
      `check the folder's content, then: chmod go-w ${dir}`,
    );
  if (d.uid !== uid && d.uid !== 0) refuse(`its folder ${dir} is owned by uid ${d.uid}, not by you`, "use a --prefix folder of your own");
}

const ROOT_NAMES: Record<keyof OwnedRoots, string> = {
  state: "state",
  data: "data",
  config: "config",
  pki: "pki",
  runtime: "runtime",
  versions: "versions",
  logs: "logs",
  libexec: "libexec",
};

/**
 * Checks everything the receipt would have uninstall touch, before anything is stopped or removed.
 * Throws a one-line UserError naming the first path that fails the rules.
 */
export function checkReceiptPaths(receipt: Receipt, own: OwnFolders): void {
  const home = resolvedDir(own.home);
  const damaged =
    "the receipt was edited or damaged: check it, or run uninstall with the environment (HOME, XDG_*) and --prefix the node was installed with";
  // 1. The tool's own folders are never the home folder, one of its parents, or "/".
  for (const [name, p] of [...Object.entries(own.roots), ["cache", own.cache]] as [string, string][]) {
    const r = resolvedDir(p);
    if (r === "/" || isWithin(home, r)) {
      throw new UserError(
        `refusing to uninstall: the tool's ${name} folder would be ${r}, ${r === home ? "the home folder" : "a parent of the home folder"}`,
        {
          exitCode: ExitCode.Refused,
          fix: "pass the --prefix the node was installed with (never the home folder or /)",
        },
      );
    }
  }
  // 2. The receipt's roots are exactly the tool's folders (a folder merely named rootless-k8s is not).
  for (const [key, p] of Object.entries(receipt.roots) as [keyof OwnedRoots, string | undefined][]) {
    if (p === undefined) continue;
    const want = own.roots[key];
    // A node run by `up` without XDG_RUNTIME_DIR has its runtime folder in /tmp (cli/xdg.ts).
    const alsoOk = key === "runtime" ? own.upRuntime : null;
    const fits = (w: string | null | undefined) => !!w && typeof p === "string" && path.isAbsolute(p) && resolvedDir(p) === resolvedDir(w);
    if (!fits(want) && !fits(alsoOk)) {
      throw new UserError(
        `refusing to remove files: the receipt's ${ROOT_NAMES[key] ?? String(key)} folder "${String(p)}" is not the tool's ${ROOT_NAMES[key] ?? String(key)} folder ${want ?? "(none)"}`,
        {
          fix: damaged,
        },
      );
    }
  }
  // 3. Every listed path lies inside the tool's folders.
  const listed = [
    ...receipt.files.map((f) => f.path),
    ...Object.values(receipt.sets ?? {}).flatMap((s) => [...s.binaries.map((b) => b.path), s.binDir]),
    receipt.currentLink,
  ];
  for (const p of listed) {
    if (!mayRemovePath(p, own)) {
      throw new UserError(`refusing to uninstall: the receipt lists ${String(p)}, which lies outside the tool's own folders`, {
        fix: damaged,
      });
    }
  }
  // 4. Our context may only have been merged into ~/.kube/config.
  const m = receipt.kubeconfigMerge;
  if (m && (typeof m.file !== "string" || resolvedPath(m.file) !== resolvedPath(own.kubeconfig))) {
    throw new UserError(
      `refusing to uninstall: the receipt's merged kubeconfig ${String(m.file)} is not ~/.kube/config (${own.kubeconfig})`,
      { fix: damaged },
    );
  }
}

/** Folders below which a listed path may be removed: the roots, the cache and the state folder. */
function ownTrees(own: OwnFolders): string[] {
  return [...new Set([...Object.values(own.roots), own.cache, own.state].map(resolvedDir))];
}

/**
 * True when `p` (a path the receipt lists) may be removed: it lies strictly inside one of the tool's
 * own folders after resolving `..` and symlinks, or it is one of our unit files directly in the
 * user's unit folder.
 */
export function mayRemovePath(p: unknown, own: OwnFolders): boolean {
  if (typeof p !== "string" || !path.isAbsolute(p) || /[\0]/.test(p)) return false;
  const r = resolvedPath(p);
  if (ownTrees(own).some((t) => r !== t && isWithin(r, t))) return true;
  return path.dirname(r) === resolvedDir(own.unitDir) && path.basename(r).startsWith(BIN_NAME) && !path.basename(r).includes("/");
}

/** The created folders uninstall may remove when empty: the unit folder, ~/.kube and parents of our folders, all strictly below home. */
export function mayRemoveEmptyDir(d: unknown, own: OwnFolders): boolean {
  if (typeof d !== "string" || !path.isAbsolute(d)) return false;
  const r = resolvedPath(d);
  const home = resolvedDir(own.home);
  if (!isWithin(r, home) || r === home) return false;
  const places = [...ownTrees(own), resolvedDir(own.unitDir), path.dirname(resolvedPath(own.kubeconfig))];
  return places.some((pl) => isWithin(pl, r));
}
