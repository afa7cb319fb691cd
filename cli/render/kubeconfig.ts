// Kubeconfigs with embedded certificates (0600), and the merge of the admin context into
// ~/.kube/config under its own name, never replacing an entry the user already has.
import YAML from "yaml";
import type { Plan } from "../plan/plan";
import { CLUSTER_NAME } from "./components";
import type { KeyPairPem, Pki } from "./pki";

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

export interface KubeconfigNames {
  cluster: string;
  user: string;
  context: string;
}

export function kubeconfig(server: string, caPem: string, client: KeyPairPem, names: KubeconfigNames): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: names.cluster, cluster: { server, "certificate-authority-data": b64(caPem) } }],
    users: [{ name: names.user, user: { "client-certificate-data": b64(client.cert), "client-key-data": b64(client.key) } }],
    contexts: [{ name: names.context, context: { cluster: names.cluster, user: names.user } }],
    "current-context": names.context,
    preferences: {},
  };
}

/** The API server as seen from inside the namespace (components) and from the host (admin). */
export function apiServerUrl(plan: Plan): string {
  return `https://127.0.0.1:${plan.ports.apiServer}`;
}

export function adminNames(): KubeconfigNames {
  return { cluster: CLUSTER_NAME, user: `${CLUSTER_NAME}-admin`, context: CLUSTER_NAME };
}

export function componentKubeconfig(plan: Plan, pki: Pki, client: KeyPairPem, user: string): Record<string, unknown> {
  return kubeconfig(apiServerUrl(plan), pki.ca.cert, client, { cluster: CLUSTER_NAME, user, context: `${user}@${CLUSTER_NAME}` });
}

/** The API server as seen from the host, through the port RootlessKit publishes (same number inside and outside). */
export function hostApiServerUrl(plan: Plan): string {
  const published = plan.network.published.find((p) => p.namespacePort === plan.ports.apiServer)?.hostPort ?? plan.ports.apiServer;
  return `https://127.0.0.1:${published}`;
}

export function adminKubeconfig(plan: Plan, pki: Pki): Record<string, unknown> {
  return kubeconfig(hostApiServerUrl(plan), pki.ca.cert, pki.admin, adminNames());
}

/**
 * A program of ours on the host (the port publisher, which talks to RootlessKit's API there; the
 * CSR approver): the admin's way in, with its own certificate.
 */
export function hostClientKubeconfig(plan: Plan, pki: Pki, which: "ports" | "csrApprover", user: string): Record<string, unknown> {
  const pair = pki[which];
  if (!pair) throw new Error(`the PKI has no ${which} certificate`);
  return kubeconfig(hostApiServerUrl(plan), pki.ca.cert, pair, { cluster: CLUSTER_NAME, user, context: `${user}@${CLUSTER_NAME}` });
}

/**
 * A worker's kube-proxy: the control plane's URL and CA, and the kubelet's own client certificate
 * (system:node:NAME, which the kubelet rotates; the control plane grants nodes kube-proxy's role).
 */
export function workerKubeProxyKubeconfig(plan: Plan, caFile: string, kubeletCertDir: string): Record<string, unknown> {
  const join = plan.join;
  if (!join) throw new Error("only a worker's kube-proxy uses the kubelet's certificate");
  const pem = `${kubeletCertDir}/kubelet-client-current.pem`;
  const user = `system:node:${plan.node.name}`;
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: CLUSTER_NAME, cluster: { server: join.server, "certificate-authority": caFile } }],
    users: [{ name: user, user: { "client-certificate": pem, "client-key": pem } }],
    contexts: [{ name: `kube-proxy@${CLUSTER_NAME}`, context: { cluster: CLUSTER_NAME, user } }],
    "current-context": `kube-proxy@${CLUSTER_NAME}`,
    preferences: {},
  };
}

/** A worker's kubelet before it has a certificate: the join token (a secret: 0600, removed after the join). */
export function bootstrapKubeconfig(server: string, caFile: string, token: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: CLUSTER_NAME, cluster: { server, "certificate-authority": caFile } }],
    users: [{ name: "kubelet-bootstrap", user: { token } }],
    contexts: [{ name: `kubelet-bootstrap@${CLUSTER_NAME}`, context: { cluster: CLUSTER_NAME, user: "kubelet-bootstrap" } }],
    "current-context": `kubelet-bootstrap@${CLUSTER_NAME}`,
    preferences: {},
  };
}

export function renderKubeconfig(doc: Record<string, unknown>): string {
  return YAML.stringify(doc, { lineWidth: 0 });
}

interface NamedEntry {
  name: string;
  [k: string]: unknown;
}

interface KubeconfigDoc {
  clusters?: NamedEntry[];
  users?: NamedEntry[];
  contexts?: NamedEntry[];
  "current-context"?: string;
  [k: string]: unknown;
}

export interface MergeResult {
  /** The new ~/.kube/config text; null when nothing changes. */
  content: string | null;
  /** The names used for our cluster, user and context (suffixed when the plain ones are taken). */
  names: KubeconfigNames;
  /** True when the plain names were taken by other entries, so suffixed names were used. */
  renamed: boolean;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Adds the admin cluster, user and context to an existing kubeconfig (null: none yet). An entry
 * with our name and the same content is left alone (idempotent); one with our name and other
 * content is never replaced: ours gets the next free suffix (rootless-k8s-2, ...). The user's
 * current-context is kept; it is set only when the file had none.
 */
export function mergeKubeconfig(existingText: string | null, admin: Record<string, unknown>): MergeResult {
  const ours = admin as KubeconfigDoc;
  const cluster = ours.clusters?.[0];
  const user = ours.users?.[0];
  const context = ours.contexts?.[0];
  if (!cluster || !user || !context) throw new Error("the admin kubeconfig has no cluster, user or context");
  const doc: KubeconfigDoc = existingText?.trim() ? ((YAML.parse(existingText) as KubeconfigDoc | null) ?? {}) : {};
  if (typeof doc !== "object" || Array.isArray(doc)) throw new Error("~/.kube/config is not a kubeconfig (not a YAML mapping)");
  const lists = { clusters: doc.clusters ?? [], users: doc.users ?? [], contexts: doc.contexts ?? [] };

  const base = adminNames();
  for (let n = 1; ; n++) {
    const suffix = n === 1 ? "" : `-${n}`;
    const names = { cluster: base.cluster + suffix, user: base.user + suffix, context: base.context + suffix };
    const want = {
      clusters: { ...cluster, name: names.cluster },
      users: { ...user, name: names.user },
      contexts: { name: names.context, context: { cluster: names.cluster, user: names.user } },
    };
    const found = {
      clusters: lists.clusters.find((e) => e.name === names.cluster),
      users: lists.users.find((e) => e.name === names.user),
      contexts: lists.contexts.find((e) => e.name === names.context),
    };
    const keys = ["clusters", "users", "contexts"] as const;
    if (keys.some((k) => found[k] && !sameJson(found[k], want[k]))) continue; // taken by something else
    if (keys.every((k) => found[k])) return { content: null, names, renamed: n > 1 };
    for (const k of keys) if (!found[k]) lists[k].push(want[k]);
    const merged: KubeconfigDoc = { apiVersion: "v1", kind: "Config", ...doc, ...lists };
    if (!merged["current-context"]) merged["current-context"] = names.context;
    return { content: YAML.stringify(merged, { lineWidth: 0 }), names, renamed: n > 1 };
  }
}
