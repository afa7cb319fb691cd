// Readiness of the node, seen from the host as a user would see it: the API server's /readyz through
// the published port, then the node `Ready` through the API, both with the admin client certificate
// from the rendered kubeconfig (mutual TLS, the server checked against the cluster CA). Bounded by a
// timeout, stopped at once by the AbortSignal, and cut short when a unit has failed.
import { InterruptedError, UserError, ExitCode } from "../errors";
import { sleep } from "../wait";
import { type ApiClient, gitVersionOf, type NodeView, parseNode } from "../clients/kubernetes";

/** /readyz; the node's Ready condition; the default namespace's ServiceAccount (pods can be created). */
export type ReadyPhase = "api" | "node" | "account";

/** What a readiness phase waits for, in the words a progress line shows. */
export function phaseWords(phase: ReadyPhase, nodeName: string): string {
  return phase === "api" ? "API server /readyz" : phase === "node" ? `node ${nodeName} Ready` : "default ServiceAccount";
}

export interface WaitOptions {
  client: ApiClient;
  nodeName: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Called between polls; throws to stop waiting (e.g. a unit entered `failed`). */
  probe?: () => Promise<void>;
  /** At most this often (default 1000 ms: a probe runs a systemctl per unit). */
  probeEveryMs?: number;
  onPhase?: (phase: ReadyPhase, elapsedMs: number) => void;
  /** Fixed poll interval; default: every 100 ms for the first 10 s (a node often comes up in seconds), then 500 ms. */
  pollMs?: number;
  /**
   * After an upgrade: the Kubernetes version ("1.37.0") the API server (/version) and the kubelet
   * (the node's nodeInfo) must report, so a stale Ready from the old kubelet does not count.
   */
  expectVersion?: string;
  /**
   * When the kubelet was (re)started (epoch ms): a Ready condition posted before it is the old
   * kubelet's, left in the API while nothing updated it (a stop, a restart, a rollback to the same
   * version), so it counts only once its lastHeartbeatTime is this second or later. A restarted
   * kubelet always posts its status first thing (its last report time starts at zero).
   */
  freshSince?: number;
  /**
   * A worker: the API server is another host's (its version is not this node's, and expectVersion
   * is the kubelet's only), and the node's own credential reads no ServiceAccount: Ready ends at the node.
   */
  worker?: boolean;
  /**
   * "registered": done once the node is registered with its pod range (spec.podCIDR), Ready or not:
   * its CNI network is written only then (the apply engine's first pass). Default "ready".
   */
  until?: "ready" | "registered";
  /** Ready counts only once the node has its pod range too (a first node whose range install took ahead: it is checked). */
  needsRange?: boolean;
  /** The API server's readiness path (default /readyz; a bootstrapped node's: cli/readiness/bootstrap.ts). */
  readyz?: string;
}

export interface ReadyResult {
  node: NodeView;
  /** Milliseconds until /readyz answered ok, and until the node was Ready. */
  apiMs: number;
  nodeMs: number;
}

const DEFAULT_ACCOUNT = "/api/v1/namespaces/default/serviceaccounts/default";

/** Thrown when readiness is not reached in time; `phase` names what was still missing. */
export class NotReadyError extends UserError {
  constructor(
    readonly phase: ReadyPhase,
    readonly lastSeen: string,
    timeoutMs: number,
  ) {
    const within = `within ${Math.round(timeoutMs / 1000)} s (last: ${lastSeen})`;
    super(
      phase === "api"
        ? `the API server did not answer /readyz ${within}`
        : phase === "node"
          ? `the node did not become Ready ${within}`
          : `the node is Ready, but the default namespace got no ServiceAccount ${within}, so no pod can be created there yet`,
      {
        exitCode: ExitCode.Failure,
        fix:
          phase === "account"
            ? "the controller-manager creates it: see `rootless-k8s logs kube-controller-manager`; a slow host may need a longer --timeout"
            : "see `rootless-k8s status` and `rootless-k8s logs`; a slow host may need a longer --timeout",
      },
    );
    this.name = "NotReadyError";
  }
}

/** The Ready condition was posted before `since` (whole seconds, as the kubelet writes it); no heartbeat counts as before. */
export function readyPostedBefore(node: NodeView, since: number | undefined): boolean {
  if (since === undefined) return false;
  const at = Date.parse(node.conditions.find((c) => c.type === "Ready")?.lastHeartbeatTime ?? "");
  return !(at >= Math.floor(since / 1000) * 1000);
}

/** Null when the API server reports `want`; otherwise what it reports instead. */
async function apiVersionMismatch(client: ApiClient, want: string): Promise<string | null> {
  const v = await client.get("/version", 5000);
  const git = v.status === 200 ? gitVersionOf(v.body) : "";
  return git === want ? null : `the API server reports ${git ? `v${git}` : `HTTP ${v.status}`}, not v${want}`;
}

function describe(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  return err.code ? `${err.code}` : (String(err.message ?? e).split("\n")[0] ?? "error");
}

/**
 * Waits for /readyz = ok, then for the node's Ready condition = True, then for the default
 * namespace's ServiceAccount: until the controller-manager has made it, the API server refuses
 * every pod there ("serviceaccount \"default\" not found"), which can be seconds after the node is Ready.
 */
export async function waitForReady(o: WaitOptions): Promise<ReadyResult> {
  const start = Date.now();
  const deadline = start + o.timeoutMs;
  const poll = () => o.pollMs ?? (Date.now() - start < 10_000 ? 100 : 500);
  let phase: ReadyPhase = "api";
  let last = "no answer yet";
  let apiMs = 0;
  let ready: { node: NodeView; nodeMs: number } | null = null;
  let probed = 0;
  o.onPhase?.("api", 0);
  for (;;) {
    if (o.signal?.aborted) throw new InterruptedError();
    if (o.probe && Date.now() - probed >= (o.probeEveryMs ?? 1000)) {
      probed = Date.now();
      await o.probe();
    }
    try {
      if (phase === "api") {
        const r = await o.client.get(o.readyz ?? "/readyz", 5000);
        last = `HTTP ${r.status} ${r.body.trim().split("\n").pop() ?? ""}`.trim();
        const mismatch = r.status === 200 && o.expectVersion && !o.worker ? await apiVersionMismatch(o.client, o.expectVersion) : null;
        if (mismatch) last = mismatch;
        if (r.status === 200 && !mismatch) {
          phase = "node";
          apiMs = Date.now() - start;
          o.onPhase?.("node", apiMs);
          last = "node not registered yet";
          continue;
        }
      } else if (phase === "account" && ready) {
        const r = await o.client.get(DEFAULT_ACCOUNT, 5000);
        if (r.status === 200) return { node: ready.node, apiMs, nodeMs: ready.nodeMs };
        last = r.status === 404 ? "no ServiceAccount default/default yet" : `HTTP ${r.status}`;
      } else {
        const r = await o.client.get(`/api/v1/nodes/${encodeURIComponent(o.nodeName)}`, 5000);
        if (r.status === 200 && o.until === "registered") {
          const node = parseNode(r.body);
          if (node.podCidr) return { node, apiMs, nodeMs: Date.now() - start };
          last = "registered, no spec.podCIDR yet (the controller-manager gives it)";
        } else if (r.status === 200) {
          const node = parseNode(r.body);
          const versionOk = !o.expectVersion || node.kubeletVersion?.replace(/^v/, "") === o.expectVersion;
          const stale = node.ready && readyPostedBefore(node, o.freshSince);
          const rangeMissing = o.needsRange === true && !node.podCidr;
          if (node.ready && versionOk && !stale && !rangeMissing && o.worker) return { node, apiMs, nodeMs: Date.now() - start };
          if (node.ready && versionOk && !stale && !rangeMissing) {
            ready = { node, nodeMs: Date.now() - start };
            phase = "account";
            o.onPhase?.("account", ready.nodeMs);
            last = "no ServiceAccount default/default yet";
            continue;
          }
          const rc = node.conditions.find((c) => c.type === "Ready");
          last = stale
            ? `Ready=True as posted at ${rc?.lastHeartbeatTime ?? "an unknown time"}, before the kubelet started again`
            : node.ready && versionOk && rangeMissing
              ? "Ready, no spec.podCIDR yet (the controller-manager gives it)"
              : node.ready
                ? `the kubelet still reports ${node.kubeletVersion ?? "no version"}, not v${o.expectVersion}`
                : rc
                  ? `Ready=${rc.status}${rc.reason ? ` (${rc.reason})` : ""}`
                  : "no Ready condition yet";
        } else {
          last = r.status === 404 ? `node ${o.nodeName} not registered yet` : `HTTP ${r.status}`;
        }
      }
    } catch (e) {
      if (e instanceof UserError) throw e;
      last = describe(e);
    }
    if (Date.now() >= deadline) throw new NotReadyError(phase, last, o.timeoutMs);
    await sleep(Math.min(poll(), Math.max(0, deadline - Date.now())), o.signal);
  }
}
