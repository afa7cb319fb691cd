// One verified download into the cache: stream to <blob>.part while hashing in the same pass,
// rename into place only when the digest matches the pin. An interrupted or failed transfer keeps
// the part file and resumes it with Range / If-Range, in the next attempt or the next run.
// Bounded: never more bytes than the pinned size (or the announced Content-Length) are written,
// and each file has a deadline (a grace period plus its size at a minimum rate; see http.ts).
import { createHash } from "node:crypto";
import { promises as fsp } from "node:fs";
import { dirname } from "node:path";
import { PassThrough, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ExitCode, InterruptedError, UserError, isSystemError } from "../errors";
import { hashInto } from "./digest";
import { BodyTooLongError, HashingFileSink } from "./sink";
import { formatBytes } from "./format";
import { GRACE_ENV, HttpStatusError, MIN_RATE_ENV, downloadFailure, withRetries, type HttpClient } from "./http";
import type { PinnedChecksum } from "./types";

export interface DownloadJob {
  /** URL to ask (already rewritten for a mirror). */
  url: string;
  /** "etcd 3.6.14 for amd64", for messages. */
  label: string;
  checksum: PinnedChecksum;
  /** Final path (the cache blob), and the part and metadata files beside the download. */
  dest: string;
  part: string;
  meta: string;
  /** Called when the body starts: total size if known, and how many bytes were already there. */
  onStart?(total: number | undefined, resumedFrom: number): void;
  onBytes?(n: number): void;
}

export interface DownloadResult {
  size: number;
  resumedFrom: number;
  attempts: number;
}

interface PartMeta {
  url: string;
  etag?: string;
  lastModified?: string;
}

/** With neither a pinned size nor a Content-Length, a download stops at this many bytes. */
export const MAX_UNSIZED_DOWNLOAD = 1 << 30;

/** Downloads and verifies `job`, retrying network errors and 5xx with backoff, within its deadline. */
export async function download(client: HttpClient, job: DownloadJob, signal?: AbortSignal): Promise<DownloadResult> {
  await fsp.mkdir(dirname(job.part), { recursive: true });
  await fsp.mkdir(dirname(job.dest), { recursive: true });
  let attempts = 0;
  let resumedFrom = 0;
  let restartedAfterMismatch = false;
  const deadline = startDeadline(client.settings, job);
  const inner = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
  const counted: DownloadJob = {
    ...job,
    onBytes: (n) => {
      deadline.received += n;
      job.onBytes?.(n);
    },
  };
  try {
    const size = await withRetries(
      client.settings,
      async (n) => {
        attempts = n;
        for (;;) {
          const state: AttemptState = { resumedFrom: 0, diskError: null };
          try {
            const size = await attempt(client, counted, state, inner);
            resumedFrom = state.resumedFrom;
            return size;
          } catch (e) {
            if (inner.aborted) throw e;
            const fileError = state.diskError ?? (isFileSystemError(e) ? e : null);
            if (fileError) {
              await removePart(job);
              throw diskError(job, fileError);
            }
            if (e instanceof SizeRefused) {
              // What was written is not the pinned file: keep nothing of it.
              await removePart(job);
              throw e.toUserError();
            }
            if (!(e instanceof ChecksumMismatch)) throw e;
            await removePart(job);
            // A resumed part may have come from an older file at the same URL: start over once.
            if (state.resumedFrom === 0 || restartedAfterMismatch) throw e.toUserError();
            restartedAfterMismatch = true;
          }
        }
      },
      inner,
    );
    return { size, resumedFrom, attempts };
  } catch (e) {
    if (signal?.aborted) throw await interrupted(job);
    if (deadline.signal.aborted) throw await deadline.error();
    throw downloadFailure(e, {
      label: job.label,
      url: job.url,
      from: e instanceof HttpStatusError ? e.url : job.url,
      attempts,
      fix: "check the network and proxy (HTTPS_PROXY, NO_PROXY) and re-run: finished files are kept and a partial download resumes; or install offline with --bundle FILE",
    });
  } finally {
    deadline.stop();
  }
}

interface Deadline {
  readonly signal: AbortSignal;
  /** Body bytes received so far, over all attempts. */
  received: number;
  stop(): void;
  error(): Promise<UserError>;
}

/**
 * The file's deadline: after the grace period, the bytes received must keep up with the minimum
 * rate (elapsed ≤ grace + received / rate). Checked a few times a second; so a trickling server is
 * cut off soon after the grace, and no file takes longer than grace + size / rate.
 */
function startDeadline(s: HttpClient["settings"], job: DownloadJob): Deadline {
  const ctl = new AbortController();
  const started = Date.now();
  const d: Deadline = {
    signal: ctl.signal,
    received: 0,
    stop: () => clearInterval(timer),
    async error() {
      const secs = Math.round((Date.now() - started) / 100) / 10;
      const kept = (await fsp.stat(job.part).catch(() => null))?.size ?? 0;
      return new UserError(
        `download of ${job.label} too slow: ${formatBytes(d.received)} in ${secs} s from ${job.url}, below ${formatBytes(s.minRateBytesPerSec)}/s after a ${s.deadlineGraceMs / 1000} s grace${kept ? ` (${formatBytes(kept)} kept; re-running resumes it)` : ""}`,
        {
          exitCode: ExitCode.Network,
          fix: `check the network, proxy or mirror and re-run; on a slow link lower ${MIN_RATE_ENV} (bytes per second, e.g. 8K) or raise ${GRACE_ENV} (seconds)`,
        },
      );
    },
  };
  const tick = Math.min(1000, Math.max(20, Math.floor(s.deadlineGraceMs / 4)));
  const timer = setInterval(() => {
    const allowed = s.deadlineGraceMs + (d.received / s.minRateBytesPerSec) * 1000;
    if (Date.now() - started > allowed) {
      clearInterval(timer);
      ctl.abort(new Error("download deadline passed"));
    }
  }, tick);
  timer.unref();
  return d;
}

interface AttemptState {
  resumedFrom: number;
  diskError: NodeJS.ErrnoException | null;
}

async function attempt(client: HttpClient, job: DownloadJob, state: AttemptState, signal?: AbortSignal): Promise<number> {
  const meta = await readMeta(job.meta);
  const pinned = job.checksum.size;
  let offset = (await fsp.stat(job.part).catch(() => null))?.size ?? 0;
  if (pinned !== undefined && offset > pinned) {
    // A part longer than the pinned file cannot become it.
    await removePart(job);
    offset = 0;
  }
  // The hash of what is already there: needed to resume, and enough when the part is complete
  // (a run stopped between the last byte and the rename).
  let hash = createHash(job.checksum.algorithm);
  if (offset > 0) {
    await hashInto(hash, job.part, signal);
    if (hash.copy().digest("hex") === job.checksum.value) {
      state.resumedFrom = offset;
      await finish(job);
      return offset;
    }
  }
  const headers: Record<string, string> = {};
  if (offset > 0) {
    headers.range = `bytes=${offset}-`;
    const validator = meta?.url === job.url ? (meta.etag && !meta.etag.startsWith("W/") ? meta.etag : meta.lastModified) : undefined;
    if (validator) headers["if-range"] = validator;
  }
  const res = await client.get(job.url, headers, signal);
  const range = res.status === 206 ? parseContentRange(header(res.headers, "content-range")) : null;
  if (offset > 0 && (res.status === 416 || (res.status === 206 && range?.start !== offset))) {
    // The part no longer fits the file: throw it away and start from zero.
    await res.body.dump().catch(() => undefined);
    await removePart(job);
    return attempt(client, job, state, signal);
  }
  if (res.status === 404 || res.status === 410) {
    await res.body.dump().catch(() => undefined);
    throw new UserError(`not found (HTTP ${res.status}): ${res.url} (${job.label})`, {
      exitCode: ExitCode.Network,
      fix: "that version is not published at this URL: check the manifest's version and URL, or that --mirror carries the file at the upstream path",
    });
  }
  if (res.status !== 200 && res.status !== 206) {
    await res.body.dump().catch(() => undefined);
    throw new HttpStatusError(res.status, res.url);
  }
  if (res.status === 200 && offset > 0) {
    // The server sent the whole file (no Range support, or If-Range failed): start the hash over.
    offset = 0;
    hash = createHash(job.checksum.algorithm);
  }
  state.resumedFrom = offset;
  const newMeta: PartMeta = { url: job.url };
  const etag = header(res.headers, "etag");
  const lastModified = header(res.headers, "last-modified");
  if (etag) newMeta.etag = etag;
  if (lastModified) newMeta.lastModified = lastModified;
  await fsp.writeFile(job.meta, JSON.stringify(newMeta));

  const lengthHeader = header(res.headers, "content-length");
  const length = lengthHeader === undefined ? Number.NaN : Number(lengthHeader);
  const total = range?.total ?? (Number.isFinite(length) && length >= 0 ? offset + length : undefined);
  // Never more than the pinned size, else the announced one, else MAX_UNSIZED_DOWNLOAD.
  if (
    (pinned !== undefined && total !== undefined && total !== pinned) ||
    (pinned === undefined && total !== undefined && total > MAX_UNSIZED_DOWNLOAD)
  ) {
    res.body.destroy();
    throw new SizeRefused(
      job,
      `the server announces ${total} bytes, ${pinned !== undefined ? `the manifest pins ${pinned}` : `more than the ${formatBytes(MAX_UNSIZED_DOWNLOAD)} allowed without a pinned size`}`,
    );
  }
  const maxBytes = (pinned ?? total ?? MAX_UNSIZED_DOWNLOAD) - offset;
  job.onStart?.(total, offset);
  const sink = new HashingFileSink(job.part, { append: offset > 0, mode: 0o644, hash, onBytes: job.onBytes, maxBytes });
  try {
    await keepingWhatArrived(res.body, sink, signal);
  } catch (e) {
    state.diskError = sink.fileError;
    if (e instanceof BodyTooLongError) {
      throw new SizeRefused(
        job,
        `the server sent more than ${pinned !== undefined ? `the pinned ${pinned}` : total !== undefined ? `the announced ${total}` : formatBytes(MAX_UNSIZED_DOWNLOAD)} bytes; the transfer was cut there`,
      );
    }
    throw e;
  }
  const received = sink.bytesWritten;
  const actual = hash.digest("hex");
  if (actual !== job.checksum.value) throw new ChecksumMismatch(job, actual);
  await finish(job);
  return offset + received;
}

/**
 * Copies the body into the sink. When the connection breaks, what already arrived is still written
 * (the sink ends normally, then the body's error is thrown), so the next attempt resumes from every
 * byte received: a plain pipeline would destroy the sink and drop the chunks still queued in it
 * (all of them, when the file was not even open yet). A failing sink or the signal stop both at once.
 */
async function keepingWhatArrived(body: Readable, sink: HashingFileSink, signal?: AbortSignal): Promise<void> {
  let broken: Error | null = null;
  const guard = new PassThrough({ highWaterMark: 1 << 20 });
  body.once("error", (e: Error) => {
    broken = e;
    body.unpipe(guard);
    guard.end();
  });
  body.pipe(guard);
  try {
    await pipeline(guard, sink, { signal });
  } catch (e) {
    body.destroy();
    throw e;
  }
  if (broken) throw broken;
}

/** The verified part becomes the cache blob. */
async function finish(job: DownloadJob): Promise<void> {
  await fsp.rename(job.part, job.dest);
  await fsp.rm(job.meta, { force: true });
}

const FILE_SYSTEM_CODES = new Set(["ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EIO", "ENOTDIR", "EISDIR", "EMFILE", "ENFILE"]);

/** An error of the cache's file system (not of the network): retrying the download cannot help. */
function isFileSystemError(e: unknown): e is NodeJS.ErrnoException {
  return isSystemError(e) && FILE_SYSTEM_CODES.has(e.code as string);
}

export class ChecksumMismatch extends Error {
  constructor(
    readonly job: Pick<DownloadJob, "label" | "checksum" | "url">,
    readonly actual: string,
  ) {
    super(`checksum mismatch for ${job.label}`);
  }
  toUserError(): UserError {
    const { label, checksum, url } = this.job;
    return new UserError(
      `checksum mismatch for ${label}: expected ${checksum.algorithm} ${checksum.value}, got ${this.actual} (from ${url})`,
      {
        exitCode: ExitCode.Verification,
        fix: "nothing was installed and the bad download was deleted; re-run to fetch it again. If it happens again, the server or mirror serves a different file than the pinned one",
      },
    );
  }
}

/** A body larger than the pin (or than announced): refused at once, never retried (exit 4). */
class SizeRefused extends Error {
  constructor(
    readonly job: Pick<DownloadJob, "label" | "url">,
    readonly why: string,
  ) {
    super(why);
  }
  toUserError(): UserError {
    return new UserError(`refused the download of ${this.job.label} from ${this.job.url}: ${this.why}`, {
      exitCode: ExitCode.Verification,
      fix: "nothing was installed and the partial file was deleted. The server or mirror serves a different file than the pinned one: check --mirror, or report it",
    });
  }
}

function parseContentRange(v: string | undefined): { start: number; total: number | undefined } | null {
  const m = v ? /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(v.trim()) : null;
  if (!m) return null;
  return { start: Number(m[1]), total: m[3] === "*" ? undefined : Number(m[3]) };
}

function header(h: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

async function readMeta(file: string): Promise<PartMeta | null> {
  try {
    const m = JSON.parse(await fsp.readFile(file, "utf8")) as PartMeta;
    return typeof m.url === "string" ? m : null;
  } catch {
    return null;
  }
}

async function removePart(job: Pick<DownloadJob, "part" | "meta">): Promise<void> {
  await fsp.rm(job.part, { force: true });
  await fsp.rm(job.meta, { force: true });
}

async function interrupted(job: DownloadJob): Promise<InterruptedError> {
  const kept = (await fsp.stat(job.part).catch(() => null))?.size ?? 0;
  return new InterruptedError(
    `interrupted while downloading ${job.label}${kept ? ` (${formatBytes(kept)} kept; re-running resumes it)` : ""}`,
  );
}

function diskError(job: DownloadJob, e: NodeJS.ErrnoException): UserError {
  const dir = dirname(dirname(job.part));
  if (e.code === "ENOSPC" || e.code === "EDQUOT") {
    return new UserError(`no space left on the device of ${dir} while downloading ${job.label}; the partial file was removed`, {
      exitCode: ExitCode.Failure,
      cause: e,
      fix: `free ${job.checksum.size ? `at least ${formatBytes(job.checksum.size)}` : "some space"} there (or set XDG_CACHE_HOME to a folder with room) and re-run`,
    });
  }
  return new UserError(`cannot write the download cache ${dir} (${e.code ?? e.message}) while downloading ${job.label}`, {
    exitCode: ExitCode.Failure,
    cause: e,
    fix: "make the folder writable by you, or set XDG_CACHE_HOME to another folder, and re-run",
  });
}
