// A client of RootlessKit's REST API on its unix socket (<state-dir>/api.sock), the API that
// `rootlessctl list-ports/add-ports/remove-ports` use: GET /v1/info, GET /v1/ports, POST /v1/ports
// (a PortSpec; 201 with {id, spec}), DELETE /v1/ports/{id}. RootlessKit answers a refused request
// with a non-2xx status and {"message": "..."} (pkg/httputil), which becomes one line here naming
// what failed. applyPortChanges makes the calls reconcilePorts (cli/plan/ports.ts) decided.
import * as http from "node:http";
import type { PortChanges, PortSpec, PortStatus } from "../plan/ports";

/** GET /v1/info (API 1.1.0 and later). */
export interface RootlessKitInfo {
  /** The REST API's version, "1.1.1" in RootlessKit 1.x to 3.x. */
  apiVersion: string;
  /** RootlessKit's own version. */
  version: string;
  stateDir: string;
  childPID: number;
  networkDriver?: { driver: string; dns?: string[]; childIP?: string; dynamicChildIP?: boolean };
  portDriver?: { driver: string; protos: string[]; disallowLoopbackChildIP?: boolean };
}

/** A failed call: `status` is RootlessKit's refusing HTTP status; null when it did not answer, or answered unreadably. */
export class RootlessKitError extends Error {
  readonly status: number | null;
  /** RootlessKit's own message (or what went wrong on the way). */
  readonly reason: string;
  constructor(what: string, reason: string, status: number | null) {
    super(`RootlessKit API: ${what} failed: ${reason}`);
    this.name = "RootlessKitError";
    this.status = status;
    this.reason = reason;
  }
}

export interface RootlessKitClient {
  readonly socketPath: string;
  info(): Promise<RootlessKitInfo>;
  /** The published ports, by id. */
  listPorts(): Promise<PortStatus[]>;
  addPort(spec: PortSpec): Promise<PortStatus>;
  removePort(id: number): Promise<void>;
}

/** "tcp 127.0.0.1:8080 → 10.0.2.100:30080", or "… → 30080" to the driver's default child address. */
export function describePortSpec(s: PortSpec): string {
  return `${s.proto} ${s.parentIP || "0.0.0.0"}:${s.parentPort} → ${s.childIP ? `${s.childIP}:` : ""}${s.childPort}`;
}

/** The single line of a non-2xx answer: RootlessKit's {message}, else the status and the body's start. */
function reasonOf(status: number, body: string): string {
  try {
    const { message } = JSON.parse(body) as { message?: unknown };
    if (typeof message === "string" && message) return message.replace(/\s+/g, " ").trim();
  } catch {}
  return `HTTP ${status} ${body.replace(/\s+/g, " ").trim().slice(0, 200)}`.trim();
}

/**
 * A client of the API at `socketPath`. Every call has its own timeout (default 10 s: a removal
 * waits up to 5 s inside RootlessKit for the forwarder to stop).
 */
export function rootlessKitClient(socketPath: string, opts: { timeoutMs?: number } = {}): RootlessKitClient {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const call = (what: string, method: string, path: string, body?: unknown) =>
    new Promise<string>((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string | number> = { host: "rootlesskit", accept: "application/json" };
      if (data !== undefined) Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(data) });
      const req = http.request({ socketPath, method, path, headers, timeout: timeoutMs }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("error", (e) => reject(new RootlessKitError(what, e.message, null)));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(text);
          else reject(new RootlessKitError(what, reasonOf(status, text), status));
        });
      });
      req.on("timeout", () => req.destroy(new Error(`no answer on ${socketPath} within ${timeoutMs} ms`)));
      // Node's own line names the socket: "connect ENOENT /run/user/1000/rk/api.sock".
      req.on("error", (e) => reject(new RootlessKitError(what, e.message, null)));
      req.end(data);
    });
  const json = async <T>(what: string, method: string, path: string, body?: unknown): Promise<T> => {
    const text = await call(what, method, path, body);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new RootlessKitError(what, `the answer is not JSON: ${text.slice(0, 200)}`, null);
    }
  };
  return {
    socketPath,
    info: () => json<RootlessKitInfo>("GET /v1/info", "GET", "/v1/info"),
    // RootlessKit lists its ports from a map, in no order, and an empty list as null.
    listPorts: async () => ((await json<PortStatus[] | null>("GET /v1/ports", "GET", "/v1/ports")) ?? []).sort((a, b) => a.id - b.id),
    addPort: (spec) => json<PortStatus>(`adding port ${describePortSpec(spec)}`, "POST", "/v1/ports", spec),
    removePort: async (id) => {
      await call(`removing port id ${id}`, "DELETE", `/v1/ports/${id}`);
    },
  };
}

/** One change and how it went: `error` is RootlessKit's message, null on success. */
export type PortChangeResult =
  | { action: "remove"; id: number; error: string | null }
  | { action: "add"; spec: PortSpec; id: number | null; error: string | null };

/**
 * Makes the changes one at a time, removals first (so a port that changed is free again), then
 * additions. A change RootlessKit refuses (a host port already taken, a conflict, a privileged port)
 * is reported in its result and the others still run; a RootlessKit that does not answer throws.
 */
export async function applyPortChanges(client: RootlessKitClient, changes: PortChanges): Promise<PortChangeResult[]> {
  const refused = (e: unknown): string => {
    if (e instanceof RootlessKitError && e.status !== null) return e.reason;
    throw e;
  };
  const results: PortChangeResult[] = [];
  for (const id of changes.remove) {
    try {
      await client.removePort(id);
      results.push({ action: "remove", id, error: null });
    } catch (e) {
      results.push({ action: "remove", id, error: refused(e) });
    }
  }
  for (const spec of changes.add) {
    try {
      results.push({ action: "add", spec, id: (await client.addPort(spec)).id, error: null });
    } catch (e) {
      results.push({ action: "add", spec, id: null, error: refused(e) });
    }
  }
  return results;
}
