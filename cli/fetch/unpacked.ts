// An archive's binaries kept unpacked in the cache, so that a warm install links them where the
// node runs them instead of decompressing hundreds of megabytes again (issue 33: a warm install's
// fetch took 5.1 s, most of it re-hashing and unpacking). The first install of a version set
// unpacks each verified artifact once into unpacked/<algorithm>-<hex>/<key>/ (a raw binary is a
// hard link to its blob, so it takes no space twice) and seals every file (seal.ts); later installs
// reuse the folder while every file still matches its seal, and unpack it anew otherwise. The key
// is the list of binaries the manifest takes from the archive: two artifacts of one archive that
// take different members get folders of their own.
import { createHash } from "node:crypto";
import { promises as fsp } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { CacheLayout } from "./cache";
import { readSealFile, type Seal, sameSeal, sealOf, writeSealFile } from "./seal";
import type { FetchedArtifact } from "./types";
import { relativePath, type UnpackedFile, unpackArtifact } from "./unpack";

const SEAL_FILE = ".seal.json";

interface UnpackedSeal {
  schema: 1;
  files: { binary: UnpackedFile; seal: Seal }[];
}

/** A binary ready in the cache: its file there, and what an install records of it. */
export interface CachedBinary {
  file: string;
  binary: UnpackedFile;
}

/** The folder of `f`'s binaries in the cache, unpacked now unless a sealed one is still intact. The caller holds the cache lock. */
export async function unpackedInCache(f: FetchedArtifact, layout: CacheLayout, signal?: AbortSignal): Promise<CachedBinary[]> {
  const a = f.artifact;
  const key = createHash("sha256")
    .update(JSON.stringify(a.binaries.map((b) => [b.path ?? null, b.dir ?? null, b.name])))
    .digest("hex")
    .slice(0, 16);
  const dir = join(layout.unpacked(a.checksum), key);
  // What this artifact records (its id and version), whichever artifact of the same archive unpacked it.
  const own = (b: UnpackedFile): CachedBinary => ({
    file: join(dir, relativePath(b)),
    binary: { ...b, artifactId: a.id, component: a.component, version: a.version },
  });
  const sealed = await readSealFile<UnpackedSeal>(join(dir, SEAL_FILE));
  if (sealed?.schema === 1 && sealed.files.length === a.binaries.length && (await intact(dir, sealed)))
    return sealed.files.map((e) => own(e.binary));

  await fsp.mkdir(dirname(dir), { recursive: true, mode: 0o700 });
  // What a run killed while unpacking left (the caller holds the cache lock: no other run is unpacking).
  for (const n of await fsp.readdir(dirname(dir)))
    if (n.startsWith(".") && n.includes(".new-")) await fsp.rm(join(dirname(dir), n), { recursive: true, force: true });
  const tmp = await fsp.mkdtemp(join(dirname(dir), `.${basename(dir)}.new-`));
  try {
    const files: UnpackedSeal["files"] = [];
    for (const b of await unpackArtifact(f, tmp, { signal, link: true })) {
      const seal = await sealOf(join(tmp, relativePath(b)));
      if (!seal) throw new Error(`${join(tmp, relativePath(b))} is gone right after it was unpacked`);
      files.push({ binary: b, seal });
    }
    await writeSealFile(join(tmp, SEAL_FILE), { schema: 1, files } satisfies UnpackedSeal);
    await fsp.rm(dir, { recursive: true, force: true });
    await fsp.rename(tmp, dir);
    return files.map((e) => own(e.binary));
  } catch (e) {
    await fsp.rm(tmp, { recursive: true, force: true });
    throw e;
  }
}

async function intact(dir: string, sealed: UnpackedSeal): Promise<boolean> {
  for (const e of sealed.files) if (!sameSeal(await sealOf(join(dir, relativePath(e.binary))), e.seal)) return false;
  return true;
}
