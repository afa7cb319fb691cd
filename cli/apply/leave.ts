// A worker leaving its cluster (`rootless-k8s uninstall` of a joined node), with the node's own
// credential, as `kubectl drain` and `kubectl delete node` would: cordon the Node, evict its pods
// (not mirror pods, not DaemonSet pods: those belong to the node), wait for them to go, delete the
// Node. The control plane allows nodes to delete Nodes (cli/render/join.ts), and its NodeRestriction
// admission keeps each to its own. Never stops an uninstall: what could not be done is returned as
// notes; a drain that cannot finish (a refused eviction, pods slow to go) still ends with the Node deleted.
import { messageOf } from "../errors";
import { apiMessage } from "../host/parse/api-status";
import type { Plan } from "../plan/plan";
import { sleep } from "../wait";
import type { ApiClient } from "../clients/kubernetes";
import { workerClient } from "./worker-ready";

interface PodItem {
  metadata: { name: string; namespace: string; annotations?: Record<string, string>; ownerReferences?: { kind: string }[] };
  status?: { phase?: string };
}

export interface LeaveOutcome {
  /** One line each: what was done in the cluster. */
  done: string[];
  /** What could not be done, with the command that does it on the control plane. */
  notes: string[];
}

/** The pods a drain evicts: not the node's own (mirror pods, DaemonSet pods), not finished ones. */
export function podsToEvict(items: readonly PodItem[]): PodItem[] {
  return items.filter(
    (p) =>
      !p.metadata.annotations?.["kubernetes.io/config.mirror"] &&
      !p.metadata.ownerReferences?.some((o) => o.kind === "DaemonSet") &&
      p.status?.phase !== "Succeeded" &&
      p.status?.phase !== "Failed",
  );
}

async function podsOn(client: ApiClient, node: string): Promise<PodItem[]> {
  const r = await client.get(`/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`, 10_000);
  if (r.status !== 200) throw new Error(`listing the node's pods: HTTP ${r.status}: ${apiMessage(r.body)}`);
  return (JSON.parse(r.body) as { items?: PodItem[] }).items ?? [];
}

export async function leaveCluster(
  plan: Plan,
  opts: {
    signal?: AbortSignal;
    drainTimeoutMs?: number;
    /**
     * Run once drained, before the Node is deleted: the uninstall stops the kubelet there, which
     * would otherwise register its Node anew between the delete and its stop (the e2e's netpol
     * scenario left a NotReady Node so, and the next status on the control plane named it).
     */
    beforeDelete?: () => Promise<void>;
  } = {},
): Promise<LeaveOutcome> {
  const name = plan.node.name;
  const server = plan.join?.server ?? "the control plane";
  const byHand = `on the control plane: kubectl drain ${name} --ignore-daemonsets --delete-emptydir-data && kubectl delete node ${name}`;
  const client = await workerClient(plan);
  if (!client)
    return {
      done: [],
      notes: [`node ${name} never got its certificate from ${server}: nothing to remove there (if it is listed: ${byHand})`],
    };
  const done: string[] = [];
  const notes: string[] = [];
  const path = `/api/v1/nodes/${encodeURIComponent(name)}`;
  const drainMs = opts.drainTimeoutMs ?? 90_000;
  try {
    const cordon = await client.mergePatch(path, { spec: { unschedulable: true } }, 10_000);
    if (cordon.status === 404) return { done, notes: [] };
    if (cordon.status !== 200) throw new Error(`cordoning: HTTP ${cordon.status}: ${apiMessage(cordon.body)}`);
  } catch (e) {
    return { done, notes: [`could not leave ${server} cleanly (${messageOf(e)}): ${byHand}`] };
  }
  // The drain does what it can: the uninstall stops this node's runtime next whatever it leaves, so
  // a pod that would not go (a disruption budget, a slow finalizer) goes with the Node, and its
  // controller makes it anew elsewhere. A Node kept for it would only stay NotReady for good.
  try {
    // Evict each pod, and again each second the ones a disruption budget refused (429), as `kubectl
    // drain` does, until none is left or the time is up.
    const keyOf = (p: PodItem) => `${p.metadata.namespace}/${p.metadata.name}`;
    const refused = new Map<string, string>();
    const evict = async (p: PodItem) => {
      const { namespace, name: pod } = p.metadata;
      const r = await client.post(`/api/v1/namespaces/${namespace}/pods/${pod}/eviction`, {
        apiVersion: "policy/v1",
        kind: "Eviction",
        metadata: { name: pod, namespace },
      });
      if (r.status === 201 || r.status === 200 || r.status === 404) refused.delete(keyOf(p));
      else refused.set(keyOf(p), `HTTP ${r.status}: ${apiMessage(r.body)}`);
    };
    const first = podsToEvict(await podsOn(client, name));
    for (const p of first) await evict(p);
    let pending = podsToEvict(await podsOn(client, name));
    const deadline = Date.now() + drainMs;
    while (pending.length && Date.now() < deadline) {
      await sleep(1000, opts.signal);
      for (const p of pending) if (refused.has(keyOf(p))) await evict(p);
      pending = podsToEvict(await podsOn(client, name));
    }
    if (pending.length) {
      const why = pending
        .map(keyOf)
        .map((n) => (refused.has(n) ? `${n} (eviction refused: ${refused.get(n)})` : n))
        .join(", ");
      throw new Error(`${pending.length} pod(s) still on the node after ${Math.round(drainMs / 1000)} s: ${why}`);
    }
    done.push(`node ${name} drained (${first.length} pod${first.length === 1 ? "" : "s"} evicted)`);
  } catch (e) {
    if (opts.signal?.aborted) throw e;
    notes.push(
      `the drain of node ${name} did not finish (${messageOf(e)}): what is left on it goes with the Node; pods a controller owns are made anew elsewhere`,
    );
  }
  try {
    await opts.beforeDelete?.();
    const del = await client.delete(path);
    if (del.status !== 200 && del.status !== 202 && del.status !== 404)
      throw new Error(`deleting the Node: HTTP ${del.status}: ${apiMessage(del.body)}`);
    done.push(`Node ${name} deleted from ${server}`);
  } catch (e) {
    notes.push(`could not leave ${server} cleanly (${messageOf(e)}): ${byHand}`);
  }
  return { done, notes };
}
