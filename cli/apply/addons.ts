// Applies the plan's add-ons (cli/render/addons.ts) through the API server with server-side apply,
// as the admin: idempotent (an unchanged object is not written, its resourceVersion stays), so a
// re-install changes nothing and an upgrade re-applies. An add-on turned off (--no-dns) has its
// objects deleted. Also reads each add-on's readiness for `status`.
import { ExitCode, InterruptedError, UserError, messageOf } from "../errors";
import type { Plan } from "../plan/plan";
import { ADDON_LABEL, type Addon, type KubeObject, addons } from "../render";
import type { Progress } from "../ui/progress";
import { sleep } from "../wait";
import { type ApiClient, type ApiResponse, apiClient, apiMessage, readKubeconfig } from "../clients/kubernetes";

export const FIELD_MANAGER = "rootless-k8s";

const PLURAL: Record<string, string> = {
  Namespace: "namespaces",
  Role: "roles",
  RoleBinding: "rolebindings",
  StorageClass: "storageclasses",
  ServiceAccount: "serviceaccounts",
  ConfigMap: "configmaps",
  Service: "services",
  ClusterRole: "clusterroles",
  ClusterRoleBinding: "clusterrolebindings",
  Deployment: "deployments",
  APIService: "apiservices",
};

/** The object's REST path: /api/v1/... for the core group, /apis/GROUP/VERSION/... otherwise. */
export function objectPath(o: KubeObject): string {
  const plural = PLURAL[o.kind];
  if (!plural) throw new Error(`no REST path known for kind ${o.kind}`);
  const base = o.apiVersion.includes("/") ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const ns = o.metadata.namespace ? `/namespaces/${encodeURIComponent(o.metadata.namespace)}` : "";
  return `${base}${ns}/${plural}/${encodeURIComponent(o.metadata.name)}`;
}

const label = (o: KubeObject) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name}`;

export interface AddonOutcome {
  id: string;
  enabled: boolean;
  /** Objects whose resourceVersion changed (created or updated), or deleted when off. */
  changed: string[];
}

/**
 * One request, tried again while the API server is busy (no answer, 429, 5xx): right after a
 * restart it answers /readyz and the Node, yet may be slow for a while (a software-emulated VM
 * took more than the single tries' 5 s). Up to `budgetMs` in all, `pauseMs` between tries; then
 * the last failure stands. Ctrl-C (`signal`) ends the wait between tries with InterruptedError (exit 130).
 */
export interface Patience {
  budgetMs?: number;
  pauseMs?: number;
  signal?: AbortSignal;
}

export async function patiently(
  call: () => Promise<ApiResponse>,
  { budgetMs = 120_000, pauseMs = 2000, signal }: Patience = {},
): Promise<ApiResponse> {
  const deadline = Date.now() + budgetMs;
  for (;;) {
    if (signal?.aborted) throw new InterruptedError();
    try {
      const r = await call();
      if ((r.status !== 429 && r.status < 500) || Date.now() + pauseMs > deadline) return r;
    } catch (e) {
      if (Date.now() + pauseMs > deadline) throw e;
    }
    await sleep(pauseMs, signal);
  }
}

/** The API server's refusal of one add-on object, in one line with the fix. */
function refused(verb: "apply" | "remove", addon: Addon, o: KubeObject, r: ApiResponse): UserError {
  return new UserError(`could not ${verb} the ${addon.id} add-on's ${label(o)}: HTTP ${r.status}: ${apiMessage(r.body)}`, {
    exitCode: ExitCode.Failure,
    fix: "re-run `rootless-k8s install`; `rootless-k8s logs kube-apiserver` shows why the API server refused it",
  });
}

async function applyOne(client: ApiClient, addon: Addon, patience: Patience = {}): Promise<AddonOutcome> {
  const changed: string[] = [];
  if (addon.enabled) {
    for (const o of addon.objects) {
      const p = objectPath(o);
      const before = await patiently(() => client.get(p, 30_000), patience);
      const r = await patiently(() => client.apply(p, o, FIELD_MANAGER, 30_000), patience);
      if (r.status !== 200 && r.status !== 201) throw refused("apply", addon, o, r);
      const version = (b: string) => (JSON.parse(b) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
      if (before.status !== 200 || version(before.body) !== version(r.body)) changed.push(label(o));
    }
  } else {
    // A Namespace stays: its deletion would still be running when a later install applies into it.
    for (const o of [...addon.objects].reverse().filter((x) => x.kind !== "Namespace")) {
      const r = await patiently(() => client.delete(objectPath(o), 30_000), patience);
      if (r.status === 200 || r.status === 202) changed.push(label(o));
      else if (r.status !== 404) throw refused("remove", addon, o, r);
    }
  }
  return { id: addon.id, enabled: addon.enabled, changed };
}

/** Applies every add-on that is on and removes every one that is off; what changed, per add-on. */
export async function applyAddons(client: ApiClient, plan: Plan, signal?: AbortSignal): Promise<AddonOutcome[]> {
  const out: AddonOutcome[] = [];
  for (const a of addons(plan)) out.push(await applyOne(client, a, { signal }));
  return out;
}

export interface AddonReadiness {
  id: string;
  ready: boolean;
  /** "1/1 available", "0/1 available: ImagePullBackOff ...", "not found". */
  detail: string;
}

/** Why an add-on's pods do not run yet ("ImagePullBackOff: ..."), from their container states. */
async function waitingReason(client: ApiClient, a: Addon, namespace: string): Promise<string> {
  const r = await client.get(`/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(`${ADDON_LABEL}=${a.id}`)}`);
  if (r.status !== 200) return "";
  type Pod = { status?: { phase?: string; containerStatuses?: { state?: { waiting?: { reason?: string; message?: string } } }[] } };
  const pods = (JSON.parse(r.body) as { items?: Pod[] }).items ?? [];
  const waiting = pods.flatMap((p) => p.status?.containerStatuses ?? []).find((c) => c.state?.waiting)?.state?.waiting;
  if (waiting) return ` (${[waiting.reason, waiting.message].filter(Boolean).join(": ").slice(0, 200)})`;
  return pods.length ? ` (pod ${pods[0]?.status?.phase ?? "pending"})` : " (no pod yet)";
}

/** Each add-on that is on: whether its Deployment has every replica available. */
export async function addonReadiness(client: ApiClient, plan: Plan): Promise<AddonReadiness[]> {
  const out: AddonReadiness[] = [];
  for (const a of addons(plan).filter((x) => x.enabled)) {
    if (!a.ready) continue; // no workload of its own (the ports add-on: its unit says whether it runs)
    const r = await client.get(`/apis/apps/v1/namespaces/${a.ready.namespace}/deployments/${a.ready.deployment}`);
    if (r.status !== 200) {
      out.push({ id: a.id, ready: false, detail: r.status === 404 ? "not applied (re-run `rootless-k8s install`)" : `HTTP ${r.status}` });
      continue;
    }
    const d = JSON.parse(r.body) as { spec?: { replicas?: number }; status?: { availableReplicas?: number } };
    const want = d.spec?.replicas ?? 1;
    const have = d.status?.availableReplicas ?? 0;
    out.push({
      id: a.id,
      ready: have >= want,
      detail: `${have}/${want} available${have >= want ? "" : await waitingReason(client, a, a.ready.namespace)}`,
    });
  }
  return out;
}

/**
 * The install/upgrade step: apply the add-ons as the admin, and say what changed. Ctrl-C stops it
 * between requests (exit 130); the node stays Ready and a re-run of install applies the rest.
 */
export async function addonsStep(plan: Plan, progress: Progress, signal?: AbortSignal): Promise<AddonOutcome[]> {
  const list = addons(plan);
  if (!list.length) return [];
  return progress.step("addons", `Applying add-ons (${list.map((a) => `${a.id}${a.enabled ? "" : " off"}`).join(", ")})`, async (h) => {
    const client = apiClient(await readKubeconfig(plan.paths.adminKubeconfig));
    const outcomes = await applyAddons(client, plan, signal);
    h.update(
      outcomes
        .map(
          (o) =>
            `${o.id}: ${o.enabled ? (o.changed.length ? `applied ${o.changed.length} objects` : "unchanged") : o.changed.length ? "removed" : "off"}`,
        )
        .join("; "),
    );
    return outcomes;
  });
}

/**
 * Uninstall: deletes every add-on's objects while the API server still runs (the data, and etcd
 * with it, may stay). Never fails the uninstall: what could not be deleted is a note.
 */
export async function removeAddons(plan: Plan): Promise<{ removed: string[]; notes: string[] }> {
  const list = addons(plan).filter((a) => a.enabled);
  if (!list.length) return { removed: [], notes: [] };
  try {
    const client = apiClient(await readKubeconfig(plan.paths.adminKubeconfig));
    // A slow API server (an emulated VM took more than 3 s) still gets its objects deleted.
    if ((await patiently(() => client.get("/readyz", 10_000), { budgetMs: 20_000 })).status !== 200)
      throw new Error("/readyz does not answer 200");
    const removed: string[] = [];
    for (const a of list) removed.push(...(await applyOne(client, { ...a, enabled: false }, { budgetMs: 15_000 })).changed);
    return { removed, notes: [] };
  } catch (e) {
    return {
      removed: [],
      notes: [
        `kept the add-ons' objects in the node's data: the API server did not answer (${messageOf(e)}); install re-applies them, --purge removes them`,
      ],
    };
  }
}
