// HTTP for downloads, on undici: one dispatcher that honours HTTPS_PROXY / HTTP_PROXY / NO_PROXY
// (EnvHttpProxyAgent) and a custom CA (--ca-file, on top of the system roots and NODE_EXTRA_CA_CERTS),
// timeouts for connect, headers and body inactivity, redirects followed by hand so that an
// https → http downgrade is refused, and the classification of failures into user errors.
import * as tls from "node:tls";
import type { Dispatcher } from "undici";
import { ExitCode, UserError, messageOf } from "../errors";
import { FileTooLargeError, readSmallFileSync } from "../small-file";
import { sleep } from "../wait";

export interface HttpOptions {
  /** PEM file of extra trusted CAs (--ca-file); added to the system roots and NODE_EXTRA_CA_CERTS. */
  caFile?: string;
  /** Where HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  /** Longest wait for the next bytes of a body before the attempt fails (and is retried/resumed). */
  bodyTimeoutMs?: number;
  /** Retries after the first attempt, for network errors and 5xx. */
  retries?: number;
  /** First backoff; each retry doubles it (jittered), up to retryMaxMs. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  maxRedirects?: number;
  /**
   * The deadline of one file: it must arrive within `deadlineGraceMs` plus its size at
   * `minRateBytesPerSec`, checked all along (a server trickling bytes is cut off soon after the
   * grace, whatever size it announces). Defaults from ROOTLESS_K8S_DOWNLOAD_GRACE (seconds) and
   * ROOTLESS_K8S_DOWNLOAD_MIN_RATE (bytes per second, K or M suffix), else DOWNLOAD_DEADLINE_DEFAULTS.
   */
  deadlineGraceMs?: number;
  minRateBytesPerSec?: number;
}

export const HTTP_DEFAULTS = {
  connectTimeoutMs: 15_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  retries: 4,
  retryBaseMs: 500,
  retryMaxMs: 8_000,
  maxRedirects: 10,
} as const;

export const GRACE_ENV = "ROOTLESS_K8S_DOWNLOAD_GRACE";
export const MIN_RATE_ENV = "ROOTLESS_K8S_DOWNLOAD_MIN_RATE";
export const DOWNLOAD_DEADLINE_DEFAULTS = { deadlineGraceMs: 60_000, minRateBytesPerSec: 32 * 1024 } as const;

export type HttpSettings = Omit<Required<HttpOptions>, "caFile" | "env">;

export interface HttpClient {
  readonly settings: HttpSettings;
  /** GET with redirects followed; the response is not a 3xx. */
  get(url: string, headers: Record<string, string>, signal?: AbortSignal): Promise<Response>;
  close(): Promise<void>;
}

export interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData["body"];
  /** The URL that answered, after redirects. */
  url: string;
}

export async function createHttpClient(opts: HttpOptions = {}): Promise<HttpClient> {
  const { EnvHttpProxyAgent, request } = await import("undici");
  const settings: HttpSettings = {
    connectTimeoutMs: opts.connectTimeoutMs ?? HTTP_DEFAULTS.connectTimeoutMs,
    headersTimeoutMs: opts.headersTimeoutMs ?? HTTP_DEFAULTS.headersTimeoutMs,
    bodyTimeoutMs: opts.bodyTimeoutMs ?? HTTP_DEFAULTS.bodyTimeoutMs,
    retries: opts.retries ?? HTTP_DEFAULTS.retries,
    retryBaseMs: opts.retryBaseMs ?? HTTP_DEFAULTS.retryBaseMs,
    retryMaxMs: opts.retryMaxMs ?? HTTP_DEFAULTS.retryMaxMs,
    maxRedirects: opts.maxRedirects ?? HTTP_DEFAULTS.maxRedirects,
    ...deadlineSettings(opts, opts.env ?? process.env),
  };
  const env = opts.env ?? process.env;
  const ca = opts.caFile ? trustedCas(opts.caFile) : undefined;
  const tlsOpts = ca ? { ca } : {};
  const dispatcher = new EnvHttpProxyAgent({
    httpProxy: env.http_proxy ?? env.HTTP_PROXY ?? "",
    httpsProxy: env.https_proxy ?? env.HTTPS_PROXY ?? "",
    noProxy: env.no_proxy ?? env.NO_PROXY ?? "",
    connect: { timeout: settings.connectTimeoutMs, ...tlsOpts },
    requestTls: { timeout: settings.connectTimeoutMs, ...tlsOpts },
    proxyTls: { timeout: settings.connectTimeoutMs, ...tlsOpts },
    headersTimeout: settings.headersTimeoutMs,
    bodyTimeout: settings.bodyTimeoutMs,
  });

  async function get(url: string, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
    let current = url;
    for (let hop = 0; hop <= settings.maxRedirects; hop++) {
      const res = await request(current, {
        dispatcher,
        method: "GET",
        headers: { "user-agent": "rootless-k8s", ...headers },
        signal,
        headersTimeout: settings.headersTimeoutMs,
        bodyTimeout: settings.bodyTimeoutMs,
      });
      const location = res.headers.location;
      if (res.statusCode >= 300 && res.statusCode < 400 && res.statusCode !== 304 && typeof location === "string") {
        await res.body.dump().catch(() => undefined);
        const next = new URL(location, current);
        if (next.protocol !== "https:" && next.protocol !== "http:") throw new RedirectSchemeError(current, next);
        if (new URL(current).protocol === "https:" && next.protocol !== "https:") throw new DowngradeError(current, next.href);
        current = next.href;
        continue;
      }
      return { status: res.statusCode, headers: res.headers, body: res.body, url: current };
    }
    throw new UserError(`too many redirects (more than ${settings.maxRedirects}) from ${url}`, {
      exitCode: ExitCode.Network,
      fix: "check the URL or --mirror; the server redirects in a loop",
    });
  }

  return { settings, get, close: () => dispatcher.close() };
}

const CA_FILE_MAX_BYTES = 16 << 20;

/** The per-file deadline: from `opts`, else the environment, else the defaults. Bad values: exit 2. */
export function deadlineSettings(
  opts: Pick<HttpOptions, "deadlineGraceMs" | "minRateBytesPerSec">,
  env: NodeJS.ProcessEnv,
): Pick<HttpSettings, "deadlineGraceMs" | "minRateBytesPerSec"> {
  const fromEnv = (name: string, parse: (v: string) => number | null, what: string): number | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === "") return undefined;
    const n = parse(raw.trim());
    if (n === null || !Number.isFinite(n) || n <= 0) {
      throw new UserError(`${name}=${raw} is not ${what}`, {
        exitCode: ExitCode.Usage,
        fix: `set ${name} to ${what}, or unset it for the default`,
      });
    }
    return n;
  };
  const seconds = (v: string) => (/^\d+(\.\d+)?$/.test(v) ? Math.round(Number(v) * 1000) : null);
  const rate = (v: string) => {
    const m = /^(\d+)([KkMm]?)$/.exec(v);
    return m ? Number(m[1]) * (m[2] === "" ? 1 : /k/i.test(m[2] as string) ? 1024 : 1 << 20) : null;
  };
  return {
    deadlineGraceMs:
      opts.deadlineGraceMs ?? fromEnv(GRACE_ENV, seconds, "a number of seconds, e.g. 60") ?? DOWNLOAD_DEADLINE_DEFAULTS.deadlineGraceMs,
    minRateBytesPerSec:
      opts.minRateBytesPerSec ??
      fromEnv(MIN_RATE_ENV, rate, "bytes per second, e.g. 32K or 1M") ??
      DOWNLOAD_DEADLINE_DEFAULTS.minRateBytesPerSec,
  };
}

/** The system roots (with NODE_EXTRA_CA_CERTS) plus every certificate in `file`. */
function trustedCas(file: string): string[] {
  let pem: string;
  try {
    pem = readSmallFileSync(file, CA_FILE_MAX_BYTES);
  } catch (e) {
    if (e instanceof FileTooLargeError) {
      throw new UserError(`--ca-file ${file} is larger than ${CA_FILE_MAX_BYTES >> 20} MiB, so it is not a CA bundle`, {
        exitCode: ExitCode.Usage,
        fix: "pass a PEM file with the CA certificate(s) to trust",
      });
    }
    throw new UserError(`--ca-file ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? messageOf(e)})`, {
      exitCode: ExitCode.Usage,
      fix: "pass a readable PEM file with the CA certificate(s) to trust",
    });
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
    throw new UserError(`--ca-file ${file} holds no PEM certificate`, {
      exitCode: ExitCode.Usage,
      fix: 'pass a PEM file ("-----BEGIN CERTIFICATE-----" blocks)',
    });
  }
  return [...tls.getCACertificates("default"), pem];
}

/** A redirect from https to http: refused, since it would drop transport security mid-way. */
export class DowngradeError extends UserError {
  constructor(from: string, to: string) {
    super(`refused a redirect from https to http: ${from} → ${to}`, {
      exitCode: ExitCode.Verification,
      fix: "use an https mirror, or fix the server's redirect (rootless-k8s never follows https → http)",
    });
  }
}

/** A redirect to anything but http(s) (file:, data:, ...): refused at once, never retried. */
export class RedirectSchemeError extends UserError {
  constructor(from: string, to: URL) {
    super(`refused a redirect to a ${to.protocol} URL from ${from}`, {
      exitCode: ExitCode.Verification,
      fix: "fix the server's or mirror's redirect: rootless-k8s follows redirects to https (or http from http) only",
    });
  }
}

/** An HTTP status that ends the attempt. */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly url: string,
  ) {
    super(`HTTP ${status} from ${url}`);
  }
  get retryable(): boolean {
    return this.status >= 500 || this.status === 408 || this.status === 429;
  }
}

/** Error codes of a TLS handshake that failed verification: retrying cannot help. */
export const TLS_ERROR_CODES = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS|ERR_SSL/;

/** Whether another attempt could succeed: network errors, timeouts and 5xx, not 404, TLS or disk. */
export function isRetryable(e: unknown): boolean {
  if (e instanceof HttpStatusError) return e.retryable;
  if (e instanceof UserError) return false;
  const code = errorCode(e);
  if (code && TLS_ERROR_CODES.test(code)) return false;
  return true;
}

export function errorCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string") return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Runs `attempt` (given its number, from 1) until it succeeds. An error another attempt could fix
 * (isRetryable) is retried up to `retries` times, each after a jittered exponential backoff; any
 * other error, the last one, and any error once the signal has aborted, is thrown as it is. An
 * abort during a wait throws InterruptedError.
 */
export async function withRetries<T>(
  s: Pick<HttpSettings, "retries" | "retryBaseMs" | "retryMaxMs">,
  attempt: (n: number) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (e) {
      if (signal?.aborted || !isRetryable(e) || n > s.retries) throw e;
      await sleep(backoffMs(n, s), signal);
    }
  }
}

/**
 * The one-line error of a download that failed after `attempts` tries: a user error stays as it is,
 * an untrusted TLS certificate names --ca-file, anything else says what failed (from `from`, when
 * given) and how often it was tried, with `fix`.
 */
export function downloadFailure(e: unknown, d: { label: string; url: string; from?: string; attempts: number; fix: string }): UserError {
  if (e instanceof UserError) return e;
  const code = errorCode(e);
  if (code && TLS_ERROR_CODES.test(code)) {
    return new UserError(`could not download ${d.label}: the TLS certificate of ${new URL(d.url).host} is not trusted (${code})`, {
      exitCode: ExitCode.Network,
      cause: e,
      fix: "if a proxy or mirror uses a private CA, pass it with --ca-file FILE (or NODE_EXTRA_CA_CERTS=FILE)",
    });
  }
  const from = d.from ? ` from ${d.from}` : "";
  return new UserError(
    `could not download ${d.label}${from}: ${describeNetworkError(e)} (${d.attempts} attempt${d.attempts === 1 ? "" : "s"})`,
    {
      exitCode: ExitCode.Network,
      cause: e,
      fix: d.fix,
    },
  );
}

/** Delay before retry number `attempt` (1-based): an exponential ceiling, jittered between half and all of it. */
export function backoffMs(attempt: number, s: Pick<HttpSettings, "retryBaseMs" | "retryMaxMs">, random = Math.random): number {
  const ceiling = Math.min(s.retryMaxMs, s.retryBaseMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** One line for a network failure, naming what failed and how. */
export function describeNetworkError(e: unknown): string {
  if (e instanceof HttpStatusError) return `HTTP ${e.status}`;
  const code = errorCode(e);
  switch (code) {
    case "UND_ERR_CONNECT_TIMEOUT":
      return "connection timed out";
    case "UND_ERR_HEADERS_TIMEOUT":
      return "no response headers in time";
    case "UND_ERR_BODY_TIMEOUT":
      return "the server stopped sending data (inactivity timeout)";
    case "UND_ERR_SOCKET":
    case "ECONNRESET":
      return "the connection was closed mid-transfer";
    case "ECONNREFUSED":
      return "connection refused";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "the host name could not be resolved";
    default:
      return code ? `${messageOf(e)} (${code})` : messageOf(e);
  }
}
