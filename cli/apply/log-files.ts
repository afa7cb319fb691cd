// The units' log files, where the user manager has no journal (issue 43): each unit appends to
// <logDir>/<unit>.log (StandardOutput=append:). Nothing else bounds them, so a timer of the node
// (rootless-k8s-logrotate.timer, every 5 minutes) rotates each file past LOG_FILE_CAP_BYTES:
// <unit>.log.1 takes its content, the older generation moves to .2, the oldest is dropped, and the
// file is emptied in place (copy, then truncate, as logrotate's copytruncate: the unit keeps its
// O_APPEND descriptor and writes on at the new end; a line written between the copy and the
// truncation is lost). A unit's logs stay under (1 + LOG_GENERATIONS) × the cap, plus what it
// writes in 5 minutes. `rootless-k8s logs` reads across the generations (cli/clients/systemd.ts).
import { constants, promises as fsp } from "node:fs";
import * as path from "node:path";
import { logGenerations } from "../clients/systemd";
import { LOG_FILE_CAP_BYTES, LOG_GENERATIONS } from "../plan/logging";

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
