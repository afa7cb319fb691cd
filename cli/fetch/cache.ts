// The download cache: $XDG_CACHE_HOME/rootless-k8s (default ~/.cache/rootless-k8s), addressed by
// checksum, so a file is stored once whatever its URL or mirror, and a second install downloads
// nothing.
//   blobs/<algorithm>/<hex>        verified files, only ever created by a rename after the hash matched
//   partial/<algorithm>-<hex>.part  a download in progress (resumed with Range)
//   partial/<algorithm>-<hex>.json  its URL and validators (ETag / Last-Modified) for If-Range
//   lock/                           held while a run writes to the cache
import { promises as fsp } from "node:fs";
import { join } from "node:path";
import { toolDir } from "../xdg";
import { hashFile } from "./digest";
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
}

export function cacheLayout(dir: string): CacheLayout {
  return {
    dir,
    lockDir: join(dir, "lock"),
    blob: (c) => join(dir, "blobs", c.algorithm, c.value),
    part: (c) => join(dir, "partial", `${c.algorithm}-${c.value}.part`),
    partMeta: (c) => join(dir, "partial", `${c.algorithm}-${c.value}.json`),
  };
}

export interface CacheEntry {
  algorithm: HashAlgorithm;
  value: string;
  file: string;
  size: number;
  partial: boolean;
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
  return out;
}

/** Size of the verified blob for a checksum, or null when it is not cached. */
export async function cachedSize(dir: string, c: Pick<PinnedChecksum, "algorithm" | "value">): Promise<number | null> {
  const st = await fsp.stat(cacheLayout(dir).blob(c)).catch(() => null);
  return st?.isFile() ? st.size : null;
}

/** Removes every blob and partial download (the caller holds the cache lock). */
export async function cleanCache(dir: string): Promise<{ files: number; bytes: number }> {
  const entries = await listCache(dir);
  for (const sub of ["blobs", "partial"]) await fsp.rm(join(dir, sub), { recursive: true, force: true });
  return { files: entries.length, bytes: entries.reduce((n, e) => n + e.size, 0) };
}

/** The cached blob for `a`, re-hashed; a blob that no longer matches is removed (to be fetched again). */
export async function fromCache(a: ResolvedArtifact, layout: CacheLayout, signal?: AbortSignal): Promise<FetchedArtifact | null> {
  const file = layout.blob(a.checksum);
  const st = await fsp.stat(file).catch(() => null);
  if (!st?.isFile()) return null;
  if ((await hashFile(file, a.checksum.algorithm, signal)) !== a.checksum.value) {
    await fsp.rm(file, { force: true });
    return null;
  }
  return { artifact: a, file, size: st.size, source: "cache", verification: `${pinText(a)}, re-checked in the cache` };
}

export function pinText(a: ResolvedArtifact): string {
  return a.checksum.trust === "upstream"
    ? `${a.checksum.algorithm} matches the ${a.checksum.source}`
    : `${a.checksum.algorithm} matches the pin from ${a.checksum.source}`;
}
