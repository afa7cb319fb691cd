// The host ports a node publishes through RootlessKit's port driver, decided from the cluster's own
// objects (pure): every nodePort of NodePort and LoadBalancer Services, each LoadBalancer's own
// ports (forwarded to the same entry's nodePort, so traffic enters kube-proxy's NodePort rule), and
// the hostPorts of pods still running. What cannot be published (SCTP, a privileged port, a port the
// node keeps for itself, two owners for one port) is returned with its reason instead of dropped.
// reconcilePorts turns the wanted set and RootlessKit's current list into the calls that get from
// one to the other; cli/clients/rootlesskit.ts makes them.

/** A v1 Service, reduced to what publishing reads. */
export interface ServiceObject {
  metadata: { namespace?: string; name: string };
  spec?: { type?: string; ports?: { name?: string; protocol?: string; port: number; nodePort?: number }[] };
}

/** A v1 Pod, reduced to what publishing reads. */
export interface PodObject {
  metadata: { namespace?: string; name: string };
  spec?: { containers?: { ports?: { containerPort: number; hostPort?: number; hostIP?: string; protocol?: string }[] }[] };
  status?: { phase?: string };
}

export interface PortOptions {
  /** The host address every port is published on. */
  bindAddress: "0.0.0.0" | "127.0.0.1";
  /** The host's net.ipv4.ip_unprivileged_port_start: lower ports cannot be bound by the user. */
  unprivilegedPortStart: number;
  /** Host ports the node publishes itself (the API server's): never wanted, never removed. */
  reserved: number[];
  /**
   * The node's own address inside the namespace (slirp4netns: 10.0.2.100). Absent: RootlessKit's
   * default, 127.0.0.1 for the builtin driver, where kube-proxy answers NodePorts only in iptables
   * mode with localhost NodePorts on.
   */
  childIP?: string;
}

/** One port to publish: host `hostIP:hostPort` forwarded to `childIP:childPort` in the namespace. */
export interface WantedPort {
  protocol: "tcp" | "udp";
  hostIP: string;
  hostPort: number;
  childPort: number;
  childIP?: string;
  /** "Service ns/name" or "Pod ns/name". */
  owner: string;
}

/** A port an object asks for that is not published, with a one-line reason naming the fix. */
export interface SkippedPort {
  /** Lower-case, as Kubernetes names it ("sctp" included). */
  protocol: string;
  hostPort: number;
  owner: string;
  reason: string;
}

/** A host port two owners want: `owner` lost to `winner`. */
export interface PortConflict {
  protocol: "tcp" | "udp";
  hostPort: number;
  owner: string;
  winner: string;
  reason: string;
}

export interface WantedPorts {
  /** Sorted by host port, then protocol. */
  ports: WantedPort[];
  skipped: SkippedPort[];
  conflicts: PortConflict[];
  /** options.reserved, for reconcilePorts. */
  reserved: number[];
}

/** RootlessKit's PortSpec (pkg/port/port.go): empty parentIP means 0.0.0.0. */
export interface PortSpec {
  proto: string;
  parentIP?: string;
  parentPort: number;
  childIP?: string;
  childPort: number;
}

/** One entry of RootlessKit's GET /v1/ports. */
export interface PortStatus {
  id: number;
  spec: PortSpec;
}

export interface PortChanges {
  add: PortSpec[];
  /** RootlessKit port ids. */
  remove: number[];
}

interface Candidate {
  protocol: string;
  hostPort: number;
  childPort: number | null;
  owner: string;
}

const FINISHED = new Set(["Succeeded", "Failed"]);
type Named = { metadata: { namespace?: string; name: string } };
const key = (o: Named) => `${o.metadata.namespace ?? "default"}/${o.metadata.name}`;
const byName = (a: Named, b: Named) => key(a).localeCompare(key(b), "en");

function serviceCandidates(s: ServiceObject): Candidate[] {
  const type = s.spec?.type;
  if (type !== "NodePort" && type !== "LoadBalancer") return [];
  const owner = `Service ${key(s)}`;
  return (s.spec?.ports ?? []).flatMap((p) => {
    const protocol = (p.protocol ?? "TCP").toLowerCase();
    const node: Candidate[] = p.nodePort ? [{ protocol, hostPort: p.nodePort, childPort: p.nodePort, owner }] : [];
    return type === "LoadBalancer" ? [...node, { protocol, hostPort: p.port, childPort: p.nodePort ?? null, owner }] : node;
  });
}

// Only spec.containers: the kubelet maps no hostPort of an init container (kubernetes#57443).
function podCandidates(p: PodObject): Candidate[] {
  if (FINISHED.has(p.status?.phase ?? "")) return [];
  const owner = `Pod ${key(p)}`;
  return (p.spec?.containers ?? []).flatMap((c) =>
    (c.ports ?? []).flatMap((cp) =>
      cp.hostPort ? [{ protocol: (cp.protocol ?? "TCP").toLowerCase(), hostPort: cp.hostPort, childPort: cp.hostPort, owner }] : [],
    ),
  );
}

function skipReason(c: Candidate, o: PortOptions): string | null {
  if (c.protocol !== "tcp" && c.protocol !== "udp")
    return `${c.protocol.toUpperCase()} is not forwarded by RootlessKit's builtin port driver (TCP and UDP only); use TCP or UDP`;
  if (o.reserved.includes(c.hostPort))
    return `host port ${c.hostPort} is reserved for the node itself (such as the API server's port); choose another port`;
  if (c.hostPort < o.unprivilegedPortStart)
    return `host port ${c.hostPort} is below net.ipv4.ip_unprivileged_port_start (${o.unprivilegedPortStart}); as root: sysctl net.ipv4.ip_unprivileged_port_start=${c.hostPort}`;
  if (c.childPort === null) return "its port entry has no nodePort (allocateLoadBalancerNodePorts: false): nothing to forward to";
  return null;
}

/**
 * The ports to publish for these Services and Pods (the node's own), with what is skipped and why,
 * and the conflicts: for one host port and protocol the first owner wins, Services before Pods,
 * then by namespace/name. A pod's hostIP is ignored: everything is published on `bindAddress`.
 */
export function wantedPorts(services: readonly ServiceObject[], pods: readonly PodObject[], options: PortOptions): WantedPorts {
  const candidates = [...[...services].sort(byName).flatMap(serviceCandidates), ...[...pods].sort(byName).flatMap(podCandidates)];
  const ports: WantedPort[] = [];
  const skipped: SkippedPort[] = [];
  const conflicts: PortConflict[] = [];
  const taken = new Map<string, WantedPort>();
  for (const c of candidates) {
    const reason = skipReason(c, options);
    if (reason !== null) {
      skipped.push({ protocol: c.protocol, hostPort: c.hostPort, owner: c.owner, reason });
      continue;
    }
    const childPort = c.childPort!;
    const protocol = c.protocol as "tcp" | "udp";
    const slot = `${protocol}/${c.hostPort}`;
    const winner = taken.get(slot);
    if (winner) {
      // The same owner asking twice for one forwarding (a LoadBalancer port equal to its nodePort).
      if (winner.owner === c.owner && winner.childPort === childPort) continue;
      const reason = `host port ${slot} is already published for ${winner.owner}`;
      conflicts.push({ protocol, hostPort: c.hostPort, owner: c.owner, winner: winner.owner, reason });
      continue;
    }
    const port: WantedPort = { protocol, hostIP: options.bindAddress, hostPort: c.hostPort, childPort, owner: c.owner };
    if (options.childIP) port.childIP = options.childIP;
    taken.set(slot, port);
    ports.push(port);
  }
  ports.sort((a, b) => a.hostPort - b.hostPort || a.protocol.localeCompare(b.protocol));
  return { ports, skipped, conflicts, reserved: [...options.reserved] };
}

/** RootlessKit's PortSpec for a wanted port. */
export function portSpecOf(p: WantedPort): PortSpec {
  return {
    proto: p.protocol,
    parentIP: p.hostIP,
    parentPort: p.hostPort,
    ...(p.childIP ? { childIP: p.childIP } : {}),
    childPort: p.childPort,
  };
}

/** What makes two forwardings the same: empty parentIP is 0.0.0.0, an empty childIP the driver's default. */
const identity = (s: PortSpec) => `${s.proto}|${s.parentIP || "0.0.0.0"}|${s.parentPort}|${s.childIP ?? ""}|${s.childPort}`;

/**
 * The RootlessKit calls that turn `current` into exactly `wanted.ports`: an entry that differs in
 * any way (address, port, protocol, child address or port) is removed and the wanted one added.
 * Entries on a reserved host port are the node's own and are left alone. Removals by id, additions
 * in the wanted order.
 */
export function reconcilePorts(wanted: WantedPorts, current: readonly PortStatus[]): PortChanges {
  const missing = new Map(wanted.ports.map((p) => [identity(portSpecOf(p)), portSpecOf(p)]));
  const remove: number[] = [];
  for (const entry of [...current].sort((a, b) => a.id - b.id)) {
    if (wanted.reserved.includes(entry.spec.parentPort)) continue;
    if (!missing.delete(identity(entry.spec))) remove.push(entry.id);
  }
  return { add: [...missing.values()], remove };
}
