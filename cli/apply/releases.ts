// The release layout that install.sh, `self-upgrade` and the update check read (README, "Release layout"):
//   <base>/latest.txt                            the newest version, one line
//   <base>/<version>/rootless-k8s-linux-<arch>   amd64, arm64
//   <base>/<version>/SHA256SUMS                  sha256sum format
//   <base>/install.sh
// plus the small HTTP client that reads it (proxies from HTTPS_PROXY/HTTP_PROXY/NO_PROXY; undici
// is loaded only when a download starts).
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ExitCode, InterruptedError, UsageError, UserError, messageOf } from "../errors";
import { BIN_NAME, DEFAULT_DOWNLOAD_URL } from "../version";

export type Arch = "amd64" | "arm64";

/** The release arch of this process, or a refusal for one we do not build. */
export function hostArch(nodeArch: string = process.arch): Arch {
  if (nodeArch === "x64") return "amd64";
  if (nodeArch === "arm64") return "arm64";
  throw new UserError(`no ${BIN_NAME} release exists for the ${nodeArch} architecture`, {
    exitCode: ExitCode.Refused,
    fix: "releases are built for linux amd64 and arm64",
  });
}

export function binaryName(arch: Arch): string {
  return `${BIN_NAME}-linux-${arch}`;
}

/** The base URL: --base-url, else ROOTLESS_K8S_DOWNLOAD_URL, else the default; http(s) only. */
export function resolveBaseUrl(flag: string | undefined, env: NodeJS.ProcessEnv): string {
  const raw = flag ?? (env.ROOTLESS_K8S_DOWNLOAD_URL || DEFAULT_DOWNLOAD_URL);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`"${raw}" is not a URL (the release base, e.g. ${DEFAULT_DOWNLOAD_URL})`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new UsageError(`the release base must be an http(s) URL, not ${url.protocol}`);
  }
  return raw.replace(/\/+$/, "");
}

export const releaseUrl = {
  latest: (base: string) => `${base}/latest.txt`,
  sums: (base: string, version: string) => `${base}/${version}/SHA256SUMS`,
  binary: (base: string, version: string, arch: Arch) => `${base}/${version}/${binaryName(arch)}`,
};

const VERSION_RE = /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?$/;

/** A release version as users write it ("v0.2.0" or "0.2.0"), or undefined when it is not one. */
export function normalizeVersion(text: string): string | undefined {
  const v = text.trim().replace(/^v/, "");
  return VERSION_RE.test(v) ? v : undefined;
}

/** The checksum of `fileName` in a SHA256SUMS text ("<64 hex>  name" or "<64 hex> *name"). */
export function checksumFor(sums: string, fileName: string): string | undefined {
  for (const line of sums.split("\n")) {
    const m = /^([0-9a-fA-F]{64}) [ *](.+?)\r?$/.exec(line);
    if (m && m[2] === fileName) return m[1]!.toLowerCase();
  }
  return undefined;
}

export interface HttpOptions {
  signal?: AbortSignal;
  /** Whole-request limit for small files; downloads are bounded by the idle timeout instead. */
  timeoutMs?: number;
}

type Body = AsyncIterable<Uint8Array> & { text(): Promise<string>; dump(): Promise<void> };

async function get(url: string, opts: HttpOptions): Promise<Body> {
  const { request, EnvHttpProxyAgent, interceptors } = await import("undici");
  const dispatcher = new EnvHttpProxyAgent({ headersTimeout: 30_000, bodyTimeout: 60_000 }).compose(
    interceptors.redirect({ maxRedirections: 5 }),
  );
  const signals = [opts.signal, opts.timeoutMs ? AbortSignal.timeout(opts.timeoutMs) : undefined].filter(
    (s): s is AbortSignal => s !== undefined,
  );
  let res;
  try {
    res = await request(url, { dispatcher, signal: signals.length ? AbortSignal.any(signals) : undefined });
  } catch (e) {
    if (opts.signal?.aborted) throw new InterruptedError();
    throw new UserError(`could not download ${url}: ${messageOf(e)}`, {
      exitCode: ExitCode.Network,
      fix: "check the network and any proxy (HTTPS_PROXY), or the release base (--base-url, ROOTLESS_K8S_DOWNLOAD_URL)",
      cause: e,
    });
  }
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new UserError(`could not download ${url}: HTTP ${res.statusCode}`, {
      exitCode: ExitCode.Network,
      fix:
        res.statusCode === 404
          ? "check that this version exists (--to VERSION) and that the release base is right (--base-url, ROOTLESS_K8S_DOWNLOAD_URL)"
          : "try again later, or use another release base (--base-url, ROOTLESS_K8S_DOWNLOAD_URL)",
    });
  }
  return res.body as Body;
}

/** A small text file (latest.txt, SHA256SUMS), at most 64 KiB. */
export async function fetchText(url: string, opts: HttpOptions = {}): Promise<string> {
  const body = await get(url, { timeoutMs: 30_000, ...opts });
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > 64 * 1024) throw new UserError(`${url} is larger than 64 KiB; it is not a release file`, { exitCode: ExitCode.Verification });
      chunks.push(Buffer.from(chunk));
    }
  } catch (e) {
    if (e instanceof UserError) throw e;
    if (opts.signal?.aborted) throw new InterruptedError();
    throw new UserError(`could not download ${url}: ${messageOf(e)}`, { exitCode: ExitCode.Network, cause: e });
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Streams `url` into a new file `dest` (created exclusively, mode 0700 while incomplete) and
 * returns its SHA-256. The caller owns `dest` and removes it on failure.
 */
export async function downloadFile(url: string, dest: string, opts: HttpOptions = {}): Promise<{ sha256: string; bytes: number }> {
  const body = await get(url, opts);
  const hash = createHash("sha256");
  let bytes = 0;
  const hashing = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(body, hashing, createWriteStream(dest, { flags: "wx", mode: 0o700 }), opts.signal ? { signal: opts.signal } : {});
  } catch (e) {
    if (opts.signal?.aborted) throw new InterruptedError();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOSPC" || code === "EDQUOT") {
      throw new UserError(`no space left to download ${url} into ${dest}`, { exitCode: ExitCode.Failure, fix: "free some disk space and run this again", cause: e });
    }
    throw new UserError(`could not download ${url}: ${messageOf(e)}`, { exitCode: ExitCode.Network, fix: "run this again", cause: e });
  }
  return { sha256: hash.digest("hex"), bytes };
}

/** A name for a temporary file beside `target`, hidden and unique. */
export function tempPathBeside(target: string, purpose: string): string {
  const slash = target.lastIndexOf("/");
  return `${target.slice(0, slash + 1)}.${target.slice(slash + 1)}.${purpose}-${randomBytes(6).toString("hex")}`;
}
