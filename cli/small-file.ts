// Files the user names (a manifest, a CA bundle) read with a size cap: `--manifest /dev/zero`, a FIFO
// or a huge file ends in a one-line error, never in a run that reads until memory runs out.
import { closeSync, openSync, readSync } from "node:fs";

/** The file was longer than the cap; nothing past the cap was read. */
export class FileTooLargeError extends Error {
  constructor(
    readonly path: string,
    readonly max: number,
  ) {
    super(`${path} is larger than ${max} bytes`);
  }
}

/** The text of `path`, read in chunks and stopped as soon as it passes `max` bytes. */
export function readSmallFileSync(path: string, max: number): string {
  const fd = openSync(path, "r");
  try {
    return readSmallFdSync(fd, max, path);
  } finally {
    closeSync(fd);
  }
}

/** The text of an open file (`path` names it in the error), read as readSmallFileSync reads; the caller closes it. */
export function readSmallFdSync(fd: number, max: number, path: string): string {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const buf = Buffer.allocUnsafe(Math.min(64 * 1024, max + 1 - total));
    const n = readSync(fd, buf, 0, buf.length, null);
    if (n === 0) break;
    chunks.push(buf.subarray(0, n));
    total += n;
    if (total > max) throw new FileTooLargeError(path, max);
  }
  return Buffer.concat(chunks, total).toString("utf8");
}
