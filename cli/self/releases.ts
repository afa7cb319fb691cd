// The release layout that install.sh, `self-upgrade` and the update check read (docs/binary.md, "Release layout"):
//   <base>/latest.txt                            the newest version, one line
//   <base>/<version>/rootless-k8s-linux-<arch>   amd64, arm64
//   <base>/<version>/VERSION                     the version and a newline
//   <base>/<version>/SHA256SUMS                  sha256sum format: the binaries, then VERSION
//   <base>/<version>/SHA256SUMS.sig              ed25519 signature of SHA256SUMS (64 bytes, raw)
//   <base>/install.sh
// and how it is read: through cli/fetch's HTTP client (timeouts, retries with backoff, redirects
// without https → http, proxies, --ca-file, one-line errors), loaded only when a request starts.
import { createHash, createPublicKey, verify } from "node:crypto";
import { open } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import { ExitCode, InterruptedError, UsageError, UserError, messageOf } from "../errors";
import { HttpStatusError, createHttpClient, downloadFailure, withRetries, type HttpOptions, type Response } from "../fetch/http";
import { HashingFileSink } from "../fetch/sink";
import { printable } from "../text";
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

/**
 * The base URL: --base-url, else ROOTLESS_K8S_DOWNLOAD_URL, else the default; https only, or
 * plain http when `insecureHttp` (--insecure-http) says so.
 */
export function resolveBaseUrl(flag: string | undefined, env: NodeJS.ProcessEnv, opts: { insecureHttp?: boolean } = {}): string {
  const raw = flag ?? (env.ROOTLESS_K8S_DOWNLOAD_URL || DEFAULT_DOWNLOAD_URL);
  // Errors name the URL as it was given (whole, with its path), never a normalized or shortened
  // form: only its credentials are taken out and its control characters escaped.
  const given = `${shownUrl(raw)}${flag !== undefined ? " (--base-url)" : env.ROOTLESS_K8S_DOWNLOAD_URL ? " (ROOTLESS_K8S_DOWNLOAD_URL)" : ""}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`"${shownUrl(raw)}" is not a URL (the release base, e.g. ${DEFAULT_DOWNLOAD_URL})`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new UsageError(`the release base must be an http(s) URL, not ${printable(url.protocol)}; got ${given}`);
  }
  if (url.protocol === "http:" && !opts.insecureHttp) {
    throw new UsageError(
      `refused the plain-http release base ${given}: anyone on the path could swap what is downloaded (only the signature would still stand in the way); use https, or pass --insecure-http to accept it`,
    );
  }
  return raw.replace(/\/+$/, "");
}

/**
 * `raw` for a message, as the user wrote it, less its credentials: the authority's part up to its
 * last "@" is taken out as written. Should the URL parser still find a user or password in what is
 * left (a spelling the cut does not foresee), the parsed URL without them is shown instead. Control
 * characters come out as visible escapes, so the message stays one inert line.
 */
export function shownUrl(raw: string): string {
  const m = /^([^:/?#]*:[\\/\t\n\r]*)([^\\/?#]*)/.exec(raw);
  const at = m ? (m[2] as string).lastIndexOf("@") : -1;
  let shown = m && at >= 0 ? `${m[1]}${(m[2] as string).slice(at + 1)}${raw.slice(m[0].length)}` : raw;
  try {
    const u = new URL(shown);
    if (u.username || u.password) shown = `${u.protocol}//${u.host}${u.pathname}${u.search}${u.hash}`;
  } catch {
    // not a URL: shown as written, less the cut above
  }
  return printable(shown);
}

export const releaseUrl = {
  latest: (base: string) => `${base}/latest.txt`,
  sums: (base: string, version: string) => `${base}/${version}/SHA256SUMS`,
  signature: (base: string, version: string) => `${base}/${version}/SHA256SUMS.sig`,
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

/**
 * The file whose line in SHA256SUMS puts a release's version under its signature: a base that
 * serves one signed release under another version's name (an older one, to hold a fix back) is
 * caught before anything is downloaded, in a dry run too.
 */
export const VERSION_FILE = "VERSION";

/** Whether a SHA256SUMS text is release `version`'s: its VERSION line is the SHA-256 of "<version>\n". */
export function sumsNameVersion(sums: string, version: string): boolean {
  return checksumFor(sums, VERSION_FILE) === createHash("sha256").update(`${version}\n`).digest("hex");
}

/** How to ask a release base: cli/fetch's HTTP client options (--ca-file, proxies from env, timeouts, retries), plus: */
export interface ReleaseRequest extends HttpOptions {
  signal?: AbortSignal;
  /** A limit on the whole request, retries included (the background update check's). */
  deadlineMs?: number;
}

const NETWORK_FIX = "check the network and any proxy (HTTPS_PROXY), or the release base (--base-url, ROOTLESS_K8S_DOWNLOAD_URL)";

/** A final HTTP status: a 404 names the version and the base, anything else says to try later. */
function statusError(url: string, status: number): UserError {
  return new UserError(`could not download ${url}: HTTP ${status}`, {
    exitCode: ExitCode.Network,
    fix:
      status === 404
        ? "check that this version exists (--to VERSION) and that the release base is right (--base-url, ROOTLESS_K8S_DOWNLOAD_URL)"
        : "try again later, or use another release base (--base-url, ROOTLESS_K8S_DOWNLOAD_URL)",
  });
}

/**
 * GETs `url` with cli/fetch's HTTP client (redirects without https → http, proxies, --ca-file,
 * timeouts) and gives the 200 response to `read`; network errors and 5xx, also in the middle of the
 * body, are retried with backoff. undici and the client load only here, when a request starts.
 */
async function getRelease<T>(
  url: string,
  req: ReleaseRequest,
  read: (res: Response, signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  const { signal, deadlineMs, ...http } = req;
  const deadline = deadlineMs ? AbortSignal.timeout(deadlineMs) : undefined;
  const stop = signal && deadline ? AbortSignal.any([signal, deadline]) : (signal ?? deadline);
  const client = await createHttpClient(http);
  let attempts = 0;
  try {
    return await withRetries(
      client.settings,
      async (n) => {
        attempts = n;
        const res = await client.get(url, {}, stop);
        if (res.status !== 200) {
          await res.body.dump().catch(() => undefined);
          const status = new HttpStatusError(res.status, url);
          throw status.retryable ? status : statusError(url, res.status);
        }
        return await read(res, stop);
      },
      stop,
    );
  } catch (e) {
    if (signal?.aborted) throw new InterruptedError();
    if (deadline?.aborted) {
      throw new UserError(`could not download ${url}: no answer within ${deadlineMs! / 1000} s`, {
        exitCode: ExitCode.Network,
        fix: NETWORK_FIX,
        cause: e,
      });
    }
    if (e instanceof HttpStatusError) throw statusError(url, e.status);
    throw downloadFailure(e, { label: url, url, attempts, fix: NETWORK_FIX });
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** A small text file (latest.txt, SHA256SUMS), at most 64 KiB. */
export async function fetchText(url: string, req: ReleaseRequest = {}): Promise<string> {
  return (await fetchBytes(url, req)).toString("utf8");
}

/** A small file (SHA256SUMS, SHA256SUMS.sig) as bytes, at most 64 KiB. */
export async function fetchBytes(url: string, req: ReleaseRequest = {}): Promise<Buffer> {
  return getRelease(url, req, async (res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > 64 * 1024) {
        res.body.destroy();
        throw new UserError(`${url} is larger than 64 KiB; it is not a release file`, { exitCode: ExitCode.Verification });
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  });
}

/**
 * Whether `signature` is the ed25519 signature of `sums` by the release key `publicKey` (base64
 * SPKI DER, as compiled in). A key that does not parse counts as a failure, never as a pass.
 */
export function verifySums(sums: Buffer, signature: Buffer, publicKey: string): boolean {
  if (!publicKey || signature.length !== 64) return false;
  try {
    const key = createPublicKey({ key: Buffer.from(publicKey, "base64"), format: "der", type: "spki" });
    return key.asymmetricKeyType === "ed25519" && verify(null, sums, key, signature);
  } catch {
    return false;
  }
}

/**
 * Streams `url` into a new file `dest` (created exclusively, mode 0700 while incomplete; a retry
 * writes it again from the start) and returns its SHA-256. The caller owns `dest` and removes it on failure.
 */
export async function downloadFile(url: string, dest: string, req: ReleaseRequest = {}): Promise<{ sha256: string; bytes: number }> {
  try {
    await (await open(dest, "wx", 0o700)).close();
  } catch (e) {
    throw fileError(url, dest, e as NodeJS.ErrnoException);
  }
  return getRelease(url, req, async (res, signal) => {
    const hash = createHash("sha256");
    const sink = new HashingFileSink(dest, { append: false, mode: 0o700, hash });
    try {
      await pipeline(res.body, sink, signal ? { signal } : {});
    } catch (e) {
      if (sink.fileError && !signal?.aborted) throw fileError(url, dest, sink.fileError);
      throw e;
    }
    return { sha256: hash.digest("hex"), bytes: sink.bytesWritten };
  });
}

/** An error of the file being written (never retried): a full disk, or a folder we cannot write. */
function fileError(url: string, dest: string, e: NodeJS.ErrnoException): UserError {
  if (e.code === "ENOSPC" || e.code === "EDQUOT") {
    return new UserError(`no space left to download ${url} into ${dest}`, {
      exitCode: ExitCode.Failure,
      fix: "free some disk space and run this again",
      cause: e,
    });
  }
  return new UserError(`cannot write ${dest} (${e.code ?? messageOf(e)}) to download ${url}`, {
    exitCode: ExitCode.Failure,
    fix: "make the folder writable by you and run this again",
    cause: e,
  });
}
