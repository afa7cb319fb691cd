// NetworkPolicy as iptables rules (issue 44), pure: from the cluster's NetworkPolicies, Namespaces
// and pods, the filter table's rules that enforce them for the pods of one node, as one
// iptables-restore transaction (cli/agents/network-policy.ts applies it inside the node's
// namespace). The design is kube-router's: per isolated pod and direction one chain, entered from
// one chain that the filter table's FORWARD and INPUT hooks jump to first, ahead of kube-proxy's
// (its KUBE-FORWARD accepts every masqueraded Service packet). A packet of a new connection leaving
// an egress-isolated pod passes its egress chain, then the receiving pod's ingress chain; each
// chain RETURNs on a rule's match and DROPs otherwise. Replies pass (conntrack ESTABLISHED), and
// so does what the node itself sends from one of its own addresses (the kubelet's probes): the
// OUTPUT hook takes only packets from addresses that are not the node's (RootlessKit's
// IP_TRANSPARENT connections of published ports, which carry the client's address). Peers are
// written as addresses, one per pod (no ipset: a user has no ipset command to rely on), an ipBlock
// as the networks its cidr less its except list leaves. IPv4 only, as the node's networks are.
import { createHash } from "node:crypto";
import { type Ipv4Net, formatCidr, parseCidr, subtractCidrs } from "./cidr";

export interface LabelSelector {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: { key: string; operator: string; values?: string[] | null }[] | null;
}

export interface PolicyPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}

export interface PolicyPeer {
  podSelector?: LabelSelector | null;
  namespaceSelector?: LabelSelector | null;
  ipBlock?: { cidr: string; except?: string[] | null } | null;
}

interface Meta {
  name: string;
  namespace?: string;
  uid?: string;
  labels?: Record<string, string> | null;
  resourceVersion?: string;
}

export interface NetworkPolicyObject {
  metadata: Meta;
  spec: {
    podSelector?: LabelSelector | null;
    policyTypes?: string[] | null;
    ingress?: { from?: PolicyPeer[] | null; ports?: PolicyPort[] | null }[] | null;
    egress?: { to?: PolicyPeer[] | null; ports?: PolicyPort[] | null }[] | null;
  };
}

export interface PodObject {
  metadata: Meta;
  spec?: {
    nodeName?: string;
    hostNetwork?: boolean;
    containers?: { ports?: { name?: string; containerPort: number; protocol?: string }[] | null }[] | null;
  };
  status?: { phase?: string; podIP?: string };
}

export interface NamespaceObject {
  metadata: Meta;
}

/** The chain the hooks jump to; every other chain of ours starts with CHAIN_PREFIX. */
export const NETPOL_CHAIN = "RK8S-NETPOL";
export const CHAIN_PREFIX = "RK8S-NP-";

/** The hooks, as iptables-save prints them: each is the first rule of its chain. */
export const HOOKS = [
  { chain: "FORWARD", rule: `-A FORWARD -j ${NETPOL_CHAIN}` },
  { chain: "INPUT", rule: `-A INPUT -j ${NETPOL_CHAIN}` },
  { chain: "OUTPUT", rule: `-A OUTPUT -m addrtype ! --src-type LOCAL -j ${NETPOL_CHAIN}` },
] as const;

const PROTOCOLS = new Set(["TCP", "UDP", "SCTP"]);

/** Whether a label selector selects these labels (Kubernetes' semantics; {} selects all). Unknown operators select nothing. */
export function selects(sel: LabelSelector, labels: Record<string, string> | null | undefined): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(l, e.key);
    const values = e.values ?? [];
    const ok =
      e.operator === "In"
        ? has && values.includes(l[e.key]!)
        : e.operator === "NotIn"
          ? !has || !values.includes(l[e.key]!)
          : e.operator === "Exists"
            ? has
            : e.operator === "DoesNotExist"
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

const nsOf = (m: Meta) => m.namespace ?? "default";
const keyOf = (m: Meta) => `${nsOf(m)}/${m.name}`;

/** A pod that takes part: it has an address of its own (no hostNetwork) and has not ended. */
export function podInNetwork(p: PodObject): boolean {
  const phase = p.status?.phase;
  return (
    Boolean(p.status?.podIP) && !p.spec?.hostNetwork && phase !== "Succeeded" && phase !== "Failed" && !!parseCidr(`${p.status?.podIP}/32`)
  );
}

/** The policy's directions; the API server always fills policyTypes, older objects read as upstream defaults them. */
export function policyTypesOf(p: NetworkPolicyObject): { ingress: boolean; egress: boolean } {
  const t = p.spec.policyTypes;
  if (t?.length) return { ingress: t.includes("Ingress"), egress: t.includes("Egress") };
  return { ingress: true, egress: Array.isArray(p.spec.egress) };
}

export interface PolicyProblem {
  /** namespace/name of the policy. */
  policy: string;
  message: string;
}

export interface NetpolInput {
  nodeName: string;
  pods: readonly PodObject[];
  namespaces: readonly NamespaceObject[];
  policies: readonly NetworkPolicyObject[];
}

/** One direction of one of this node's pods that policies isolate. */
interface Isolated {
  pod: PodObject;
  ip: string;
  direction: "ingress" | "egress";
  chain: string;
  /** Rule bodies (without -A CHAIN and the verdict) that allow a packet. */
  allows: string[];
}

export interface CompiledRules {
  /** The iptables-restore text for the filter table (with --noflush), hooks and stale chains left to withHooks. */
  chains: Map<string, string[]>;
  /** What the jump chain holds, in order. */
  entry: string[];
  policies: number;
  isolated: { ingress: number; egress: number };
  rules: number;
  problems: PolicyProblem[];
}

function chainName(pod: PodObject, direction: "ingress" | "egress"): string {
  const h = createHash("sha256")
    .update(`${keyOf(pod.metadata)}/${pod.metadata.uid ?? ""}`)
    .digest("hex")
    .slice(0, 12);
  return `${CHAIN_PREFIX}${direction === "ingress" ? "I" : "E"}-${h}`;
}

/** A port of a rule, resolved against the pod that serves it (named ports): iptables words, or null when the pod has no such port. */
function portMatch(port: PolicyPort, server: PodObject | null): string | null {
  const proto = (port.protocol ?? "TCP").toUpperCase();
  const p = `-p ${proto.toLowerCase()}`;
  if (port.port === undefined || port.port === null) return p;
  let number: number | null = null;
  if (typeof port.port === "number") number = port.port;
  else if (/^\d+$/.test(port.port)) number = Number(port.port);
  else {
    const named = (server?.spec?.containers ?? [])
      .flatMap((c) => c.ports ?? [])
      .find((cp) => cp.name === port.port && (cp.protocol ?? "TCP").toUpperCase() === proto);
    if (!named) return null;
    return `${p} -m ${proto.toLowerCase()} --dport ${named.containerPort}`;
  }
  const range = typeof port.endPort === "number" && port.endPort > number ? `${number}:${port.endPort}` : String(number);
  return `${p} -m ${proto.toLowerCase()} --dport ${range}`;
}

/** A peer: the networks it names, each with the pod behind it (for named ports), or null for "every address". */
type Peer = { net: string; pod: PodObject | null };

function peersOf(
  peers: readonly PolicyPeer[] | null | undefined,
  policyNs: string,
  input: NetpolInput,
  nsLabels: Map<string, Record<string, string>>,
  problem: (m: string) => void,
): Peer[] | null {
  if (!peers?.length) return null;
  const out: Peer[] = [];
  for (const peer of peers) {
    if (peer.ipBlock) {
      const net = parseCidr(peer.ipBlock.cidr);
      if (!net) {
        // An IPv6 block names no address of this IPv4 cluster; anything else is malformed.
        if (!peer.ipBlock.cidr.includes(":")) problem(`ipBlock ${peer.ipBlock.cidr} is not a network: it matches nothing`);
        continue;
      }
      const except = (peer.ipBlock.except ?? []).map(parseCidr).filter((x): x is Ipv4Net => x !== null);
      for (const n of subtractCidrs(net, except)) out.push({ net: formatCidr(n), pod: null });
      continue;
    }
    const namespaces = peer.namespaceSelector
      ? new Set([...nsLabels.entries()].filter(([, l]) => selects(peer.namespaceSelector!, l)).map(([n]) => n))
      : new Set([policyNs]);
    for (const pod of input.pods) {
      if (!podInNetwork(pod) || !namespaces.has(nsOf(pod.metadata))) continue;
      if (peer.podSelector && !selects(peer.podSelector, pod.metadata.labels)) continue;
      out.push({ net: `${pod.status!.podIP}/32`, pod });
    }
  }
  return out;
}

function checkPorts(ports: readonly PolicyPort[] | null | undefined, problem: (m: string) => void): PolicyPort[] {
  const ok: PolicyPort[] = [];
  for (const p of ports ?? []) {
    const proto = (p.protocol ?? "TCP").toUpperCase();
    if (!PROTOCOLS.has(proto)) problem(`protocol ${p.protocol} is not TCP, UDP or SCTP: the rule's port matches nothing`);
    else ok.push(p);
  }
  return ok;
}

/** The rules for one node's pods (pure); `denyOnly` keeps isolation and drops every allow (fail closed). */
export function compileNetworkPolicies(input: NetpolInput, opts: { denyOnly?: boolean } = {}): CompiledRules {
  const problems: PolicyProblem[] = [];
  const nsLabels = new Map<string, Record<string, string>>();
  for (const ns of input.namespaces)
    nsLabels.set(ns.metadata.name, { "kubernetes.io/metadata.name": ns.metadata.name, ...(ns.metadata.labels ?? {}) });
  for (const p of input.pods)
    if (!nsLabels.has(nsOf(p.metadata))) nsLabels.set(nsOf(p.metadata), { "kubernetes.io/metadata.name": nsOf(p.metadata) });
  const local = input.pods
    .filter((p) => p.spec?.nodeName === input.nodeName && podInNetwork(p))
    .sort((a, b) => keyOf(a.metadata).localeCompare(keyOf(b.metadata)));
  const policies = [...input.policies].sort((a, b) => keyOf(a.metadata).localeCompare(keyOf(b.metadata)));

  const isolated = new Map<string, Isolated>();
  for (const policy of policies) {
    const ns = nsOf(policy.metadata);
    const said = new Set<string>();
    const problem = (message: string) => {
      if (said.has(message)) return;
      said.add(message);
      problems.push({ policy: keyOf(policy.metadata), message });
    };
    const types = policyTypesOf(policy);
    const selector = policy.spec.podSelector ?? {};
    for (const pod of local) {
      if (nsOf(pod.metadata) !== ns || !selects(selector, pod.metadata.labels)) continue;
      for (const direction of ["ingress", "egress"] as const) {
        if (!types[direction]) continue;
        const key = `${direction}|${keyOf(pod.metadata)}`;
        let iso = isolated.get(key);
        if (!iso) {
          iso = { pod, ip: pod.status!.podIP!, direction, chain: chainName(pod, direction), allows: [] };
          isolated.set(key, iso);
        }
        if (opts.denyOnly) continue;
        const rules = direction === "ingress" ? (policy.spec.ingress ?? []) : (policy.spec.egress ?? []);
        for (const rule of rules) {
          const peerList =
            direction === "ingress" ? (rule as { from?: PolicyPeer[] | null }).from : (rule as { to?: PolicyPeer[] | null }).to;
          const peers = peersOf(peerList, ns, input, nsLabels, problem);
          const ports = checkPorts(rule.ports, problem);
          const anyPort = !rule.ports?.length;
          if (rule.ports?.length && !ports.length) continue;
          const addr = direction === "ingress" ? "-s" : "-d";
          // The pod whose named ports a rule means: the receiving one (this pod for ingress, each peer for egress).
          const targets: { match: string | null; server: PodObject | null }[] =
            peers === null
              ? [{ match: null, server: direction === "ingress" ? pod : null }]
              : peers.map((p) => ({ match: `${addr} ${p.net}`, server: direction === "ingress" ? pod : p.pod }));
          for (const t of targets) {
            const portMatches = anyPort ? [""] : ports.map((p) => portMatch(p, t.server)).filter((m): m is string => m !== null);
            for (const pm of portMatches) iso.allows.push([t.match, pm].filter(Boolean).join(" "));
          }
        }
      }
    }
  }

  const chains = new Map<string, string[]>();
  const entry: string[] = [`-A ${NETPOL_CHAIN} -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN`];
  let rules = 0;
  // Egress jumps first: a packet must leave its pod and then be let into the other.
  const ordered = [...isolated.values()].sort((a, b) => (a.direction === b.direction ? 0 : a.direction === "egress" ? -1 : 1));
  for (const iso of ordered) {
    const who = `${keyOf(iso.pod.metadata)} ${iso.direction}`;
    entry.push(`-A ${NETPOL_CHAIN} ${iso.direction === "egress" ? "-s" : "-d"} ${iso.ip}/32 -m comment --comment "${who}" -j ${iso.chain}`);
    const body = [...new Set(iso.allows)].map((a) => `-A ${iso.chain}${a ? ` ${a}` : ""} -j RETURN`);
    body.push(`-A ${iso.chain} -m comment --comment "${who}: no policy allows it" -j DROP`);
    rules += body.length;
    chains.set(iso.chain, body);
  }
  const count = (d: string) => ordered.filter((i) => i.direction === d).length;
  return {
    chains,
    entry,
    policies: policies.length,
    isolated: { ingress: count("ingress"), egress: count("egress") },
    rules: rules + entry.length,
    problems,
  };
}

/** What the filter table holds of ours now, read from `iptables-save -t filter`. */
export interface SavedFilter {
  /** Our chains (the jump chain and the per-pod ones). */
  chains: string[];
  /** Per hook chain, the rules that jump to ours, in order, and whether the first rule of the chain is our hook. */
  hooks: Record<string, { ours: string[]; first: boolean }>;
}

export function parseSavedFilter(text: string): SavedFilter {
  const chains: string[] = [];
  const hooks: SavedFilter["hooks"] = {};
  let inFilter = false;
  const firstSeen = new Set<string>();
  for (const line of text.split("\n")) {
    if (line.startsWith("*")) inFilter = line.trim() === "*filter";
    if (!inFilter) continue;
    const c = /^:(\S+)/.exec(line);
    if (c && (c[1] === NETPOL_CHAIN || c[1]!.startsWith(CHAIN_PREFIX))) chains.push(c[1]!);
    const a = /^-A (\S+) /.exec(line);
    if (!a) continue;
    const hook = HOOKS.find((h) => h.chain === a[1]);
    if (!hook) continue;
    const h = (hooks[hook.chain] ??= { ours: [], first: false });
    const trimmed = line.trim();
    if (trimmed.endsWith(`-j ${NETPOL_CHAIN}`)) h.ours.push(trimmed);
    if (!firstSeen.has(hook.chain)) {
      firstSeen.add(hook.chain);
      h.first = trimmed === hook.rule;
    }
  }
  return { chains, hooks };
}

/**
 * The whole transaction for `iptables-restore --noflush`: our chains declared (which empties them),
 * the hooks put first where they are not (kube-proxy inserts its own at the top when it starts),
 * the rules, and the chains of pods that are gone deleted.
 */
export function restoreText(compiled: CompiledRules, saved: SavedFilter): string {
  const wanted = [NETPOL_CHAIN, ...compiled.chains.keys()];
  const stale = saved.chains.filter((c) => !wanted.includes(c));
  const lines = ["*filter", ...[...wanted, ...stale].map((c) => `:${c} - [0:0]`)];
  for (const hook of HOOKS) {
    const h = saved.hooks[hook.chain];
    if (h && h.first && h.ours.length === 1) continue;
    for (const r of h?.ours ?? []) lines.push(r.replace(/^-A /, "-D "));
    lines.push(hook.rule.replace(/^-A (\S+)/, "-I $1 1"));
  }
  lines.push(...compiled.entry);
  for (const body of compiled.chains.values()) lines.push(...body);
  for (const c of stale) lines.push(`-X ${c}`);
  lines.push("COMMIT", "");
  return lines.join("\n");
}

/** The text that removes everything of ours (the hooks first, then the chains). */
export function removalText(saved: SavedFilter): string {
  const lines = ["*filter"];
  for (const h of Object.values(saved.hooks)) for (const r of h.ours) lines.push(r.replace(/^-A /, "-D "));
  for (const c of saved.chains) lines.push(`:${c} - [0:0]`);
  for (const c of saved.chains) lines.push(`-X ${c}`);
  lines.push("COMMIT", "");
  return lines.join("\n");
}
