// A worker's readiness (`rootless-k8s join`), seen with the node's own credential: the kubelet's
// TLS bootstrap (its kubeconfig appears once the control plane signed its client certificate),
// then the Node registered with the pod range the controller-manager gave it, then Ready. A worker
// has no admin credential: everything here is what system:node:NAME may read. The pod range's
// NotReadyError names the controller-manager's allocation when it never comes (cli/readiness/readiness.ts).
import { promises as fsp } from "node:fs";
import { InterruptedError, UserError, ExitCode } from "../errors";
import type { Plan } from "../plan/plan";
import { layout } from "../render/layout";
import { sleep } from "../wait";
import type { OverlayStateFile } from "../plan/overlay";
import { type ApiClient, apiClient, readKubeconfig } from "../clients/kubernetes";
import { type ReadyResult, waitForReady } from "../readiness/readiness";

export interface WorkerWait {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Throws to stop waiting (a unit failed). */
  probe: () => Promise<void>;
  onPhase?: (what: string) => void;
  /** When the kubelet was (re)started: an older Ready is the old kubelet's (see WaitOptions). */
  freshSince?: number;
}

/** The node's own client, once TLS bootstrap wrote the kubelet's kubeconfig. */
async function nodeClient(plan: Plan, w: WorkerWait, deadline: number): Promise<ApiClient> {
  const file = layout(plan).kubeconfigs.kubelet;
  w.onPhase?.("the kubelet's certificate (TLS bootstrap)");
  for (;;) {
    if (w.signal?.aborted) throw new InterruptedError();
    await w.probe();
    const creds = await readKubeconfig(file).catch(() => null);
    if (creds) return apiClient(creds);
    if (Date.now() >= deadline)
      throw new UserError(`the kubelet got no client certificate from ${plan.join?.server} within ${Math.round(w.timeoutMs / 1000)} s`, {
        exitCode: ExitCode.Failure,
        fix: "see `rootless-k8s logs kubelet` (a token that expired meanwhile: create a new one on the control plane and join again)",
      });
    await sleep(500, w.signal);
  }
}

/** Until the node is Ready with this set's kubelet ("registered": until it has its pod range, Ready or not). */
export async function waitForWorkerReady(plan: Plan, w: WorkerWait, until: "ready" | "registered" = "ready"): Promise<ReadyResult> {
  const deadline = Date.now() + w.timeoutMs;
  const client = await nodeClient(plan, w, deadline);
  w.onPhase?.(until === "registered" ? `node ${plan.node.name} registered with its pod range` : `node ${plan.node.name} Ready`);
  return waitForReady({
    client,
    nodeName: plan.node.name,
    timeoutMs: Math.max(1000, deadline - Date.now()),
    signal: w.signal,
    probe: w.probe,
    expectVersion: plan.versions.components.kubernetes,
    freshSince: w.freshSince,
    worker: true,
    until,
  });
}

/** The node's own client for a worker already joined (status, uninstall, upgrade); null before TLS bootstrap. */
export async function workerClient(plan: Plan): Promise<ApiClient | null> {
  const creds = await readKubeconfig(layout(plan).kubeconfigs.kubelet).catch(() => null);
  return creds ? apiClient(creds) : null;
}

/** Removes the join token's kubeconfig: once the kubelet has its certificate, the token is no longer needed on disk. */
export async function dropBootstrapKubeconfig(plan: Plan): Promise<void> {
  await fsp.rm(layout(plan).kubeconfigs.kubeletBootstrap, { force: true });
}

/**
 * Until the overlay agent (rootless-k8s-overlay.service) found every other node answering through
 * the overlay (its state file: a TCP connection to each peer's VTEP, whose SYN and answer both cross
 * it); the peers that do not answer by `timeoutMs` are an error naming the UDP port to open.
 */
/** The overlay agent's state file, or null when it wrote none (yet) or it cannot be read. */
export async function readOverlayState(plan: Plan): Promise<OverlayStateFile | null> {
  return fsp
    .readFile(layout(plan).run.overlayState, "utf8")
    .then((t) => JSON.parse(t) as OverlayStateFile)
    .catch(() => null);
}

export async function waitForOverlay(plan: Plan, timeoutMs: number, signal?: AbortSignal): Promise<OverlayStateFile> {
  const o = plan.overlay;
  const deadline = Date.now() + timeoutMs;
  let last: OverlayStateFile | null = null;
  for (;;) {
    if (signal?.aborted) throw new InterruptedError();
    last = (await readOverlayState(plan)) ?? last;
    if (last && last.peers.length > 0 && last.peers.every((p) => p.reachable)) return last;
    if (Date.now() >= deadline) {
      const silent = last?.peers.filter((p) => !p.reachable) ?? [];
      const what = !last
        ? `${plan.units.overlay ?? "the overlay unit"} wrote no state`
        : last.peers.length === 0
          ? `no other node is reachable yet (${last.waiting.join("; ") || "none listed"})`
          : silent.map((p) => `${p.node} (host ${p.publicIP}): ${p.error}`).join("; ");
      throw new UserError(
        `node ${plan.node.name} is Ready, but its pods do not reach the other nodes' pods within ${Math.round(timeoutMs / 1000)} s: ${what}`,
        {
          exitCode: ExitCode.Failure,
          fix: `open UDP ${o?.port ?? 8472} both ways between this host and ${silent.map((p) => p.publicIP).join(", ") || "the other nodes' hosts"} (a firewall), then \`rootless-k8s logs overlay\`; the node stays joined`,
        },
      );
    }
    await sleep(1000, signal);
  }
}
