// An artifact's binaries written into a folder: a raw binary as it is, or the members of a tar
// archive that the manifest names (a member that is not a regular file, or one that is missing, is
// refused: exit 4). Files are created by us, 0755 whatever the umask, hashed on the way; a raw
// binary can instead be hard-linked from its verified blob (its checksum is then its sha256).
import { createHash } from "node:crypto";
import { createReadStream, promises as fsp } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { ExitCode, UserError, isSystemError, messageOf } from "../errors";
import { hashFile } from "./digest";
import { HashingFileSink } from "./sink";
import { UnsafeArchiveError, isRegularFile, normalizeMemberPath, walkTar } from "./tar";
import type { FetchedArtifact, ResolvedArtifact } from "./types";

/** One binary written: where it goes below the bin folder, and its sha256. */
export interface UnpackedFile {
  name: string;
  /** sub-folder of the bin folder ("cni") or null. */
  dir: string | null;
  artifactId: string;
  component: string;
  version: string;
  sha256: string;
}

export const BINARY_MODE = 0o755;

/** `dir/name` below the bin folder. */
export function relativePath(b: { name: string; dir: string | null }): string {
  return join(b.dir ?? "", b.name);
}

/**
 * Writes the binaries of one verified artifact into `into`. With `link`, a raw binary is hard-linked
 * from the blob (which cache.ts made 0755) when the file system allows it, and copied otherwise.
 */
export async function unpackArtifact(
  f: FetchedArtifact,
  into: string,
  o: { signal?: AbortSignal | undefined; link?: boolean } = {},
): Promise<UnpackedFile[]> {
  const signal = o.signal;
  const a = f.artifact;
  const record = (b: ResolvedArtifact["binaries"][number], sha256: string) => ({
    name: b.name,
    dir: b.dir,
    artifactId: a.id,
    component: a.component,
    version: a.version,
    sha256,
  });
  const targetOf = async (b: ResolvedArtifact["binaries"][number]) => {
    if (b.dir) await fsp.mkdir(join(into, b.dir), { recursive: true, mode: 0o755 });
    return join(into, relativePath({ name: b.name, dir: b.dir ?? null }));
  };
  if (a.format === "binary") {
    const b = a.binaries[0];
    if (!b) return [];
    const target = await targetOf(b);
    // (Only a blob that cache.ts made 0755 is linked: a link shares the blob's mode.)
    if (
      o.link &&
      ((await fsp.stat(f.file)).mode & 0o7777) === BINARY_MODE &&
      (await fsp.link(f.file, target).then(
        () => true,
        () => false,
      ))
    )
      return [record(b, a.checksum.algorithm === "sha256" ? a.checksum.value : await hashFile(target, "sha256", signal))];
    return [record(b, await writeFile(createReadStream(f.file), target, signal))];
  }
  const wanted = new Map(a.binaries.map((b) => [normalizeMemberPath(b.path ?? b.name), b]));
  const done: UnpackedFile[] = [];
  try {
    await walkTar(
      f.file,
      async (entry, path, walk) => {
        const b = wanted.get(path);
        if (!b) {
          entry.resume();
          return;
        }
        if (!isRegularFile(entry))
          throw new UnsafeArchiveError(`the member "${entry.path}" (${b.name}) is a ${entry.type}, not a regular file`);
        wanted.delete(path);
        done.push(record(b, await writeFile(entry, await targetOf(b), walk)));
      },
      signal,
    );
  } catch (e) {
    if (signal?.aborted) throw e;
    // The disk, not the archive: a failed write or read of a file (ENOSPC, EACCES, EIO) stays what it is.
    if (isSystemError(e)) throw e;
    throw archiveError(f, e instanceof UnsafeArchiveError ? e.message : `is not a readable tar archive (${messageOf(e)})`);
  }
  const missing = [...wanted.keys()];
  if (missing.length > 0) {
    throw new UserError(`${a.fileName} (${a.label}) has no member ${missing.map((m) => `"${m}"`).join(", ")}`, {
      exitCode: ExitCode.Verification,
      fix: "the manifest's binaries[].path does not match the archive's layout; fix the manifest (docs/manifest.md). Nothing was installed",
    });
  }
  return done;
}

/** Writes a stream to a new file, 0755 whatever the umask, hashing it on the way. */
async function writeFile(from: AsyncIterable<Buffer>, to: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(from, new HashingFileSink(to, { append: false, mode: BINARY_MODE, hash }), signal ? { signal } : {});
  await fsp.chmod(to, BINARY_MODE);
  return hash.digest("hex");
}

function archiveError(f: FetchedArtifact, what: string): UserError {
  return new UserError(`refused ${f.artifact.fileName} (${f.artifact.label}): ${what}`, {
    exitCode: ExitCode.Verification,
    fix: "nothing was extracted or installed; the archive does not have the layout its manifest entry describes. Check the manifest and its checksum source",
  });
}
