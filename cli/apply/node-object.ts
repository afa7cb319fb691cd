// The Node object's labels and taints that rootless-k8s owns (keys under rootless-k8s.io/). The
// kubelet sets them only when it registers the node, so a re-install with a changed plan (say,
// --taint-none) brings the registered node in line through the API, leaving every other label and
// taint alone.
import { UserError } from "../errors";
import type { Plan } from "../plan/plan";
import type { ApiClient, NodeView } from "../clients/kubernetes";

export const OWN_PREFIX = "rootless-k8s.io/";

type Taint = NodeView["taints"][number];
const sameTaint = (a: Taint, b: Taint) => a.key === b.key && (a.value ?? "") === (b.value ?? "") && a.effect === b.effect;

/** The JSON merge patch that gives the node the plan's labels and taints; null when it has them. */
export function nodePatch(
  node: NodeView,
  plan: Plan,
): { metadata?: { labels: Record<string, string | null> }; spec?: { taints: Taint[] } } | null {
  const labels: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(plan.node.labels)) if (node.labels[k] !== v) labels[k] = v;
  for (const k of Object.keys(node.labels)) if (k.startsWith(OWN_PREFIX) && !(k in plan.node.labels)) labels[k] = null;
  const ours = node.taints.filter((t) => t.key.startsWith(OWN_PREFIX));
  const want = plan.node.taints as Taint[];
  const taintsDiffer = ours.length !== want.length || want.some((w) => !ours.some((o) => sameTaint(o, w)));
  const patch: ReturnType<typeof nodePatch> = {};
  if (Object.keys(labels).length) patch.metadata = { labels };
  if (taintsDiffer) patch.spec = { taints: [...node.taints.filter((t) => !t.key.startsWith(OWN_PREFIX)), ...want] };
  return patch.metadata || patch.spec ? patch : null;
}

/** Applies nodePatch through the API (admin credentials); returns what changed, in words. */
export async function reconcileNode(client: ApiClient, plan: Plan, node: NodeView): Promise<string | null> {
  const patch = nodePatch(node, plan);
  if (!patch) return null;
  const r = await client.mergePatch(`/api/v1/nodes/${encodeURIComponent(plan.node.name)}`, patch);
  if (r.status !== 200)
    throw new UserError(`could not update the labels and taints of node ${plan.node.name}: HTTP ${r.status}`, {
      fix: "re-run `rootless-k8s install`",
    });
  const parts = [...Object.keys(patch.metadata?.labels ?? {}).map((k) => `label ${k}`), ...(patch.spec ? ["taints"] : [])];
  return `updated ${parts.join(", ")}`;
}

/**
 * Before a stop: the Node's Ready condition becomes Unknown ("Kubelet stopped posting node status",
 * as the node controller writes it after its grace period), so the API never shows a stopped node
 * Ready. It also makes the next start fast: a kubelet that finds its Node not Ready posts Ready as
 * soon as its runtime and PLEG are up (its fast status update), while one that finds the old Ready
 * skips that and posts only at its next status sync, 10 s later (issue 41). Best effort, bounded:
 * false when the API server does not answer, the node is not Ready, or the node changed meanwhile
 * (the patch names the resourceVersion it read).
 */
export async function markKubeletStopping(client: ApiClient, nodeName: string, now = new Date(), timeoutMs = 2000): Promise<boolean> {
  const path = `/api/v1/nodes/${encodeURIComponent(nodeName)}`;
  const r = await client.get(path, timeoutMs).catch(() => null);
  if (r?.status !== 200) return false;
  type Condition = { type: string; status: string } & Record<string, unknown>;
  const node = JSON.parse(r.body) as { metadata?: { resourceVersion?: string }; status?: { conditions?: Condition[] } };
  const conditions = node.status?.conditions ?? [];
  const i = conditions.findIndex((c) => c.type === "Ready");
  if (i < 0 || conditions[i]?.status !== "True") return false;
  conditions[i] = {
    ...(conditions[i] as Condition),
    status: "Unknown",
    reason: "NodeStatusUnknown",
    message: "Kubelet stopped posting node status (rootless-k8s stop).",
    lastTransitionTime: now.toISOString().replace(/\.\d+Z$/, "Z"),
  };
  const patch = { metadata: { resourceVersion: node.metadata?.resourceVersion }, status: { conditions } };
  const p = await client.mergePatch(`${path}/status`, patch, timeoutMs).catch(() => null);
  return p?.status === 200;
}
