// Whether the kubelet's eviction manager observes the node (issue 43), from the kubelet's own
// summary API, not from a guess. Each cycle the manager reads the summary: memory, the node's file
// system and, to learn whether images have a file system of their own, the image file system. When
// cAdvisor cannot find the data folder's file system ("cannot find filesystem info for device"),
// the summary has no node.fs and no imageFs, the manager gives up its cycle before it observes
// anything (kubernetes/kubernetes#141119), and the pressure conditions mean nothing.
import type { ApiClient } from "../clients/kubernetes";

export interface EvictionStatus {
  /**
   * true: the summary has memory, the node's file system and the image file system, all the
   * manager needs; false: it lacks one (named in detail); null: not read (a worker's credential
   * may not read its kubelet's summary, or the kubelet did not answer).
   */
  observing: boolean | null;
  detail: string;
}

interface Summary {
  node?: {
    memory?: { availableBytes?: number };
    fs?: { availableBytes?: number; capacityBytes?: number };
    runtime?: { imageFs?: { availableBytes?: number; capacityBytes?: number } };
  };
}

const MiB = 2 ** 20;
const share = (fs: { availableBytes?: number; capacityBytes?: number }) =>
  fs.capacityBytes ? `${Math.round((100 * (fs.availableBytes ?? 0)) / fs.capacityBytes)}% available` : "available";

/** What the manager can observe, from the kubelet's /stats/summary. */
export function summaryObservation(body: string): EvictionStatus {
  let s: Summary;
  try {
    s = JSON.parse(body) as Summary;
  } catch {
    return { observing: false, detail: "the kubelet's summary is not JSON" };
  }
  const n = s.node ?? {};
  const missing = [
    n.memory?.availableBytes === undefined ? "memory" : null,
    n.fs?.availableBytes === undefined ? "the node's file system" : null,
    n.runtime?.imageFs?.availableBytes === undefined ? "the image file system" : null,
  ].filter((x): x is string => x !== null);
  if (missing.length)
    return {
      observing: false,
      detail: `the kubelet's summary lacks ${missing.join(" and ")}: the eviction manager observes nothing, so the pressure conditions are unknown`,
    };
  return {
    observing: true,
    detail: `memory ${Math.round((n.memory?.availableBytes ?? 0) / MiB)} MiB available, disk ${share(n.fs ?? {})}, images ${share(n.runtime?.imageFs ?? {})}`,
  };
}

/** The summary through the API server's proxy to the node's kubelet (the admin may read it). */
export async function evictionStatus(client: ApiClient, nodeName: string): Promise<EvictionStatus> {
  try {
    const r = await client.get(`/api/v1/nodes/${encodeURIComponent(nodeName)}/proxy/stats/summary`, 5000);
    if (r.status !== 200) return { observing: null, detail: `the kubelet's summary: HTTP ${r.status}` };
    return summaryObservation(r.body);
  } catch (e) {
    return { observing: null, detail: `the kubelet's summary: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` };
  }
}
