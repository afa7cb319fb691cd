// The download cache: $XDG_CACHE_HOME/rootless-k8s (default ~/.cache/rootless-k8s), addressed by
// checksum, so a file is stored once whatever its URL or mirror, and a second install downloads
// nothing.
//   blobs/<algorithm>/<hex>        verified files, only ever created by a rename after the hash matched
//   partial/<algorithm>-<hex>.part  a download in progress (resumed with Range)
//   partial/<algorithm>-<hex>.json  its URL and validators (ETag / Last-Modified) for If-Range
//   seals/<algorithm>-<hex>.json    the blob's stat when its digest last matched (seal.ts): a blob
//                                   that still matches it is not hashed again
//   unpacked/<algorithm>-<hex>/     the binaries of that archive, ready to be linked (unpacked.ts)
//   lock/                           held while a run writes to the cache
import { promises as fsp } from "node:fs";
import { join } from "node:path";
import { toolDir } from "../xdg";
import { hashFile } from "./digest";
import { readSealFile, type Seal, sameSeal, sealOf, writeSealFile } from "./seal";
import type { FetchedArtifact, HashAlgorithm, PinnedChecksum, ResolvedArtifact } from "./types";

export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return toolDir(env, "XDG_CACHE_HOME");
}

export interface CacheLayout {
  dir: string;
  lockDir: string;
  blob(c: Pick<PinnedChecksum, "algorithm" | "value">): string;
  part(c: Pick<PinnedChecksum, "algorithm" | "value">): string;
  partMeta(c: Pick<PinnedChecksum, "algorithm" | "value">): string;
  seal(c: Pick<PinnedChecksum, "algorithm" | "value">): string;
  unpacked(c: Pick<PinnedChecksum, "algorithm" | "value">): string;
}

export function cacheLayout(dir: string): CacheLayout {
  return {
    dir,
    lockDir: join(dir, "lock"),
    blob: (c) => join(dir, "blobs", c.algorithm, c.value),
    part: (c) => join(dir, "partial", `${c.algorithm}-${c.value}.part`),
    partMeta: (c) => join(dir, "partial", `${c.algorithm}-${c.value}.json`),
    seal: (c) => join(dir, "seals", `${c.algorithm}-${c.value}.json`),
    unpacked: (c) => join(dir, "unpacked", `${c.algorithm}-${c.value}`),
  };
}

export interface CacheEntry {
  algorithm: HashAlgorithm;
  value: string;
  file: string;
  size: number;
  partial: boolean;
  /** The archive's binaries unpacked (unpacked.ts): `size` counts what is not a link to its blob. */
  unpacked?: boolean;
}

/** Everything in the cache: verified blobs and partial downloads. */
export async function listCache(dir: string): Promise<CacheEntry[]> {
  const out: CacheEntry[] = [];
  for (const algorithm of ["sha256", "sha512"] as const) {
    const d = join(dir, "blobs", algorithm);
    for (const value of (await fsp.readdir(d).catch(() => [])).sort()) {
      const st = await fsp.stat(join(d, value)).catch(() => null);
      if (st?.isFile()) out.push({ algorithm, value, file: join(d, value), size: st.size, partial: false });
    }
  }
  const p = join(dir, "partial");
  for (const name of (await fsp.readdir(p).catch(() => [])).sort()) {
    const m = /^(sha256|sha512)-([0-9a-f]+)\.part$/.exec(name);
    if (!m) continue;
    const st = await fsp.stat(join(p, name)).catch(() => null);
    if (st) out.push({ algorithm: m[1] as HashAlgorithm, value: m[2] as string, file: join(p, name), size: st.size, partial: true });
  }
  const u = join(dir, "unpacked");
  for (const name of (await fsp.readdir(u).catch(() => [])).sort()) {
    const m = /^(sha256|sha512)-([0-9a-f]+)$/.exec(name);
    if (!m) continue;
    const blob = await fsp.stat(join(dir, "blobs", m[1] as string, m[2] as string)).catch(() => null);
    const size = await bytesBelow(join(u, name), blob?.ino);
    out.push({ algorithm: m[1] as HashAlgorithm, value: m[2] as string, file: join(u, name), size, partial: false, unpacked: true });
  }
  return out;
}

/** The bytes of the files below `dir`, but for those that are the inode `skip` (a link to the blob). */
async function bytesBelow(dir: string, skip: number | undefined): Promise<number> {
  let n = 0;
  for (const e of await fsp.readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (!e.isFile()) continue;
    const st = await fsp.stat(join(e.parentPath, e.name)).catch(() => null);
    if (st && st.ino !== skip) n += st.size;
  }
  return n;
}

/** Size of the verified blob for a checksum, or null when it is not cached. */
export async function cachedSize(dir: string, c: Pick<PinnedChecksum, "algorithm" | "value">): Promise<number | null> {
  const st = await fsp.stat(cacheLayout(dir).blob(c)).catch(() => null);
  return st?.isFile() ? st.size : null;
}

/** Removes every blob and partial download (the caller holds the cache lock). */
export async function cleanCache(dir: string): Promise<{ files: number; bytes: number }> {
  const entries = await listCache(dir);
  for (const sub of ["blobs", "partial", "seals", "unpacked"]) await fsp.rm(join(dir, sub), { recursive: true, force: true });
  return { files: entries.length, bytes: entries.reduce((n, e) => n + e.size, 0) };
}

/**
 * The cached blob for `a`: trusted without hashing when it still matches the seal its last check
 * left (seal.ts), else re-hashed and sealed anew; a blob that no longer matches is removed (to be
 * fetched again).
 */
export async function fromCache(a: ResolvedArtifact, layout: CacheLayout, signal?: AbortSignal): Promise<FetchedArtifact | null> {
  const file = layout.blob(a.checksum);
  const now = await sealOf(file);
  if (!now) return null;
  const found = { artifact: a, file, size: Number(now.size), source: "cache" as const };
  if (sameSeal(now, await readSealFile<Seal>(layout.seal(a.checksum))))
    return { ...found, verification: `${pinText(a)}, checked when cached and unchanged since` };
  if (!(await sealBlob(a, layout, "hash", signal))) {
    await fsp.rm(file, { force: true });
    await fsp.rm(layout.seal(a.checksum), { force: true });
    return null;
  }
  return { ...found, verification: `${pinText(a)}, re-checked in the cache` };
}

/**
 * Seals a blob: after hashing it ("hash"; false when the digest does not match), or right after a
 * download that hashed it as it wrote ("verified"). A raw binary is made 0755 first, so that it can
 * be linked where it runs (unpacked.ts). The seal is the stat taken before hashing, written only if
 * the file still has it afterwards.
 */
export async function sealBlob(
  a: ResolvedArtifact,
  layout: CacheLayout,
  check: "hash" | "verified",
  signal?: AbortSignal,
): Promise<boolean> {
  const file = layout.blob(a.checksum);
  let before = await sealOf(file);
  if (a.format === "binary" && before && before.mode !== 0o755) {
    await fsp.chmod(file, 0o755);
    before = await sealOf(file);
  }
  if (check === "hash" && (await hashFile(file, a.checksum.algorithm, signal)) !== a.checksum.value) return false;
  if (sameSeal(before, await sealOf(file))) await writeSealFile(layout.seal(a.checksum), before);
  return true;
}

export function pinText(a: ResolvedArtifact): string {
  return a.checksum.trust === "upstream"
    ? `${a.checksum.algorithm} matches the ${a.checksum.source}`
    : `${a.checksum.algorithm} matches the pin from ${a.checksum.source}`;
}
