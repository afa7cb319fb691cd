// The units' log files, where the user manager has no journal (issue 43): each unit appends to
// <logDir>/<unit>.log (StandardOutput=append:). Nothing else bounds them, so a timer of the node
// (rootless-k8s-logrotate.timer, every 5 minutes) rotates each file past LOG_FILE_CAP_BYTES:
// <unit>.log.1 takes its content, the older generation moves to .2, the oldest is dropped, and the
// file is emptied in place (copy, then truncate, as logrotate's copytruncate: the unit keeps its
// O_APPEND descriptor and writes on at the new end; a line written between the copy and the
// truncation is lost). A unit's logs stay under (1 + LOG_GENERATIONS) × the cap, plus what it
// writes in 5 minutes. `rootless-k8s logs` reads across the generations.
import { constants, promises as fsp } from "node:fs";
import * as path from "node:path";
import { LOG_FILE_CAP_BYTES, LOG_GENERATIONS } from "../plan/logging";

export { LOG_FILE_CAP_BYTES, LOG_GENERATIONS };

/** The live file and its rotated generations, newest first: x.log, x.log.1, x.log.2. */
export function logGenerations(file: string, keep = LOG_GENERATIONS): string[] {
  return [file, ...Array.from({ length: keep }, (_, i) => `${file}.${i + 1}`)];
}

/**
 * Rotates every `*.log` of `logDir` larger than `cap`. Links and other non-files are left alone.
 * Returns the files rotated, with the size each had.
 */
export async function rotateLogFiles(
  logDir: string,
  cap = LOG_FILE_CAP_BYTES,
  keep = LOG_GENERATIONS,
): Promise<{ file: string; bytes: number }[]> {
  const names = await fsp.readdir(logDir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [] as string[];
    throw e;
  });
  const rotated: { file: string; bytes: number }[] = [];
  for (const name of names.filter((n) => n.endsWith(".log")).sort()) {
    const file = path.join(logDir, name);
    const st = await fsp.lstat(file).catch(() => null);
    if (!st?.isFile() || st.size <= cap) continue;
    const gens = logGenerations(file, keep);
    // Oldest first: .2 goes, .1 becomes .2, then the live file's content becomes .1.
    await fsp.rm(gens[keep]!, { force: true });
    for (let i = keep - 1; i >= 1; i--) await fsp.rename(gens[i]!, gens[i + 1]!).catch(() => undefined);
    await fsp.copyFile(file, gens[1]!, constants.COPYFILE_FICLONE);
    await fsp.truncate(file, 0);
    rotated.push({ file, bytes: st.size });
  }
  return rotated;
}

/** The last `n` lines of a file, read backwards in chunks (a large file is never read whole for a few lines). */
async function lastLinesOf(file: string, n: number): Promise<string[] | null> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, "r");
  } catch {
    return null;
  }
  try {
    const { size } = await fh.stat();
    const chunks: Buffer[] = [];
    let pos = size;
    let newlines = 0;
    while (pos > 0 && newlines <= n) {
      const len = Math.min(pos, 1 << 20);
      pos -= len;
      const buf = Buffer.alloc(len);
      await fh.read(buf, 0, len, pos);
      chunks.unshift(buf);
      for (const b of buf) if (b === 10) newlines++;
    }
    const lines = Buffer.concat(chunks)
      .toString("utf8")
      .split("\n")
      .filter((l) => l.trim() !== "");
    // A first line cut by the chunk boundary is not whole: drop it unless the file starts there.
    if (pos > 0) lines.shift();
    return lines.slice(-n);
  } finally {
    await fh.close();
  }
}

/** The last `n` lines of a unit's log, across its rotated generations (oldest lines first); null when there is none. */
export async function lastLogLines(file: string, n: number, keep = LOG_GENERATIONS): Promise<string[] | null> {
  let out: string[] | null = null;
  for (const g of logGenerations(file, keep)) {
    const want = n - (out?.length ?? 0);
    if (want <= 0) break;
    const lines = await lastLinesOf(g, want);
    if (lines === null) continue;
    out = [...lines, ...(out ?? [])];
  }
  return out;
}
