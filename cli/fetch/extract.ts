// Installing verified artifacts as a bin folder: only the binaries the manifest names are written,
// into a fresh temporary folder next to the destination, which is then renamed into place. Files
// are created by us with mode 0755 (no setuid/setgid, no owner from the archive); an unsafe or
// incomplete archive, an error or an interrupt leaves nothing behind. Given the cache, the binaries
// come from its unpacked folders (unpacked.ts), hard-linked where the two share a file system and
// copied where not.
import { constants, promises as fsp } from "node:fs";
import { basename, dirname, join } from "node:path";
import { InterruptedError, isSystemError } from "../errors";
import { cacheLayout } from "./cache";
import { acquireLock } from "./lock";
import type { FetchedArtifact } from "./types";
import { BINARY_MODE, relativePath, type UnpackedFile, unpackArtifact } from "./unpack";
import { unpackedInCache } from "./unpacked";

export interface InstalledBinary {
  /** Installed name, e.g. "kubelet". */
  name: string;
  /** Absolute path after the rename into place. */
  path: string;
  /** sub-folder of the bin folder ("cni") or null. */
  dir: string | null;
  artifactId: string;
  component: string;
  version: string;
  /** sha256 of the installed file, computed while writing it (for a receipt). */
  sha256: string;
}

/**
 * Writes the binaries of `fetched` into `destBinDir` (created or replaced as a whole), through the
 * cache's unpacked folders when `cacheDir` (the cache `fetched` came from) is given.
 * Throws UserError exit 4 for an unsafe or incomplete archive, 130 when aborted.
 */
export async function installBinaries(
  fetched: FetchedArtifact[],
  destBinDir: string,
  opts: { signal?: AbortSignal; cacheDir?: string } = {},
): Promise<InstalledBinary[]> {
  const parent = dirname(destBinDir);
  // (Made here: removed again if this fails and leaves it empty, so a failed fetch leaves no empty versions/<set>.)
  const made = await fsp.mkdir(parent, { recursive: true, mode: 0o755 });
  const tmp = await fsp.mkdtemp(join(parent, `.${basename(destBinDir)}.new-`));
  try {
    const installed: UnpackedFile[] = [];
    // The cache's unpacked folders are written under its lock, as its blobs are (not beside a `cache clean`).
    const cache = opts.cacheDir ? cacheLayout(opts.cacheDir) : null;
    const lock = cache ? await acquireLock(cache.lockDir, { purpose: "a rootless-k8s install from this cache" }) : null;
    try {
      for (const f of fetched) {
        opts.signal?.throwIfAborted();
        if (!cache) {
          installed.push(...(await unpackArtifact(f, tmp, { signal: opts.signal })));
          continue;
        }
        for (const c of await unpackedInCache(f, cache, opts.signal)) {
          await placeFile(c.file, join(tmp, relativePath(c.binary)));
          installed.push(c.binary);
        }
      }
    } finally {
      await lock?.release();
    }
    await replaceDir(tmp, destBinDir);
    return installed.map((b) => ({ ...b, path: join(destBinDir, relativePath(b)) }));
  } catch (e) {
    await fsp.rm(tmp, { recursive: true, force: true });
    if (made) await fsp.rmdir(parent).catch(() => undefined);
    if (opts.signal?.aborted) throw new InterruptedError("interrupted while installing binaries; nothing was changed");
    // A write through a stream names no file (ENOSPC, EDQUOT): the folder it was filling, so the error says where.
    if (isSystemError(e) && e.path === undefined) e.path = destBinDir;
    throw e;
  }
}

/** A hard link to `from` at `to`, or a copy (a clone where the file system can) where there can be no link. */
async function placeFile(from: string, to: string): Promise<void> {
  await fsp.mkdir(dirname(to), { recursive: true, mode: 0o755 });
  if (
    await fsp.link(from, to).then(
      () => true,
      () => false,
    )
  )
    return;
  try {
    await fsp.copyFile(from, to, constants.COPYFILE_FICLONE);
    await fsp.chmod(to, BINARY_MODE);
  } catch (e) {
    // The error is the destination's (a full disk): installBinaries names the folder being filled.
    if (isSystemError(e)) e.path = undefined;
    throw e;
  }
}

/** Renames `from` to `to`; an existing `to` is moved aside first and removed after. */
async function replaceDir(from: string, to: string): Promise<void> {
  await fsp.chmod(from, 0o755);
  try {
    await fsp.rename(from, to);
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "EEXIST" && code !== "ENOTEMPTY" && code !== "EISDIR" && code !== "ENOTDIR") throw e;
  }
  const aside = `${from}.old`;
  await fsp.rename(to, aside);
  try {
    await fsp.rename(from, to);
  } catch (e) {
    await fsp.rename(aside, to).catch(() => undefined);
    throw e;
  }
  await fsp.rm(aside, { recursive: true, force: true });
}
