// fetchArtifacts: make every artifact a verified file in the cache, from the cache itself (zero
// network), from an offline bundle (zero network), or by downloading it (a few at a time).
// Before a download, the checksum side files that upstream publishes are compared with the pin:
// a disagreement stops everything; a side file that cannot be fetched is only noted, since the
// pin is the stronger source.
import { promises as fsp } from "node:fs";
import { ExitCode, InterruptedError, UserError } from "../errors";
import { importFromBundle } from "./bundle";
import { cacheLayout, defaultCacheDir, fromCache, pinText, sealBlob, type CacheLayout } from "./cache";
import { digestFromSideFile } from "./digest";
import { download } from "./download";
import { createHttpClient, describeNetworkError, type HttpClient, type HttpOptions } from "./http";
import { acquireLock } from "./lock";
import { applyMirror } from "./mirror";
import type { FetchProgress } from "./progress";
import type { FetchedArtifact, ResolvedArtifact } from "./types";

export interface FetchOptions {
  /** Default: $XDG_CACHE_HOME/rootless-k8s or ~/.cache/rootless-k8s. */
  cacheDir?: string;
  /** Replaces upstream origins, keeping paths (--mirror / ROOTLESS_K8S_MIRROR; see mirror.ts). */
  mirror?: string | null;
  /** Extra trusted CA certificates, PEM (--ca-file). */
  caFile?: string;
  /** Downloads at a time (default 4). */
  concurrency?: number;
  signal?: AbortSignal;
  progress?: FetchProgress;
  /** Take everything from this offline bundle, with no network access at all. */
  bundle?: string;
  /** Accept a bundle whose checksums differ from the pinned ones (its own manifest is then used). */
  trustBundle?: boolean;
  /** Environment for HTTPS_PROXY / HTTP_PROXY / NO_PROXY (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Timeouts, retries and backoff (defaults in http.ts). */
  http?: Omit<HttpOptions, "caFile" | "env">;
  /** Compare pins with upstream's published side files before downloading (default true). */
  sideFiles?: boolean;
}

export const DEFAULT_CONCURRENCY = 4;

/**
 * Returns one verified cache file per artifact, in the same order. Holds the cache lock meanwhile.
 * Errors: UserError exit 4 (verification), 5 (network), 6 (cache locked), 130 (aborted).
 */
export async function fetchArtifacts(artifacts: ResolvedArtifact[], opts: FetchOptions = {}): Promise<FetchedArtifact[]> {
  const layout = cacheLayout(opts.cacheDir ?? defaultCacheDir(opts.env));
  await fsp.mkdir(layout.dir, { recursive: true, mode: 0o700 });
  const lock = await acquireLock(layout.lockDir, { purpose: "a rootless-k8s download into this cache" });
  let ok = false;
  try {
    const result = opts.bundle
      ? await importFromBundle(artifacts, opts.bundle, layout, {
          trustBundle: opts.trustBundle === true,
          signal: opts.signal,
          progress: opts.progress,
        })
      : await fetchAll(artifacts, layout, opts);
    ok = true;
    return result;
  } finally {
    opts.progress?.end?.(ok);
    await lock.release();
  }
}

async function fetchAll(artifacts: ResolvedArtifact[], layout: CacheLayout, opts: FetchOptions): Promise<FetchedArtifact[]> {
  // One failure stops the other transfers (their part files stay, for a resume).
  const stop = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
  // The HTTP client is made on the first cache miss: a warm cache opens no connection at all.
  const client: { p?: Promise<HttpClient> } = {};
  const http = () =>
    (client.p ??= createHttpClient({ ...opts.http, ...(opts.caFile ? { caFile: opts.caFile } : {}), env: opts.env ?? process.env }));
  try {
    // Two artifacts with one checksum are one file: fetch it once (and never into one part file twice).
    const key = (a: ResolvedArtifact) => `${a.checksum.algorithm}:${a.checksum.value}`;
    const unique = artifacts.filter((a, i) => artifacts.findIndex((b) => key(b) === key(a)) === i);
    const fetched = await mapLimit(unique, Math.max(1, opts.concurrency ?? DEFAULT_CONCURRENCY), async (a) => {
      try {
        const f = (await fromCache(a, layout, signal)) ?? (await fromNetwork(a, layout, await http(), opts, signal));
        opts.progress?.done?.(f);
        return f;
      } catch (e) {
        stop.abort(e);
        throw e;
      }
    });
    const byKey = new Map(fetched.map((f) => [key(f.artifact), f]));
    return artifacts.map((a) => ({ ...(byKey.get(key(a)) as FetchedArtifact), artifact: a }));
  } catch (e) {
    if (opts.signal?.aborted) throw e instanceof InterruptedError ? e : new InterruptedError("interrupted while downloading");
    throw e;
  } finally {
    if (client.p) await (await client.p).close();
  }
}

async function fromNetwork(
  a: ResolvedArtifact,
  layout: CacheLayout,
  client: HttpClient,
  opts: FetchOptions,
  signal: AbortSignal,
): Promise<FetchedArtifact> {
  // A checksum read from upstream's file (--kubernetes-version) is not compared with that file again.
  const sideNote =
    opts.sideFiles === false || a.checksum.trust === "upstream" ? "" : await crossCheckSideFiles(a, client, opts.mirror ?? null, signal);
  const url = applyMirror(a.url, opts.mirror);
  const dest = layout.blob(a.checksum);
  const r = await download(
    client,
    {
      url,
      label: a.label,
      checksum: a.checksum,
      dest,
      part: layout.part(a.checksum),
      meta: layout.partMeta(a.checksum),
      onStart: (total, from) => opts.progress?.start?.(a, total, from),
      onBytes: (n) => opts.progress?.bytes?.(a, n),
    },
    signal,
  );
  await sealBlob(a, layout, "verified");
  const resumed = r.resumedFrom > 0 ? `, resumed at byte ${r.resumedFrom}` : "";
  return { artifact: a, file: dest, size: r.size, source: "network", verification: `${pinText(a)}${sideNote}${resumed}` };
}

/**
 * Fetches each published side file and compares its digest with the pin. Returns a note for the
 * verification text; throws UserError exit 4 when a side file disagrees with the pin.
 */
async function crossCheckSideFiles(a: ResolvedArtifact, client: HttpClient, mirror: string | null, signal: AbortSignal): Promise<string> {
  const notes: string[] = [];
  for (const side of a.sideFiles) {
    const url = applyMirror(side.url, mirror);
    const name = url.split("/").at(-1) ?? url;
    const text = await fetchSmallText(client, url, signal);
    if (typeof text !== "string") {
      notes.push(`side file ${name} unavailable (${text.unavailable})`);
      continue;
    }
    const published = digestFromSideFile(text, a.fileName, side.algorithm);
    if (published === null) {
      notes.push(`side file ${name} has no entry for ${a.fileName}`);
      continue;
    }
    if (side.algorithm !== a.checksum.algorithm) {
      notes.push(`side file ${name} not compared (${side.algorithm}, the pin is ${a.checksum.algorithm})`);
      continue;
    }
    if (published !== a.checksum.value) {
      throw new UserError(
        `the published checksum of ${a.label} disagrees with the pinned one: ${url} says ${side.algorithm} ${published}, the manifest pins ${a.checksum.value} (${a.checksum.source})`,
        {
          exitCode: ExitCode.Verification,
          fix: "nothing was downloaded or installed. Either upstream re-published the file or the manifest entry is wrong: report it, or use a manifest you checked (--manifest FILE)",
        },
      );
    }
    notes.push(`side file ${name} agrees`);
  }
  return notes.length ? `; ${notes.join("; ")}` : "";
}

const SIDE_FILE_MAX = 1 << 20;

/** A small text file (a checksum or channel file): its text, or why it is unavailable (HTTP status, network). */
export async function fetchSmallText(client: HttpClient, url: string, signal: AbortSignal): Promise<string | { unavailable: string }> {
  try {
    const res = await client.get(url, {}, signal);
    if (res.status !== 200) {
      await res.body.dump().catch(() => undefined);
      return { unavailable: `HTTP ${res.status}` };
    }
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const c of res.body) {
      size += (c as Buffer).length;
      if (size > SIDE_FILE_MAX) {
        res.body.destroy();
        return { unavailable: "larger than 1 MiB" };
      }
      chunks.push(c as Buffer);
    }
    return Buffer.concat(chunks).toString("utf8");
  } catch (e) {
    if (signal.aborted) throw e;
    if (e instanceof UserError) throw e; // e.g. a refused https → http redirect
    return { unavailable: describeNetworkError(e) };
  }
}

/** Runs `fn` over `items`, at most `limit` at a time, keeping order; rejects on the first failure. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const errors: unknown[] = [];
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i] as T, i);
      } catch (e) {
        failed = true;
        errors.push(e);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed) throw errors[0];
  return results;
}
