// File primitives of the only code that changes the machine: atomic writes (temp file in the same
// folder, fsync, rename, fsync of the folder), folders created with exact modes, atomic symlink
// switches, and content hashes. A crash or Ctrl-C at any point leaves either the old or the new
// file, never a torn one; a leftover temp file is named `.<name>.rk8s-tmp-*` and swept on the next write.
import { createHash, randomBytes } from "node:crypto";
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { hashFile as digestOf } from "../fetch/digest";

export function sha256(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** sha256 of a file's content (streamed: an installed binary is large), or null when it does not exist. */
export async function hashFile(p: string): Promise<string | null> {
  try {
    return await digestOf(p, "sha256");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
}

/**
 * A sha256 as the tool records it in a receipt: 64 lower-case hex digits. Anything else (empty, cut
 * short, upper case, not a string) proves nothing about a file, so every comparison with a receipt
 * goes through this: a malformed hash never counts as "unchanged".
 */
export function isSha256(v: unknown): v is string {
  return typeof v === "string" && /^[0-9a-f]{64}$/.test(v);
}

/**
 * True only when `recorded` is a well-formed sha256 (isSha256) and the file at `p` exists and has
 * exactly that content: the file is provably the one the tool wrote. False otherwise (fail closed).
 */
export async function hasRecordedContent(p: string, recorded: unknown): Promise<boolean> {
  return isSha256(recorded) && (await hashFile(p)) === recorded;
}

const TMP_MARK = ".rk8s-tmp-";

/** A hidden, unique name beside `target` for a file on its way there: `.<name><mark><random hex>`. */
export function tempPathBeside(target: string, mark = TMP_MARK): string {
  return path.join(path.dirname(target), `.${path.basename(target)}${mark}${randomBytes(6).toString("hex")}`);
}

async function fsyncDir(dir: string): Promise<void> {
  const fd = await fsp.open(dir, "r");
  try {
    await fd.sync();
  } finally {
    await fd.close();
  }
}

/**
 * Creates every missing folder of `dir` with `mode` (`dir` itself gets exactly `mode`, whatever the
 * umask). An existing `dir` loses the permission bits `mode` does not grant (a PKI folder left 0755
 * by hand becomes 0700 again), but is never opened further: a folder the user keeps private (their
 * ~/.config/systemd/user, a --prefix) stays private. Returns the folders it created, outermost
 * first, so a receipt can list exactly what was added.
 */
export async function ensureDir(dir: string, mode = 0o755): Promise<string[]> {
  const created: string[] = [];
  const missing: string[] = [];
  let cur = path.resolve(dir);
  for (;;) {
    const st = await fsp.lstat(cur).catch(() => null);
    if (st) {
      if (!st.isDirectory()) throw new Error(`${cur} exists and is not a folder`);
      break;
    }
    missing.unshift(cur);
    const up = path.dirname(cur);
    if (up === cur) break;
    cur = up;
  }
  for (const d of missing) {
    await fsp.mkdir(d, { mode }).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EEXIST") throw e;
    });
    created.push(d);
  }
  if (missing.length) await fsp.chmod(dir, mode);
  else {
    const now = (await fsp.stat(dir)).mode & 0o7777;
    const tightened = now & ~(0o777 & ~mode);
    if (tightened !== now) await fsp.chmod(dir, tightened);
  }
  return created;
}

export interface WriteOptions {
  /** Permission bits of the file (default 0644). Keys and kubeconfigs: 0600. */
  mode?: number;
}

/**
 * Writes `content` to `target` atomically: a temp file in the same folder, written with its final
 * mode from the start (a key is never world-readable, not even for a moment), fsync, rename over the
 * target, fsync of the folder. The folder must exist.
 */
export async function writeFileAtomic(target: string, content: string | Uint8Array, opts: WriteOptions = {}): Promise<void> {
  const mode = opts.mode ?? 0o644;
  const tmp = tempPathBeside(target);
  const fd = await fsp.open(tmp, "wx", mode);
  try {
    await fd.writeFile(content);
    await fd.chmod(mode); // the umask may have narrowed the mode given to open()
    await fd.sync();
  } catch (e) {
    await fd.close().catch(() => {});
    await fsp.rm(tmp, { force: true });
    // A write through the handle names no file (ENOSPC, EDQUOT): name the target.
    throw Object.assign(e as NodeJS.ErrnoException, { path: (e as NodeJS.ErrnoException).path ?? target });
  }
  await fd.close();
  await renameInto(tmp, target);
}

/** Points `link` at `target` atomically (a new link under a temp name, renamed over the old one). */
export async function switchSymlink(link: string, target: string): Promise<void> {
  const tmp = tempPathBeside(link);
  await fsp.symlink(target, tmp);
  await renameInto(tmp, link);
}

/** Renames the temp `tmp` over `target` (removing `tmp` when that fails), then makes it durable (fsync of the folder). */
async function renameInto(tmp: string, target: string): Promise<void> {
  try {
    await fsp.rename(tmp, target);
  } catch (e) {
    await fsp.rm(tmp, { force: true });
    throw e;
  }
  await fsyncDir(path.dirname(target));
}

/** Removes temp files an interrupted write left in `dir` (ours only, by their marker). */
export async function sweepTempFiles(dir: string): Promise<string[]> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  const stale = names.filter((n) => n.startsWith(".") && n.includes(TMP_MARK)).map((n) => path.join(dir, n));
  for (const f of stale) await fsp.rm(f, { force: true, recursive: true });
  return stale;
}

/** The file's permission bits, or null when it does not exist. */
export async function modeOf(p: string): Promise<number | null> {
  const st = await fsp.lstat(p).catch(() => null);
  return st ? st.mode & 0o7777 : null;
}

export async function exists(p: string): Promise<boolean> {
  return (await fsp.lstat(p).catch(() => null)) !== null;
}

/** True when `child` is `parent` or lies below it (lexically, after resolving `..`). */
export function isWithin(child: string, parent: string): boolean {
  const rel = path.relative(path.resolve(parent), path.resolve(child));
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}
