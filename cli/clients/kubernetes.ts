// The Kubernetes API client: the admin (or any) kubeconfig's client certificate over mutual TLS,
// the server checked against the cluster CA; GET/POST/PATCH/DELETE and watches, bounded by timeouts
// and stopped by an AbortSignal. One concern: talking to the API server. What a caller waits for
// (readiness, a worker's join) lives with the caller.
import { promises as fsp } from "node:fs";
import * as https from "node:https";
import { createSecureContext } from "node:tls";
import { UserError } from "../errors";
import { sleep } from "../wait";

export interface KubeconfigCreds {
  server: string;
  ca: Buffer;
  /** A client certificate and key (mutual TLS), or a bearer token (a join's bootstrap token). */
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  /** The kubeconfig and the files it names (CA, certificate, key): what followingApiClient watches. */
  files?: readonly string[];
}

interface KubeconfigDoc {
  "current-context"?: string;
  contexts?: { name: string; context: { cluster: string; user: string } }[];
  clusters?: { name: string; cluster: { server: string; "certificate-authority-data"?: string; "certificate-authority"?: string } }[];
  users?: {
    name: string;
    user: { "client-certificate-data"?: string; "client-key-data"?: string; "client-certificate"?: string; "client-key"?: string };
  }[];
}

async function dataOrFile(data: string | undefined, file: string | undefined, what: string, kubeconfig: string): Promise<Buffer> {
  if (data) return Buffer.from(data, "base64");
  if (file) return fsp.readFile(file);
  throw new UserError(`${kubeconfig} has no ${what}`, { fix: "re-run `rootless-k8s install` to render it again" });
}

/** Server URL, CA and client cert/key of the kubeconfig's current context. */
export async function readKubeconfig(file: string): Promise<KubeconfigCreds> {
  const { parse } = await import("yaml");
  const doc = parse(await fsp.readFile(file, "utf8")) as KubeconfigDoc;
  const ctxName = doc["current-context"] ?? doc.contexts?.[0]?.name;
  const ctx = doc.contexts?.find((c) => c.name === ctxName)?.context;
  const cluster = doc.clusters?.find((c) => c.name === ctx?.cluster)?.cluster ?? doc.clusters?.[0]?.cluster;
  const user = doc.users?.find((u) => u.name === ctx?.user)?.user ?? doc.users?.[0]?.user;
  if (!cluster?.server || !user) throw new UserError(`${file} has no usable context`, { fix: "re-run `rootless-k8s install`" });
  const named = [
    cluster["certificate-authority-data"] ? undefined : cluster["certificate-authority"],
    user["client-certificate-data"] ? undefined : user["client-certificate"],
    user["client-key-data"] ? undefined : user["client-key"],
  ].filter((f): f is string => Boolean(f));
  return {
    server: cluster.server,
    ca: await dataOrFile(cluster["certificate-authority-data"], cluster["certificate-authority"], "cluster CA", file),
    cert: await dataOrFile(user["client-certificate-data"], user["client-certificate"], "client certificate", file),
    key: await dataOrFile(user["client-key-data"], user["client-key"], "client key", file),
    files: [file, ...new Set(named)],
  };
}

/**
 * readKubeconfig, waiting while the file (or a file it names) does not exist yet: a worker's kubelet
 * writes its kubeconfig once TLS bootstrap got it a certificate, after the units that use it start.
 */
export async function readKubeconfigWhenThere(
  file: string,
  log: (line: string) => void,
  signal: AbortSignal,
  retryMs = 2000,
): Promise<KubeconfigCreds> {
  let told = false;
  for (;;) {
    try {
      return await readKubeconfig(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      if (!told) log(`waiting for ${file} (the kubelet writes it once it has its certificate)`);
      told = true;
      await sleep(retryMs, signal);
    }
  }
}

/** What identifies the content of these files: each one's inode, size and modification time (through symlinks). */
async function filesStamp(files: readonly string[]): Promise<string> {
  const parts = await Promise.all(
    files.map(async (f) => {
      const s = await fsp.stat(f);
      return `${f}:${s.ino}:${s.size}:${s.mtimeMs}`;
    }),
  );
  return parts.join("|");
}

/**
 * An ApiClient that follows its kubeconfig, for the agents that run as long as the node (ports,
 * overlay): when the kubeconfig or a file it names changes (the kubelet rotating its client
 * certificate into a new kubelet-client-current.pem), the next request reads the credential again.
 * A credential that cannot be read whole yet (a file half written) leaves the one in use until the
 * next request. Waits for the kubeconfig first, as readKubeconfigWhenThere.
 */
export async function followingApiClient(file: string, log: (line: string) => void, signal: AbortSignal): Promise<ApiClient> {
  // The files a credential is read from: those its kubeconfig names, else the kubeconfig itself.
  const filesOf = (c: { files?: readonly string[] }): readonly string[] => c.files ?? [file];
  let creds = await readKubeconfigWhenThere(file, log, signal);
  let seen = await filesStamp(filesOf(creds)).catch(() => "");
  let client = apiClient(creds);
  const current = async (): Promise<ApiClient> => {
    const now = await filesStamp(filesOf(creds)).catch(() => seen);
    if (now === seen) return client;
    try {
      const next = await readKubeconfig(file);
      // The stamp taken before reading, when the files are the same ones: a change while reading
      // (the certificate swapped in between) shows on the next request and is read then.
      const same = filesOf(next).join("|") === filesOf(creds).join("|");
      const stamp = same ? now : await filesStamp(filesOf(next));
      // Throws unless the CA, certificate and key parse and the key is the certificate's.
      createSecureContext({ ca: next.ca, cert: next.cert, key: next.key });
      creds = next;
      seen = stamp;
      client = apiClient(next);
      log(`${file} changed (a rotated certificate?): its new credential is used from now on`);
    } catch {
      // Not whole yet: the credential in use stays until the next request looks again.
    }
    return client;
  };
  return {
    get server() {
      return client.server;
    },
    get: async (p, timeoutMs) => (await current()).get(p, timeoutMs),
    mergePatch: async (p, patch, timeoutMs) => (await current()).mergePatch(p, patch, timeoutMs),
    apply: async (p, object, fieldManager, timeoutMs) => (await current()).apply(p, object, fieldManager, timeoutMs),
    delete: async (p, timeoutMs) => (await current()).delete(p, timeoutMs),
    put: async (p, object, timeoutMs) => (await current()).put(p, object, timeoutMs),
    post: async (p, object, timeoutMs) => (await current()).post(p, object, timeoutMs),
    watch: async (p, onEvent, opts) => (await current()).watch(p, onEvent, opts),
  };
}

export interface ApiResponse {
  status: number;
  body: string;
}

export { apiMessage } from "../host/parse/api-status";

export interface ApiClient {
  readonly server: string;
  get(path: string, timeoutMs?: number): Promise<ApiResponse>;
  /** A JSON merge patch (RFC 7386), as `kubectl patch --type merge` sends. */
  mergePatch(path: string, patch: unknown, timeoutMs?: number): Promise<ApiResponse>;
  /** Server-side apply of one whole object (`kubectl apply --server-side --force-conflicts`). */
  apply(path: string, object: unknown, fieldManager: string, timeoutMs?: number): Promise<ApiResponse>;
  delete(path: string, timeoutMs?: number): Promise<ApiResponse>;
  /** Replaces an object (PUT of its JSON), as `kubectl replace` does. */
  put(path: string, object: unknown, timeoutMs?: number): Promise<ApiResponse>;
  /** Creates an object (POST of its JSON), as `kubectl create` does. */
  post(path: string, object: unknown, timeoutMs?: number): Promise<ApiResponse>;
  /**
   * A watch (a GET with ?watch=1): calls `onEvent` for each event line as it arrives. Resolves when
   * the server ends the stream (status 200, e.g. at its timeoutSeconds) or refuses the watch (its
   * status and body); rejects when the connection fails or drops, or after `idleMs` without a byte.
   */
  watch(path: string, onEvent: (e: WatchEvent) => void, opts?: { signal?: AbortSignal; idleMs?: number }): Promise<ApiResponse>;
}

/** The Kubernetes version in a /version answer's gitVersion, without its "v" ("1.36.3"); "" when there is none. */
export function gitVersionOf(body: string): string {
  return String((JSON.parse(body) as { gitVersion?: unknown }).gitVersion ?? "").replace(/^v/, "");
}

/** One line of a watch stream: ADDED, MODIFIED, DELETED, BOOKMARK (only a resourceVersion) or ERROR (a Status). */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: { metadata?: { resourceVersion?: string }; code?: number; message?: string } & Record<string, unknown>;
}

export function apiClient(creds: KubeconfigCreds): ApiClient {
  const agent = new https.Agent({ ca: creds.ca, cert: creds.cert, key: creds.key, keepAlive: false });
  // Never on a connection whose server is not verified: the agent checks it against `ca`.
  const auth: Record<string, string> = creds.token ? { authorization: `Bearer ${creds.token}` } : {};
  const request = (method: string, p: string, timeoutMs: number, body?: { type: string; data: string }) =>
    new Promise<ApiResponse>((resolve, reject) => {
      const headers: Record<string, string | number> = { accept: "application/json", ...auth };
      if (body) Object.assign(headers, { "content-type": body.type, "content-length": Buffer.byteLength(body.data) });
      const req = https.request(new URL(p, creds.server), { method, agent, timeout: timeoutMs, headers }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on("error", reject);
      });
      req.on("timeout", () => req.destroy(new Error(`no answer from ${creds.server} within ${timeoutMs} ms`)));
      req.on("error", reject);
      req.end(body?.data);
    });
  return {
    server: creds.server,
    get: (p, timeoutMs = 5000) => request("GET", p, timeoutMs),
    mergePatch: (p, patch, timeoutMs = 5000) =>
      request("PATCH", p, timeoutMs, { type: "application/merge-patch+json", data: JSON.stringify(patch) }),
    // JSON is YAML: the apply-patch content type takes the object as JSON.
    apply: (p, object, fieldManager, timeoutMs = 10_000) =>
      request("PATCH", `${p}?fieldManager=${encodeURIComponent(fieldManager)}&force=true`, timeoutMs, {
        type: "application/apply-patch+yaml",
        data: JSON.stringify(object),
      }),
    delete: (p, timeoutMs = 10_000) => request("DELETE", p, timeoutMs),
    put: (p, object, timeoutMs = 10_000) => request("PUT", p, timeoutMs, { type: "application/json", data: JSON.stringify(object) }),
    post: (p, object, timeoutMs = 10_000) => request("POST", p, timeoutMs, { type: "application/json", data: JSON.stringify(object) }),
    watch: (p, onEvent, opts = {}) =>
      new Promise<ApiResponse>((resolve, reject) => {
        const idleMs = opts.idleMs ?? 330_000;
        const req = https.request(new URL(p, creds.server), {
          method: "GET",
          agent,
          timeout: idleMs,
          headers: { accept: "application/json", ...auth },
        });
        const abort = () => req.destroy(opts.signal?.reason instanceof Error ? opts.signal.reason : new Error("the watch was stopped"));
        if (opts.signal?.aborted) return abort();
        opts.signal?.addEventListener("abort", abort, { once: true });
        const done = () => opts.signal?.removeEventListener("abort", abort);
        req.on("timeout", () => req.destroy(new Error(`the watch of ${p} got nothing from ${creds.server} for ${idleMs} ms`)));
        req.on("error", (e) => {
          done();
          reject(e);
        });
        req.on("response", (res) => {
          const status = res.statusCode ?? 0;
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => {
            text += d;
            if (status !== 200) return;
            // One JSON object per line; a line may arrive in pieces.
            let nl = text.indexOf("\n");
            while (nl >= 0) {
              const line = text.slice(0, nl).trim();
              text = text.slice(nl + 1);
              if (line) {
                try {
                  onEvent(JSON.parse(line) as WatchEvent);
                } catch (e) {
                  req.destroy(
                    e instanceof SyntaxError
                      ? new Error(`the watch of ${p} sent a line that is not JSON: ${line.slice(0, 100)}`)
                      : (e as Error),
                  );
                  return;
                }
              }
              nl = text.indexOf("\n");
            }
          });
          let ended = false;
          res.on("error", (e) => {
            done();
            reject(e);
          });
          res.on("end", () => {
            ended = true;
            done();
            resolve({ status, body: status === 200 ? "" : text });
          });
          // A connection cut in the middle of the body is an error, not the end of the stream.
          res.on("close", () => {
            done();
            if (!ended) reject(new Error(`the watch of ${p} was cut off`));
          });
        });
        req.end();
      }),
  };
}

export interface NodeCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  /** RFC 3339, whole seconds: when the kubelet last posted this condition. */
  lastHeartbeatTime?: string;
}

export interface NodeView {
  name: string;
  ready: boolean;
  conditions: NodeCondition[];
  kubeletVersion: string | null;
  labels: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
  /** spec.podCIDR: the pod range the controller-manager gave the node (null until it did). */
  podCidr: string | null;
}

export function parseNode(body: string): NodeView {
  const n = JSON.parse(body) as {
    metadata?: { name?: string; labels?: Record<string, string> };
    spec?: { taints?: NodeView["taints"]; podCIDR?: string };
    status?: { conditions?: NodeCondition[]; nodeInfo?: { kubeletVersion?: string } };
  };
  const conditions = n.status?.conditions ?? [];
  return {
    name: n.metadata?.name ?? "",
    ready: conditions.some((c) => c.type === "Ready" && c.status === "True"),
    conditions,
    kubeletVersion: n.status?.nodeInfo?.kubeletVersion ?? null,
    labels: n.metadata?.labels ?? {},
    taints: n.spec?.taints ?? [],
    podCidr: n.spec?.podCIDR ?? null,
  };
}
