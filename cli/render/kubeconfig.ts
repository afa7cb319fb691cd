// Kubeconfigs with embedded certificates (0600), and the merge of the admin context into
// ~/.kube/config under its own name, never replacing an entry the user already has.
import { createHash } from "node:crypto";
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

/** The three lists of a kubeconfig our entries go into, by the kind of entry. */
const LISTS = { cluster: "clusters", user: "users", context: "contexts" } as const;
export type EntryKind = keyof typeof LISTS;
const KINDS = Object.keys(LISTS) as EntryKind[];

/** sha256 of each of our three entries as merged (name included), recorded so uninstall knows them again. */
export type KubeconfigDigests = Record<EntryKind, string>;

export interface MergeResult {
  /** The new ~/.kube/config text; null when nothing changes. */
  content: string | null;
  /** The names used for our cluster, user and context (suffixed when the plain ones are taken). */
  names: KubeconfigNames;
  /** The digests of our entries as they stand in the file (entryDigest). */
  digests: KubeconfigDigests;
  /** True when the plain names were taken by other entries, so suffixed names were used. */
  renamed: boolean;
}

/** JSON with every object's keys sorted: the same for an entry whatever order a tool (kubectl) writes its keys in. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v) ?? "null";
}

/** sha256 of an entry's content (name included, key order ignored): equal only when nothing in it changed. */
export function entryDigest(entry: unknown): string {
  return createHash("sha256").update(canonicalJson(entry)).digest("hex");
}

/**
 * A kubeconfig's text as a YAML document that keeps the user's comments, or null when it is no
 * kubeconfig (not YAML, not a mapping, or a list of ours that is no list).
 */
function parseKubeconfig(text: string): YAML.Document | null {
  const doc = YAML.parseDocument(text);
  if (doc.errors.length) return null;
  if (doc.contents === null) doc.contents = doc.createNode({}) as YAML.ParsedNode; // empty, or comments only
  if (!YAML.isMap(doc.contents)) return null;
  for (const list of Object.values(LISTS)) {
    const v = doc.get(list, true);
    if (v !== undefined && !YAML.isSeq(v) && !(YAML.isScalar(v) && v.value === null)) return null;
  }
  return doc;
}

/** Writes a document back in the file's own style (a file kubectl wrote has its lists' dashes at the key's column). */
function printKubeconfig(doc: YAML.Document, original: string): string {
  return doc.toString({ lineWidth: 0, indentSeq: !/^- /m.test(original) });
}

/** The entries of one list of the document (none when the list is missing or null). */
function seqOf(doc: YAML.Document, kind: EntryKind): YAML.YAMLSeq | null {
  const v = doc.get(LISTS[kind], true);
  return YAML.isSeq(v) ? v : null;
}

function nameOf(node: unknown): unknown {
  return YAML.isMap(node) ? node.get("name") : undefined;
}

/**
 * Adds the admin cluster, user and context to an existing kubeconfig (null: none yet). An entry
 * with our name and the same content is left alone (idempotent); one with our name and other
 * content is never replaced: ours gets the next free suffix (rootless-k8s-2, ...). The user's
 * current-context is kept; it is set only when the file had none. Everything else of the file,
 * its comments included, stays as it was.
 */
export function mergeKubeconfig(existingText: string | null, admin: Record<string, unknown>): MergeResult {
  const ours = admin as { clusters?: NamedEntry[]; users?: NamedEntry[]; contexts?: NamedEntry[] };
  const cluster = ours.clusters?.[0];
  const user = ours.users?.[0];
  const context = ours.contexts?.[0];
  if (!cluster || !user || !context) throw new Error("the admin kubeconfig has no cluster, user or context");
  const text = existingText?.trim() ? existingText : null;
  const doc = text === null ? new YAML.Document({ apiVersion: "v1", kind: "Config" }) : parseKubeconfig(text);
  if (!doc) {
    const parsed = YAML.parseDocument(text ?? "");
    if (parsed.errors[0]) throw parsed.errors[0];
    throw new Error("~/.kube/config is not a kubeconfig (not a YAML mapping with lists of clusters, users and contexts)");
  }

  const base = adminNames();
  for (let n = 1; ; n++) {
    const suffix = n === 1 ? "" : `-${n}`;
    const names = { cluster: base.cluster + suffix, user: base.user + suffix, context: base.context + suffix };
    const want: Record<EntryKind, NamedEntry> = {
      cluster: { ...cluster, name: names.cluster },
      user: { ...user, name: names.user },
      context: { name: names.context, context: { cluster: names.cluster, user: names.user } },
    };
    const digests = Object.fromEntries(KINDS.map((k) => [k, entryDigest(want[k])])) as KubeconfigDigests;
    const found = Object.fromEntries(
      KINDS.map((k) => [k, seqOf(doc, k)?.items.find((e) => nameOf(e) === names[k]) as YAML.Node | undefined]),
    ) as Record<EntryKind, YAML.Node | undefined>;
    if (KINDS.some((k) => found[k] && entryDigest(found[k]!.toJSON()) !== digests[k])) continue; // taken by something else
    if (KINDS.every((k) => found[k])) return { content: null, names, digests, renamed: n > 1 };
    for (const k of KINDS) {
      if (found[k]) continue;
      const seq = seqOf(doc, k);
      if (!seq) doc.set(LISTS[k], doc.createNode([want[k]]));
      else {
        if (!seq.items.length) seq.flow = false; // `clusters: []` grows into a block list
        seq.add(doc.createNode(want[k]));
      }
    }
    const top = doc.contents as YAML.YAMLMap;
    if (!doc.has("kind")) top.items.unshift(doc.createPair("kind", "Config"));
    if (!doc.has("apiVersion")) top.items.unshift(doc.createPair("apiVersion", "v1"));
    if (!doc.get("current-context")) doc.set("current-context", doc.createNode(names.context)); // a new node: not the quotes of kubectl's ""
    return { content: printKubeconfig(doc, text ?? ""), names, digests, renamed: n > 1 };
  }
}

export interface UnmergeResult {
  /** The new text; null when nothing of ours was taken out (the file is left as it is). */
  content: string | null;
  /** Nothing is left in the file but what every kubeconfig has (no entry, no comment, no other setting). */
  empty: boolean;
  /** What was taken out: "context rootless-k8s", "cluster rootless-k8s", "user rootless-k8s-admin". */
  removed: string[];
  /** Entries of our names left in place, each with why. */
  kept: KeptEntry[];
}

export interface KeptEntry {
  kind: EntryKind;
  name: string;
  /** "changed since install", "used by context dev", ... */
  why: string;
}

const KEPT_ORDER: readonly EntryKind[] = ["context", "cluster", "user"];

/** Top-level keys every kubeconfig has: a file holding only these (and no entry, no comment) holds nothing of the user's. */
const BARE_KEYS = new Set(["apiVersion", "kind", "current-context", "preferences", ...Object.values(LISTS)]);

function hasComments(text: string): boolean {
  for (const token of new YAML.Lexer().lex(text)) if (token.startsWith("#")) return true;
  return false;
}

/**
 * Takes our cluster, user and context out of a kubeconfig's text, but only those still exactly as
 * install merged them (their digests as recorded; none recorded: none is known, so none goes). An
 * entry the user changed is kept and named in `kept`, and so is a cluster or user that a context
 * left in the file still uses. The current context is unset only when it was ours and ours went.
 * Comments and everything else stay. Null when the text is no kubeconfig.
 */
export function unmergeKubeconfig(text: string, names: KubeconfigNames, digests: KubeconfigDigests | null): UnmergeResult | null {
  const doc = parseKubeconfig(text);
  if (!doc || !doc.has(LISTS.context)) return null; // YAML, but no kubeconfig: not ours to judge
  const kept: KeptEntry[] = [];
  const going = new Map<EntryKind, YAML.Node[]>();
  for (const k of KINDS) {
    const mine = (seqOf(doc, k)?.items ?? []).filter((e) => nameOf(e) === names[k]) as YAML.Node[];
    if (!mine.length) continue;
    if (!digests) kept.push({ kind: k, name: names[k], why: "the receipt does not record what install merged" });
    else if (mine.some((e) => entryDigest(e.toJSON()) !== digests[k])) kept.push({ kind: k, name: names[k], why: "changed since install" });
    else going.set(k, mine);
  }
  // A cluster or user still named by a context that stays is in use: it stays too.
  const staying = (seqOf(doc, "context")?.items ?? []).filter((e) => !going.get("context")?.includes(e as YAML.Node));
  for (const k of ["cluster", "user"] as const) {
    const users = staying.filter((e) => YAML.isMap(e) && (e.getIn(["context", k]) as unknown) === names[k]).map(nameOf);
    if (going.has(k) && users.length) {
      going.delete(k);
      kept.push({ kind: k, name: names[k], why: `used by context ${users.map(String).join(", ")}` });
    }
  }
  kept.sort((a, b) => KEPT_ORDER.indexOf(a.kind) - KEPT_ORDER.indexOf(b.kind)); // the context first: what deletes them by hand goes in that order
  const removed: string[] = [];
  for (const k of KINDS) {
    const gone = going.get(k);
    if (!gone) continue;
    const seq = seqOf(doc, k)!;
    seq.items = seq.items.filter((e) => !gone.includes(e as YAML.Node));
    removed.push(`${k} ${names[k]}`);
  }
  if (!removed.length) return { content: null, empty: false, removed, kept };
  if (going.has("context") && doc.get("current-context") === names.context) doc.delete("current-context");
  const top = doc.contents as YAML.YAMLMap;
  const empty =
    KINDS.every((k) => !seqOf(doc, k)?.items.length) &&
    !hasComments(text) &&
    top.items.every((p) => {
      const key = YAML.isScalar(p.key) ? String(p.key.value) : String(p.key);
      if (!BARE_KEYS.has(key)) return false;
      return key !== "preferences" || !YAML.isMap(p.value) || !p.value.items.length;
    });
  return { content: printKubeconfig(doc, text), empty, removed, kept };
}
