// Offline bundles: one uncompressed tar (its contents are already compressed) holding
//   rootless-k8s-bundle.json         first entry: the manifest for one arch, with sizes, and the file list
//   artifacts/<id>/<upstream name>   each artifact, byte for byte as downloaded and verified
//   images/<n>-<name>                image archives (bundle --image), byte for byte, with their sha256,
//                                    size and image names in the index; install --bundle loads them
// Using a bundle needs no network at all. Every artifact is verified again while it is copied
// into the cache, and the bundle's checksums must equal the pinned ones unless --trust-bundle.
// No entry writes more than the size the index declares for it (a whole number of bytes, required):
// a gzip'd tar is read too (node-tar's Parser), so a small bundle could otherwise fill the disk.
import { createWriteStream, promises as fsp } from "node:fs";
import { basename, dirname, join } from "node:path";
import { createHash, type Hash } from "node:crypto";
import { pipeline } from "node:stream/promises";
import { ExitCode, InterruptedError, UserError, messageOf } from "../errors";
import { printable } from "../text";
import { VERSION } from "../version";
import { fromCache, pinText, sealBlob, type CacheLayout } from "./cache";
import { parseManifest } from "./manifest";
import { BodyTooLongError, HashingFileSink } from "./sink";
import type { FetchProgress } from "./progress";
import { resolveArtifact } from "./select";
import { StopWalk, UnsafeArchiveError, isRegularFile, walkTar, type ReadEntry } from "./tar";
import type { Arch, FetchedArtifact, Manifest, ManifestArtifact, PinnedChecksum, ResolvedArtifact } from "./types";

export const BUNDLE_INDEX = "rootless-k8s-bundle.json";
const INDEX_MAX = 4 << 20;

export interface BundleFile {
  id: string;
  /** Path inside the bundle tar. */
  path: string;
  algorithm: PinnedChecksum["algorithm"];
  value: string;
  size: number;
}

export interface BundleIndex {
  schema: 1;
  kind: "rootless-k8s-bundle";
  createdBy: string;
  createdAt: string;
  arch: Arch;
  /** The manifest of this bundle: only this arch, with sizes (schema: docs/manifest.md). */
  manifest: Omit<Manifest, "origin">;
  files: BundleFile[];
  /** Image archives the bundle carries (absent in bundles made without --image). */
  images?: BundleImage[];
}

export interface BundleImage {
  /** Path inside the bundle tar: images/<n>-<file name>. */
  path: string;
  sha256: string;
  size: number;
  /** The full image names the archive holds, as `image load` would report them. */
  names: string[];
}

/** An image archive to carry in a bundle: its file, already validated and hashed (cli/fetch/image-archive.ts). */
export interface BundledImageInput {
  file: string;
  sha256: string;
  size: number;
  names: string[];
}

/** Writes the verified `fetched` files and their manifest into `outFile` (atomically: temp + rename). */
export async function writeBundle(
  fetched: FetchedArtifact[],
  manifest: Manifest,
  arch: Arch,
  outFile: string,
  signal?: AbortSignal,
  images: readonly BundledImageInput[] = [],
): Promise<{ file: string; size: number; index: BundleIndex }> {
  const index = bundleIndex(fetched, manifest, arch);
  if (images.length) {
    index.images = images.map((im, i) => ({
      path: `images/${i + 1}-${basename(im.file)}`,
      sha256: im.sha256,
      size: im.size,
      names: im.names,
    }));
  }
  const tmpOut = `${outFile}.tmp-${process.pid}`;
  const stage = await fsp.mkdtemp(join(dirname(outFile), `.${basename(outFile)}.stage-`)).catch((e: NodeJS.ErrnoException) => {
    throw cannotWrite(outFile, e);
  });
  try {
    await fsp.writeFile(join(stage, BUNDLE_INDEX), JSON.stringify(index, null, 2) + "\n");
    for (const f of index.files) {
      const src = fetched.find((x) => x.artifact.id === f.id)?.file as string;
      await fsp.mkdir(dirname(join(stage, f.path)), { recursive: true });
      await fsp.symlink(src, join(stage, f.path));
    }
    for (const [i, im] of (index.images ?? []).entries()) {
      await fsp.mkdir(dirname(join(stage, im.path)), { recursive: true });
      await fsp.symlink(images[i]!.file, join(stage, im.path));
    }
    const tar = await import("tar");
    const pack = tar.c({ cwd: stage, follow: true, portable: true }, [
      BUNDLE_INDEX,
      "artifacts",
      ...(index.images?.length ? ["images"] : []),
    ]);
    await pipeline(pack, createWriteStream(tmpOut, { mode: 0o644 }), signal ? { signal } : {});
    await fsp.rename(tmpOut, outFile);
    return { file: outFile, size: (await fsp.stat(outFile)).size, index };
  } catch (e) {
    await fsp.rm(tmpOut, { force: true });
    if (signal?.aborted) throw new InterruptedError("interrupted while writing the bundle; no bundle was written");
    if (typeof (e as NodeJS.ErrnoException).syscall === "string") throw cannotWrite(outFile, e as NodeJS.ErrnoException);
    throw e;
  } finally {
    await fsp.rm(stage, { recursive: true, force: true });
  }
}

function bundleIndex(fetched: FetchedArtifact[], manifest: Manifest, arch: Arch): BundleIndex {
  const byId = new Map(fetched.map((f) => [f.artifact.id, f]));
  const artifacts: ManifestArtifact[] = [];
  for (const a of manifest.artifacts) {
    const f = byId.get(a.id);
    const token = a.arch[arch];
    const sum = a.checksums[arch];
    if (!f || token === undefined || sum === undefined) continue;
    artifacts.push({ ...a, arch: { [arch]: token }, checksums: { [arch]: { ...sum, size: f.size } } });
  }
  const { origin: _origin, ...rest } = manifest;
  return {
    schema: 1,
    kind: "rootless-k8s-bundle",
    createdBy: `rootless-k8s ${VERSION}`,
    createdAt: new Date().toISOString(),
    arch,
    manifest: { ...rest, artifacts },
    files: fetched.map((f) => ({
      id: f.artifact.id,
      path: `artifacts/${f.artifact.id}/${f.artifact.fileName}`,
      algorithm: f.artifact.checksum.algorithm,
      value: f.artifact.checksum.value,
      size: f.size,
    })),
  };
}

/** The bundle's own manifest, e.g. to plan a --trust-bundle install with the bundle's versions. */
export async function readBundleManifest(file: string, signal?: AbortSignal): Promise<Manifest> {
  return (await readBundleIndex(file, signal)).manifest as Manifest;
}

/** Reads and validates the index (the first entry) of a bundle, without reading the rest. */
export async function readBundleIndex(file: string, signal?: AbortSignal): Promise<BundleIndex & { manifest: Manifest }> {
  const found: { index?: BundleIndex & { manifest: Manifest } } = {};
  await walkBundle(file, signal, async (entry, path) => {
    found.index = await parseIndexEntry(file, entry, path);
    throw new StopWalk();
  });
  if (!found.index) throw notABundle(file, "it is empty");
  return found.index;
}

/**
 * Writes the image archives the bundle carries into `destDir` (which must exist), verifying each
 * one's sha256 and size against the index while it streams; returns their paths (none for a bundle
 * without images). Exit 4 for a damaged or truncated bundle.
 */
export async function extractBundleImages(file: string, destDir: string, signal?: AbortSignal): Promise<string[]> {
  const wanted = new Map<string, BundleImage>();
  const written: string[] = [];
  let indexed = false;
  await walkBundle(file, signal, async (entry, path, walk) => {
    if (!indexed) {
      const index = await parseIndexEntry(file, entry, path);
      indexed = true;
      for (const im of index.images ?? []) wanted.set(im.path, im);
      if (wanted.size === 0) throw new StopWalk();
      return;
    }
    const im = wanted.get(path);
    if (!im) return void entry.resume();
    if (!isRegularFile(entry)) throw new UnsafeArchiveError(`"${entry.path}" is a ${entry.type}, not a regular file`);
    wanted.delete(path);
    const dest = join(destDir, basename(im.path));
    const hash = createHash("sha256");
    await copyEntry(entry, dest, { mode: 0o600, hash, declared: im.size, name: im.path, file, walk });
    const actual = hash.digest("hex");
    if (actual !== im.sha256) {
      await fsp.rm(dest, { force: true });
      throw new UserError(
        `bundle ${file}: the image archive ${im.path} does not match its checksum (expected sha256 ${im.sha256}, got ${actual})`,
        {
          exitCode: ExitCode.Verification,
          fix: "the bundle is damaged or was altered: copy it again or make a new one with `rootless-k8s bundle --image FILE`",
        },
      );
    }
    written.push(dest);
    if (wanted.size === 0) throw new StopWalk();
  });
  if (!indexed) throw notABundle(file, "it is empty");
  if (wanted.size > 0) {
    throw new UserError(
      `bundle ${file} lists the image archive${wanted.size > 1 ? "s" : ""} ${[...wanted.keys()].join(", ")} but does not contain ${wanted.size > 1 ? "them" : "it"}`,
      {
        exitCode: ExitCode.Verification,
        fix: "the bundle is truncated or damaged: copy it again, or make a new one with `rootless-k8s bundle`",
      },
    );
  }
  return written;
}

/**
 * Copies the wanted artifacts from the bundle into the cache, verifying each while it streams.
 * Artifacts already in the cache are taken from it (fromCache: re-hashed unless sealed). No network access.
 */
export async function importFromBundle(
  artifacts: ResolvedArtifact[],
  file: string,
  layout: CacheLayout,
  opts: { trustBundle: boolean; signal?: AbortSignal | undefined; progress?: FetchProgress | undefined },
): Promise<FetchedArtifact[]> {
  const results = new Map<string, FetchedArtifact>();
  const wanted = new Map<string, { artifact: ResolvedArtifact; size: number }>(); // bundle path → artifact to import, its declared size
  let indexed = false;
  await walkBundle(file, opts.signal, async (entry, path, walk) => {
    if (!indexed) {
      const index = await parseIndexEntry(file, entry, path);
      indexed = true;
      for (const a of artifacts) {
        const chosen = chooseArtifact(a, index, file, opts.trustBundle);
        const cached = await fromCache(chosen.artifact, layout, opts.signal);
        if (cached) {
          const r = { ...cached, verification: `${cached.verification} (bundle not needed)` };
          results.set(a.id, r);
          opts.progress?.done?.(r);
        } else wanted.set(chosen.path, { artifact: chosen.artifact, size: chosen.size });
      }
      return;
    }
    const w = wanted.get(path);
    if (!w) {
      entry.resume();
      return;
    }
    if (!isRegularFile(entry)) throw new UnsafeArchiveError(`"${entry.path}" is a ${entry.type}, not a regular file`);
    wanted.delete(path);
    const r = await copyVerified(entry, w.artifact, w.size, path, layout, file, walk);
    results.set(w.artifact.id, r);
    opts.progress?.done?.(r);
  });
  if (!indexed) throw notABundle(file, "it is empty");
  const missing = [...wanted.values()].map((w) => w.artifact);
  if (missing.length > 0) {
    throw new UserError(`bundle ${file} lists ${missing.map((a) => a.label).join(", ")} but does not contain the file`, {
      exitCode: ExitCode.Verification,
      fix: "the bundle is truncated or damaged: copy it again, or make a new one with `rootless-k8s bundle`",
    });
  }
  return artifacts.map((a) => results.get(a.id) as FetchedArtifact);
}

/** The artifact to take from the bundle for `a`, and its path in the bundle. */
function chooseArtifact(
  a: ResolvedArtifact,
  index: BundleIndex & { manifest: Manifest },
  file: string,
  trust: boolean,
): { artifact: ResolvedArtifact; path: string; size: number } {
  if (index.arch !== a.arch) {
    throw new UserError(`bundle ${file} is for ${index.arch}, but ${a.arch} is needed`, {
      exitCode: ExitCode.Refused,
      fix: `make a bundle for this machine: rootless-k8s bundle --arch ${a.arch} -o FILE`,
    });
  }
  const entry = index.files.find((f) => f.id === a.id);
  const inManifest = index.manifest.artifacts.find((m) => m.id === a.id);
  if (!entry || !inManifest) {
    throw new UserError(`bundle ${file} has no ${a.label}`, {
      exitCode: ExitCode.Verification,
      fix: "make the bundle with the same rootless-k8s version and --manifest as this install",
    });
  }
  if (entry.algorithm === a.checksum.algorithm && entry.value === a.checksum.value) return sized(a, entry, file);
  if (!trust) {
    throw new UserError(
      `bundle ${file} does not match the pinned checksums: ${a.label} is ${entry.algorithm} ${entry.value} in the bundle, pinned as ${a.checksum.algorithm} ${a.checksum.value}`,
      {
        exitCode: ExitCode.Verification,
        fix: "use a bundle made for this rootless-k8s version and manifest, or pass --trust-bundle to install the bundle's own versions (only for a bundle you built)",
      },
    );
  }
  const own = resolveArtifact(inManifest, a.arch, `bundle ${file}`);
  if (own.checksum.algorithm !== entry.algorithm || own.checksum.value !== entry.value) {
    throw notABundle(file, `its file list and manifest disagree about ${a.id}`);
  }
  return sized(own, entry, file);
}

/** `a` at `entry.path`, with the size the index declares for it, which a pinned size must equal. */
function sized(a: ResolvedArtifact, entry: BundleFile, file: string): { artifact: ResolvedArtifact; path: string; size: number } {
  if (a.checksum.size !== undefined && a.checksum.size !== entry.size) {
    throw new UserError(
      `bundle ${file}: its index declares ${entry.size} bytes for ${entry.path}, but ${a.label} is pinned at ${a.checksum.size} bytes`,
      {
        exitCode: ExitCode.Verification,
        fix: "the bundle is damaged or was altered: nothing from it was installed. Copy it again or make a new one with `rootless-k8s bundle`",
      },
    );
  }
  return { artifact: a, path: entry.path, size: entry.size };
}

async function copyVerified(
  entry: ReadEntry,
  a: ResolvedArtifact,
  declared: number,
  name: string,
  layout: CacheLayout,
  file: string,
  walk: AbortSignal,
): Promise<FetchedArtifact> {
  const part = layout.part(a.checksum);
  const dest = layout.blob(a.checksum);
  await fsp.mkdir(dirname(part), { recursive: true });
  await fsp.mkdir(dirname(dest), { recursive: true });
  const hash = createHash(a.checksum.algorithm);
  const size = await copyEntry(entry, part, { mode: 0o644, hash, declared, name, file, walk });
  const actual = hash.digest("hex");
  if (actual !== a.checksum.value) {
    await fsp.rm(part, { force: true });
    throw new UserError(
      `bundle ${file}: ${a.label} does not match its checksum: expected ${a.checksum.algorithm} ${a.checksum.value}, got ${actual}`,
      {
        exitCode: ExitCode.Verification,
        fix: "the bundle is damaged or was altered: nothing from it was installed. Copy it again or make a new one",
      },
    );
  }
  await fsp.rename(part, dest);
  // Sealed as a download is (a raw binary made 0755, to be linked where it runs): hashed as it was copied.
  await sealBlob(a, layout, "verified");
  return { artifact: a, file: dest, size, source: "bundle", verification: `${pinText(a)}, re-checked from the bundle` };
}

/**
 * Writes one entry of the bundle to `dest`, hashing it, and never more than the `declared` size its
 * index gives: an entry whose tar header says it is larger is refused before its first byte, and
 * the sink stops at the first batch that would pass the size (in case the data runs past its
 * header). A refused or failed copy leaves no file. Returns the bytes written.
 */
async function copyEntry(
  entry: ReadEntry,
  dest: string,
  o: { mode: number; hash: Hash; declared: number; name: string; file: string; walk: AbortSignal },
): Promise<number> {
  const tooLarge = () =>
    new UserError(`bundle ${o.file}: the entry ${printable(o.name)} is larger than the ${o.declared} bytes its index declares`, {
      exitCode: ExitCode.Verification,
      fix: "the bundle is damaged or was altered: nothing from it was kept. Copy it again or make a new one with `rootless-k8s bundle`",
    });
  if (entry.size > o.declared) {
    entry.resume();
    throw tooLarge();
  }
  const sink = new HashingFileSink(dest, { append: false, mode: o.mode, hash: o.hash, maxBytes: o.declared });
  try {
    await pipeline(entry as AsyncIterable<Buffer>, sink, { signal: o.walk });
  } catch (e) {
    await fsp.rm(dest, { force: true });
    if (e instanceof BodyTooLongError) throw tooLarge();
    throw e;
  }
  if (sink.bytesWritten !== o.declared) {
    await fsp.rm(dest, { force: true });
    throw new UserError(
      `bundle ${o.file}: the entry ${printable(o.name)} holds ${sink.bytesWritten} bytes, not the ${o.declared} bytes its index declares`,
      {
        exitCode: ExitCode.Verification,
        fix: "the bundle is truncated, damaged or was altered: nothing from it was kept. Copy it again or make a new one with `rootless-k8s bundle`",
      },
    );
  }
  return sink.bytesWritten;
}

async function walkBundle(
  file: string,
  signal: AbortSignal | undefined,
  visit: (entry: ReadEntry, path: string, walk: AbortSignal) => Promise<void>,
): Promise<void> {
  const st = await fsp.stat(file).catch(() => null);
  if (!st?.isFile()) {
    throw new UserError(`bundle ${file} not found`, {
      exitCode: ExitCode.Usage,
      fix: "pass the path of a file made by `rootless-k8s bundle` to --bundle",
    });
  }
  try {
    await walkTar(file, visit, signal);
  } catch (e) {
    if (signal?.aborted) throw new InterruptedError("interrupted while reading the bundle; re-run to continue");
    if (e instanceof UserError) throw e;
    throw notABundle(file, e instanceof UnsafeArchiveError ? `it has an unsafe entry: ${e.message}` : messageOf(e));
  }
}

async function parseIndexEntry(file: string, entry: ReadEntry, path: string): Promise<BundleIndex & { manifest: Manifest }> {
  if (path !== BUNDLE_INDEX || !isRegularFile(entry)) throw notABundle(file, `its first entry is "${entry.path}", not ${BUNDLE_INDEX}`);
  if (entry.size > INDEX_MAX) throw notABundle(file, `${BUNDLE_INDEX} is larger than 4 MiB`);
  const chunks: Buffer[] = [];
  for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c);
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
  } catch (e) {
    throw notABundle(file, `${BUNDLE_INDEX} is not valid JSON (${messageOf(e)})`);
  }
  if (data.kind !== "rootless-k8s-bundle" || data.schema !== 1)
    throw notABundle(file, `${BUNDLE_INDEX} is not a schema 1 rootless-k8s bundle index`);
  if (data.arch !== "amd64" && data.arch !== "arm64") throw notABundle(file, `its arch "${String(data.arch)}" is unknown`);
  const manifest = parseManifest(data.manifest, `bundle ${file}`);
  if (!Array.isArray(data.files)) throw notABundle(file, "its file list is missing");
  const files = (data.files as Record<string, unknown>[]).map((f): BundleFile => {
    const ok =
      typeof f.id === "string" &&
      typeof f.path === "string" &&
      (f.algorithm === "sha256" || f.algorithm === "sha512") &&
      typeof f.value === "string";
    if (!ok) throw notABundle(file, `its file list has a malformed entry (${JSON.stringify(f).slice(0, 80)})`);
    if (!isByteCount(f.size)) throw notABundle(file, `its file list gives ${printable(String(f.path).slice(0, 200))} ${badSize(f.size)}`);
    return f as unknown as BundleFile;
  });
  let images: BundleImage[] | undefined;
  if (data.images !== undefined) {
    if (!Array.isArray(data.images)) throw notABundle(file, "its image list is not a list");
    images = (data.images as Record<string, unknown>[]).map((im): BundleImage => {
      const ok =
        typeof im === "object" &&
        im !== null &&
        typeof im.path === "string" &&
        /^images\/[^/]+$/.test(im.path) &&
        !im.path.includes("..") &&
        typeof im.sha256 === "string" &&
        /^[0-9a-f]{64}$/.test(im.sha256) &&
        Array.isArray(im.names) &&
        im.names.every((n) => typeof n === "string");
      if (!ok) throw notABundle(file, `its image list has a malformed entry (${JSON.stringify(im).slice(0, 80)})`);
      if (!isByteCount(im.size)) throw notABundle(file, `its image list gives ${printable(String(im.path))} ${badSize(im.size)}`);
      return im as unknown as BundleImage;
    });
  }
  return { ...(data as unknown as BundleIndex), manifest, files, ...(images ? { images } : {}) };
}

/** A size as the index must give it (docs/manifest.md): a whole, non-negative number of bytes. */
function isByteCount(n: unknown): n is number {
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
}

function badSize(n: unknown): string {
  return n === undefined
    ? "no size (every entry declares its size in bytes)"
    : `the size ${printable(typeof n === "number" ? String(n) : String(JSON.stringify(n)).slice(0, 40))}, not a byte count (a whole number from 0 to 2^53-1)`;
}

function cannotWrite(file: string, e: NodeJS.ErrnoException): UserError {
  const why = e.code === "ENOSPC" || e.code === "EDQUOT" ? "no space left on the device" : (e.code ?? e.message);
  return new UserError(`cannot write the bundle ${file} (${why}); nothing was written`, {
    exitCode: ExitCode.Failure,
    cause: e,
    fix: "write it to an existing folder you can write to, with room for every component (-o FILE)",
  });
}

function notABundle(file: string, why: string): UserError {
  return new UserError(`${file} is not a usable rootless-k8s bundle: ${why}`, {
    exitCode: ExitCode.Verification,
    fix: "make one with `rootless-k8s bundle --arch ARCH -o FILE` on a machine with network access",
  });
}
