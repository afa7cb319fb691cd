// A file writer that hashes what it writes, in the same pass. Chunks are hashed as they arrive and
// written with writev(2) in batches (a 4 MiB buffer), so a fast download is not held back by one
// small write per network chunk. Errors of the file itself are kept apart as `fileError`, so a
// full disk is never mistaken for a network failure.
import type { Hash } from "node:crypto";
import { promises as fsp } from "node:fs";
import { Writable } from "node:stream";

/** The body went past the most bytes the sink may write; nothing past the cap was written. */
export class BodyTooLongError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the body is longer than ${maxBytes} bytes`);
  }
}

export class HashingFileSink extends Writable {
  bytesWritten = 0;
  /** The error of an open, write or close of the file (ENOSPC, EACCES, ...), if one happened. */
  fileError: NodeJS.ErrnoException | null = null;
  private handle: fsp.FileHandle | null = null;

  constructor(
    private readonly path: string,
    private readonly opts: { append: boolean; mode: number; hash: Hash; onBytes?: ((n: number) => void) | undefined; maxBytes?: number },
  ) {
    super({ highWaterMark: 4 << 20 });
  }

  override _construct(cb: (e?: Error | null) => void): void {
    fsp.open(this.path, this.opts.append ? "a" : "w", this.opts.mode).then(
      (h) => {
        this.handle = h;
        cb();
      },
      (e: NodeJS.ErrnoException) => cb((this.fileError = e)),
    );
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this._writev([{ chunk }], cb);
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (e?: Error | null) => void): void {
    const buffers = chunks.map((c) => c.chunk);
    let n = 0;
    for (const b of buffers) n += b.length;
    // Stop at the cap: a batch that would pass it is neither hashed nor written.
    if (this.opts.maxBytes !== undefined && this.bytesWritten + n > this.opts.maxBytes) return cb(new BodyTooLongError(this.opts.maxBytes));
    for (const b of buffers) this.opts.hash.update(b);
    this.opts.onBytes?.(n);
    this.writeAll(this.handle as fsp.FileHandle, buffers).then(
      () => cb(),
      (e: NodeJS.ErrnoException) => cb((this.fileError = e)),
    );
  }

  /** writev until every byte is written: a short write is followed by another, which reports ENOSPC. */
  private async writeAll(h: fsp.FileHandle, buffers: Buffer[]): Promise<void> {
    let pending = buffers;
    while (pending.length > 0) {
      const { bytesWritten } = await h.writev(pending);
      if (bytesWritten === 0) throw Object.assign(new Error("write made no progress"), { code: "EIO", syscall: "write" });
      this.bytesWritten += bytesWritten;
      pending = skipBytes(pending, bytesWritten);
    }
  }

  override _final(cb: (e?: Error | null) => void): void {
    const h = this.handle;
    this.handle = null;
    if (!h) return cb();
    h.close().then(
      () => cb(),
      (e: NodeJS.ErrnoException) => cb((this.fileError = e)),
    );
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    const h = this.handle;
    this.handle = null;
    if (!h) return cb(err);
    h.close().then(
      () => cb(err),
      () => cb(err),
    );
  }
}

/** The buffers left after the first `n` bytes. */
function skipBytes(buffers: Buffer[], n: number): Buffer[] {
  const out: Buffer[] = [];
  let skip = n;
  for (const b of buffers) {
    if (skip >= b.length) {
      skip -= b.length;
      continue;
    }
    out.push(skip > 0 ? b.subarray(skip) : b);
    skip = 0;
  }
  return out;
}
