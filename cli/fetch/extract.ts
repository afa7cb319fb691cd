// Installing verified artifacts as a bin folder: only the binaries the manifest names are written,
// into a fresh temporary folder next to the destination, which is then renamed into place. Files
// are created by us with mode 0755 (no setuid/setgid, no owner from the archive); an unsafe or
// incomplete archive, an error or an interrupt leaves nothing behind.
import { createHash } from "node:crypto";
import { createReadStream, promises as fsp } from "node:fs";
import { basename, dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { ExitCode, InterruptedError, UserError, isSystemError, messageOf } from "../errors";
import { HashingFileSink } from "./sink";
import { UnsafeArchiveError, isRegularFile, normalizeMemberPath, walkTar } from "./tar";
import type { FetchedArtifact, ResolvedArtifact } from "./types";

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

const BINARY_MODE = 0o755;

/**
 * Writes the binaries of `fetched` into `destBinDir` (created or replaced as a whole).
 * Throws UserError exit 4 for an unsafe or incomplete archive, 130 when aborted.
 */
export async function installBinaries(
  fetched: FetchedArtifact[],
  destBinDir: string,
  opts: { signal?: AbortSignal } = {},
): Promise<InstalledBinary[]> {
  const parent = dirname(destBinDir);
  await fsp.mkdir(parent, { recursive: true, mode: 0o755 });
  const tmp = await fsp.mkdtemp(join(parent, `.${basename(destBinDir)}.new-`));
  try {
    const installed: Omit<InstalledBinary, "path">[] = [];
    for (const f of fetched) {
      opts.signal?.throwIfAborted();
      installed.push(...(await writeArtifact(f, tmp, opts.signal)));
    }
    await replaceDir(tmp, destBinDir);
    return installed.map((b) => ({ ...b, path: join(destBinDir, b.dir ?? "", b.name) }));
  } catch (e) {
    await fsp.rm(tmp, { recursive: true, force: true });
    if (opts.signal?.aborted) throw new InterruptedError("interrupted while installing binaries; nothing was changed");
    // A write through a stream names no file (ENOSPC, EDQUOT): the folder it was filling, so the error says where.
    if (isSystemError(e) && e.path === undefined) e.path = destBinDir;
    throw e;
  }
}

async function writeArtifact(f: FetchedArtifact, into: string, signal?: AbortSignal): Promise<Omit<InstalledBinary, "path">[]> {
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
    return join(into, b.dir ?? "", b.name);
  };
  if (a.format === "binary") {
    const b = a.binaries[0];
    if (!b) return [];
    const sha = await writeFile(createReadStream(f.file), await targetOf(b), signal);
    return [record(b, sha)];
  }
  const wanted = new Map(a.binaries.map((b) => [normalizeMemberPath(b.path ?? b.name), b]));
  const done: Omit<InstalledBinary, "path">[] = [];
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

function archiveError(f: FetchedArtifact, what: string): UserError {
  return new UserError(`refused ${f.artifact.fileName} (${f.artifact.label}): ${what}`, {
    exitCode: ExitCode.Verification,
    fix: "nothing was extracted or installed; the archive does not have the layout its manifest entry describes. Check the manifest and its checksum source",
  });
}
