// Writing the rendered node: compare every file with what is on disk (content and mode), write only
// those that differ (atomically, each in a folder created with its mode), and find the files an
// earlier install wrote that the plan no longer has. The disk is the truth: a file the user deleted
// or changed by hand is written again.
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { InterruptedError } from "../errors";
import type { RenderedFile } from "../render/index";
import { ensureDir, hashFile, hasRecordedContent, modeOf, sha256, sweepTempFiles, writeFileAtomic } from "./files";
import type { Receipt, ReceiptFile } from "./receipt";

export interface FileChanges {
  /** Files whose content or mode differ from the disk (or are missing). */
  write: RenderedFile[];
  unchanged: RenderedFile[];
  /** Files of the previous receipt that the plan does not render any more. */
  stale: ReceiptFile[];
}

export function toReceiptFile(f: RenderedFile): ReceiptFile {
  return { path: f.path, sha256: sha256(f.content), mode: f.mode, kind: f.kind, ...(f.unit ? { unit: f.unit } : {}) };
}

export async function diffFiles(files: readonly RenderedFile[], previous: Receipt | null): Promise<FileChanges> {
  const write: RenderedFile[] = [];
  const unchanged: RenderedFile[] = [];
  for (const f of files) {
    const [h, m] = await Promise.all([hashFile(f.path), modeOf(f.path)]);
    if (h === sha256(f.content) && m === f.mode) unchanged.push(f);
    else write.push(f);
  }
  const now = new Set(files.map((f) => f.path));
  const stale = (previous?.files ?? []).filter((f) => !now.has(f.path));
  return { write, unchanged, stale };
}

/** Writes the files, each atomically; folders are created with `dirMode(folder)`. */
export async function writeFiles(
  files: readonly RenderedFile[],
  dirMode: (dir: string) => number,
  signal?: AbortSignal,
): Promise<string[]> {
  const created: string[] = [];
  const dirs = new Set<string>();
  for (const f of files) {
    if (signal?.aborted) throw new InterruptedError("interrupted while writing the node's files; re-run to finish");
    const dir = path.dirname(f.path);
    if (!dirs.has(dir)) {
      dirs.add(dir);
      created.push(...(await ensureDir(dir, dirMode(dir))));
      await sweepTempFiles(dir);
    }
    await writeFileAtomic(f.path, f.content, { mode: f.mode });
  }
  return created;
}

/**
 * Removes files an earlier plan wrote and this one does not (only paths the receipt lists), each only
 * while it is still the file the tool wrote: a regular file with the recorded sha256. One changed
 * since, or whose receipt entry has an empty or malformed sha256 (nothing proves it is ours), is
 * kept, as uninstall keeps it; those are returned.
 */
export async function removeStale(stale: readonly ReceiptFile[]): Promise<ReceiptFile[]> {
  const kept: ReceiptFile[] = [];
  for (const f of stale) {
    const st = await fsp.lstat(f.path).catch(() => null);
    if (!st) continue;
    if (st.isDirectory() || (st.isFile() && !(await hasRecordedContent(f.path, f.sha256)))) {
      kept.push(f);
      continue;
    }
    await fsp.rm(f.path, { force: true });
  }
  return kept;
}
