// Reading tar archives safely, in one streaming pass (gzip detected by node-tar's Parser).
// No path from an archive is ever used as a file-system path: callers pick the members they want
// by name and write them to paths of their own. Every entry is still checked, and an archive with
// an unsafe entry (absolute path, "..", a link that escapes, a device or fifo) is refused whole,
// whether or not that entry was wanted. See shared research toolchain.md §5 for node-tar's defaults.
import { createReadStream } from "node:fs";
import { posix } from "node:path";
import type { ReadEntry } from "tar";

export type { ReadEntry };

/** Why an entry makes the archive unsafe, or null when it is fine. */
export function unsafeEntryReason(entry: Pick<ReadEntry, "path" | "type" | "linkpath">): string | null {
  const p = entry.path;
  if (p.startsWith("/") || /^[A-Za-z]:/.test(p)) return `"${p}" is an absolute path`;
  if (p.split("/").includes("..")) return `"${p}" contains ".."`;
  switch (entry.type) {
    case "CharacterDevice":
    case "BlockDevice":
      return `"${p}" is a device file`;
    case "FIFO":
      return `"${p}" is a fifo`;
    case "SymbolicLink":
    case "Link": {
      const target = entry.linkpath ?? "";
      const kind = entry.type === "SymbolicLink" ? "symlink" : "hard link";
      if (target.startsWith("/")) return `${kind} "${p}" points to the absolute path "${target}"`;
      // A symlink is relative to its folder; a hard link's target is relative to the archive root.
      const base = entry.type === "SymbolicLink" ? posix.dirname(p) : ".";
      const resolved = posix.normalize(posix.join(base, target));
      if (resolved === ".." || resolved.startsWith("../")) return `${kind} "${p}" points outside the archive ("${target}")`;
      return null;
    }
    default:
      return null;
  }
}

/** "./a//b/" → "a/b": how member paths are compared. */
export function normalizeMemberPath(p: string): string {
  return p
    .replace(/\/+/g, "/")
    .replace(/^(\.\/)+/, "")
    .replace(/\/$/, "");
}

export const isRegularFile = (e: Pick<ReadEntry, "type">) => e.type === "File" || e.type === "OldFile" || e.type === "ContiguousFile";

export class UnsafeArchiveError extends Error {}

/** Thrown by a visit to end the walk early and successfully (e.g. after reading a header entry). */
export class StopWalk extends Error {
  constructor() {
    super("walk stopped");
  }
}

/**
 * Streams `file` through node-tar's parser. `visit` sees every entry (after the safety check), one
 * at a time in archive order, and either consumes it (returning a promise that settles when it is
 * written) or ignores it (it is then skipped). Resolves when the archive ended and every visit settled; rejects on the first
 * unsafe entry, corrupt data, a failed visit, or abort; `walk` is then aborted for the visits in flight.
 */
export async function walkTar(
  file: string,
  visit: (entry: ReadEntry, path: string, walk: AbortSignal) => Promise<void> | void,
  signal?: AbortSignal,
): Promise<void> {
  const { Parser } = await import("tar");
  let queue: Promise<void> = Promise.resolve();
  // Aborted when the walk fails, so that visits writing an entry stop and close their files.
  const walk = new AbortController();
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const input = createReadStream(file, { highWaterMark: 1 << 20 });
    const fail = (e: unknown) => {
      if (failed) return;
      failed = true;
      input.destroy();
      walk.abort(e);
      if (e instanceof StopWalk) resolve();
      else reject(e);
    };
    const parser = new Parser({
      strict: true,
      onReadEntry: (entry: ReadEntry) => {
        if (failed) return entry.resume();
        const reason = unsafeEntryReason(entry);
        if (reason) {
          entry.resume();
          return fail(new UnsafeArchiveError(reason));
        }
        // Visits run one after another, in archive order; the parser waits meanwhile (backpressure).
        const path = normalizeMemberPath(entry.path);
        queue = queue
          .then(async () => {
            if (failed) return void entry.resume();
            const result = visit(entry, path, walk.signal);
            if (result) await result;
            else entry.resume();
          })
          .catch((e: unknown) => {
            entry.resume();
            fail(e);
          });
      },
    });
    const onAbort = () => fail(signal?.reason ?? new Error("aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    parser.on("error", fail);
    parser.on("end", () => {
      signal?.removeEventListener("abort", onAbort);
      void queue.then(() => (failed ? undefined : resolve()));
    });
    input.on("error", fail);
    input.pipe(parser as unknown as NodeJS.WritableStream);
  });
}
