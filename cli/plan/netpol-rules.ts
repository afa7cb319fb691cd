// NetworkPolicy as rules (issue 44), pure: from the cluster's NetworkPolicies, Namespaces and pods,
// what enforces them for the pods of one node: per isolated pod and direction, what it lets
// through (a peer's network, a protocol, a port), everything else dropped. A back end writes it as
// one transaction for the node's namespace: iptables (netpol-iptables.ts) where the host has
// iptables, else nftables (netpol-nftables.ts), the tool kube-proxy uses there too. The design is
// kube-router's: a packet of a new connection leaving an egress-isolated pod passes its egress
// chain, then the receiving pod's ingress chain; replies pass (conntrack), and so does what the
// node itself sends from one of its own addresses (the kubelet's probes). Peers are written as
// addresses, one per pod (no ipset: a user has no ipset command to rely on), an ipBlock as the
// networks its cidr less its except list leaves. IPv4 only, as the node's networks are.
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

/** What a rule lets through: a peer's network (null: any address), a protocol and a destination port or range (null: any). */
export interface Allow {
  net: string | null;
  proto: "tcp" | "udp" | "sctp" | null;
  /** "8080", or a range "8000-8100". */
  port: string | null;
}

/** One direction of one of this node's pods that policies isolate: what its chain lets through, the rest dropped. */
export interface IsolatedPod {
  /** namespace/name */
  pod: string;
  ip: string;
  direction: "ingress" | "egress";
  /** 12 hex digits of the pod's name and uid: its chains' names in either back end. */
  id: string;
  allows: Allow[];
}

/** The enforcement for one node, before a back end writes it (iptables: netpol-iptables.ts, nftables: netpol-nftables.ts). */
export interface CompiledRules {
  /** Egress first: a packet must leave its pod, then be let into the other. */
  isolated: IsolatedPod[];
  policies: number;
  counts: { ingress: number; egress: number };
  /** Rules written, the chains' final drops included. */
  rules: number;
  problems: PolicyProblem[];
}

function podId(pod: PodObject): string {
  return createHash("sha256")
    .update(`${keyOf(pod.metadata)}/${pod.metadata.uid ?? ""}`)
    .digest("hex")
    .slice(0, 12);
}

/** A port given by its name (a container port's), not its number. */
const isNamedPort = (p: PolicyPort): p is PolicyPort & { port: string } => typeof p.port === "string" && !/^\d+$/.test(p.port);

/** A port of a rule, resolved against the pod that serves it (named ports); null when the pod has no such port. */
function portAllow(port: PolicyPort, server: PodObject | null): Pick<Allow, "proto" | "port"> | null {
  const proto = (port.protocol ?? "TCP").toUpperCase();
  const p = proto.toLowerCase() as Allow["proto"];
  if (port.port === undefined || port.port === null) return { proto: p, port: null };
  if (isNamedPort(port)) {
    const named = (server?.spec?.containers ?? [])
      .flatMap((c) => c.ports ?? [])
      .find((cp) => cp.name === port.port && (cp.protocol ?? "TCP").toUpperCase() === proto);
    return named ? { proto: p, port: String(named.containerPort) } : null;
  }
  const number = Number(port.port);
  return { proto: p, port: typeof port.endPort === "number" && port.endPort > number ? `${number}-${port.endPort}` : String(number) };
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

  const isolated = new Map<string, IsolatedPod>();
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
          iso = { pod: keyOf(pod.metadata), ip: pod.status!.podIP!, direction, id: podId(pod), allows: [] };
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
          // The pod whose named ports a rule means: the receiving one (this pod for ingress, each
          // peer for egress). Egress to every address on a named port means every pod that names
          // that port, each on its own number (an address that is no pod has no named port).
          const targets: { net: string | null; server: PodObject | null; ports: PolicyPort[] }[] =
            peers !== null
              ? peers.map((p) => ({ net: p.net, server: direction === "ingress" ? pod : p.pod, ports }))
              : direction === "ingress"
                ? [{ net: null, server: pod, ports }]
                : [
                    { net: null, server: null, ports: ports.filter((p) => !isNamedPort(p)) },
                    ...(ports.some(isNamedPort)
                      ? input.pods
                          .filter(podInNetwork)
                          .map((p) => ({ net: `${p.status!.podIP}/32`, server: p, ports: ports.filter(isNamedPort) }))
                      : []),
                  ];
          for (const t of targets) {
            const portAllows = anyPort
              ? [{ proto: null, port: null }]
              : t.ports.map((p) => portAllow(p, t.server)).filter((m): m is Pick<Allow, "proto" | "port"> => m !== null);
            for (const pa of portAllows) iso.allows.push({ net: t.net, ...pa });
          }
        }
      }
    }
  }

  const seen = (a: Allow) => `${a.net}|${a.proto}|${a.port}`;
  const ordered = [...isolated.values()]
    .sort((a, b) => (a.direction === b.direction ? 0 : a.direction === "egress" ? -1 : 1))
    .map((iso) => ({ ...iso, allows: [...new Map(iso.allows.map((a) => [seen(a), a])).values()] }));
  const count = (d: string) => ordered.filter((i) => i.direction === d).length;
  return {
    isolated: ordered,
    policies: policies.length,
    counts: { ingress: count("ingress"), egress: count("egress") },
    rules: 1 + ordered.reduce((n, i) => n + 2 + i.allows.length, 0),
    problems,
  };
}
