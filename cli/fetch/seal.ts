// A seal: what a verified file in the cache looked like when its digest was last checked (device,
// inode, size, mode and modification time in nanoseconds). A file whose stat still matches its
// seal was not replaced, truncated, chmodded or written to since (a write moves the modification
// time), so a warm install trusts the check it made before instead of hashing 700 MB again (as
// git's index and ccache trust a file's stat); any difference, or no seal, means a full re-hash,
// as before seals existed. The change time (ctime) is not part of it: hard links, which put these
// files where the node runs them (unpacked.ts), move it. What a seal cannot see is a write by the
// user who owns the cache that then sets the old modification time back on purpose: the same user
// could as well write to the installed binaries. `rootless-k8s cache clean` starts over.
import { promises as fsp } from "node:fs";
import { dirname } from "node:path";

export interface Seal {
  /** The owner: a seal is trusted only for a file of the user running this (another user could write theirs). */
  uid: number;
  dev: string;
  ino: string;
  size: string;
  mode: number;
  mtimeNs: string;
}

/** The seal of `file` as it is now; null when it is missing or not a regular file (a symbolic link is not one). */
export async function sealOf(file: string): Promise<Seal | null> {
  const st = await fsp.lstat(file, { bigint: true }).catch(() => null);
  if (!st?.isFile()) return null;
  return {
    uid: Number(st.uid),
    dev: String(st.dev),
    ino: String(st.ino),
    size: String(st.size),
    mode: Number(st.mode & 0o7777n),
    mtimeNs: String(st.mtimeNs),
  };
}

export function sameSeal(a: Seal | null, b: Seal | null): boolean {
  return (
    !!a &&
    !!b &&
    a.uid === process.getuid?.() &&
    a.uid === b.uid &&
    a.dev === b.dev &&
    a.ino === b.ino &&
    a.size === b.size &&
    a.mode === b.mode &&
    a.mtimeNs === b.mtimeNs
  );
}

/** Reads a JSON seal file; null when it is missing or not one (then the file is hashed again). */
export async function readSealFile<T>(file: string): Promise<T | null> {
  try {
    return JSON.parse(await fsp.readFile(file, "utf8")) as T;
  } catch {
    return null;
  }
}

export async function writeSealFile(file: string, data: unknown): Promise<void> {
  await fsp.mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  await fsp.writeFile(tmp, `${JSON.stringify(data)}\n`, { mode: 0o600 });
  await fsp.rename(tmp, file);
}
