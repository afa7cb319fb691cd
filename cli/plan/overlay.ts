// The pod network across hosts (issue 14): a VXLAN overlay after flannel's vxlan backend, as usernetes
// Gen2 runs it, without flanneld. Each node's namespace has one VXLAN device (VNI 1, UDP 8472); its
// address is the .0 of the node's pod range (spec.podCIDR) and its MAC is derived from that address,
// so a node needs to publish only its host's address (the annotation rootless-k8s.io/public-ip) for
// the others to reach its pods: per remote node one route (its range via its VTEP, onlink), one
// neighbour entry (VTEP → MAC) and one forwarding entry (MAC → host address). The UDP port is
// published on the host through RootlessKit's port API while the cluster has another node.
//
// Pure: whether the plan runs the overlay (decideOverlay), and at run time, from the cluster's Nodes
// and what the device has now, the `ip`/`bridge` commands that make the difference (overlayChanges).
import type { LinkView, OverlayState } from "../host/parse/ip-json";
import { VXLAN } from "../host/probes/overlay";
import { formatIpv4, parseCidr } from "./cidr";
import type { NetworkPlan, OverlayPlan, RuntimePlan } from "./plan";

export const OVERLAY_UNIT = "rootless-k8s-overlay.service";
/** The Node annotation that carries a node's host address (flannel: flannel.alpha.coreos.com/public-ip). */
export const PUBLIC_IP_ANNOTATION = "rootless-k8s.io/public-ip";
/**
 * The device's MTU: the pods' (the CNI bridge's default, 1500), so a pod's packet is never too big
 * for it. The encapsulated datagram (50 bytes more) leaves the namespace through the network driver
 * as the payload of a host UDP socket, which the host's kernel fragments if its link needs it.
 */
export const OVERLAY_MTU = 1500;

export function decideOverlay(network: NetworkPlan, runtime: Pick<RuntimePlan, "name">): OverlayPlan {
  const base = { vni: VXLAN.vni, port: VXLAN.port, device: VXLAN.device, mtu: OVERLAY_MTU };
  if (runtime.name === "docker" || network.driver === "docker")
    return {
      ...base,
      enabled: false,
      reasons: [
        "off: the node lives in dockerd's own RootlessKit, whose published ports are dockerd's: a node of --runtime docker is a single node",
      ],
    };
  if (network.portDriver !== "builtin")
    return {
      ...base,
      enabled: false,
      reasons: [
        "off: with pasta RootlessKit has no port API to publish the overlay's UDP port through: a node of --network pasta is a single node (use --network slirp4netns or builtin to join nodes)",
      ],
    };
  return {
    ...base,
    enabled: true,
    reasons: [
      `pods of other nodes are reached through a VXLAN overlay (flannel's vxlan design: VNI ${VXLAN.vni}, device ${VXLAN.device}, MTU ${OVERLAY_MTU}) that ${OVERLAY_UNIT} keeps in step with the cluster's Nodes`,
      `UDP port ${VXLAN.port} is published on the node's host address (the one the other nodes send to) through RootlessKit's port API, only while the cluster has another node; anyone who reaches it can send packets into the pod network, as with flannel: keep it open to the cluster's hosts only`,
    ],
  };
}

/** The VTEP's address: the .0 of the node's pod range (flannel's choice). */
export function vtepAddress(podCidr: string): string | null {
  const net = parseCidr(podCidr);
  return net ? formatIpv4(net.base) : null;
}

/** A MAC derived from the VTEP's address (locally administered, unicast: 0a:58 and the address's four bytes). */
export function vtepMac(vtep: string): string {
  return ["0a", "58", ...vtep.split(".").map((b) => Number(b).toString(16).padStart(2, "0"))].join(":");
}

/** What the overlay reads of a Node. */
export interface OverlayNode {
  metadata: { name: string; annotations?: Record<string, string> };
  spec?: { podCIDR?: string };
  status?: { addresses?: { type: string; address: string }[] };
}

/** A remote node the overlay reaches: its pod range, its VTEP (address and MAC) and its host's address. */
export interface Peer {
  node: string;
  podCidr: string;
  vtep: string;
  mac: string;
  publicIP: string;
}

/** The overlay agent's state file (join and status read it): the peers of the last pass and whether each answered through the overlay. */
export interface OverlayStateFile {
  schemaVersion: 1;
  updated: string;
  /** This node's VTEP; null until the node has a pod range and its device. */
  vtep: string | null;
  peers: { node: string; podCidr: string; vtep: string; publicIP: string; reachable: boolean; error: string | null }[];
  waiting: string[];
}

/**
 * The nodes this node's overlay reaches: every other node with a pod range and the public-ip
 * annotation (a node that runs our overlay sets it), sorted by name. A node without them (still
 * registering, or not a rootless-k8s node) is left out with the reason.
 */
export function peersOf(nodes: readonly OverlayNode[], self: string): { peers: Peer[]; waiting: string[] } {
  const peers: Peer[] = [];
  const waiting: string[] = [];
  for (const n of [...nodes].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    const name = n.metadata.name;
    if (name === self) continue;
    const podCidr = n.spec?.podCIDR;
    const publicIP = n.metadata.annotations?.[PUBLIC_IP_ANNOTATION];
    const vtep = podCidr ? vtepAddress(podCidr) : null;
    if (!podCidr || !vtep) waiting.push(`${name}: no pod range yet (spec.podCIDR)`);
    else if (!publicIP) waiting.push(`${name}: no ${PUBLIC_IP_ANNOTATION} annotation (its overlay is not running)`);
    else peers.push({ node: name, podCidr, vtep, mac: vtepMac(vtep), publicIP });
  }
  return { peers, waiting };
}

/**
 * The commands (argv) that turn `current` (what the device holds, cli/host/parse/ip-json.ts) into exactly `peers`: stale entries removed first, then
 * what is missing or different added (fdb before neighbour before route, the order a packet needs
 * them). An entry already right gets no command, so an unchanged cluster makes none.
 */
export function overlayChanges(device: string, peers: readonly Peer[], current: OverlayState): string[][] {
  const del: string[][] = [];
  const add: string[][] = [];
  const wantRoute = new Map(peers.map((p) => [p.podCidr, p.vtep]));
  const wantNeigh = new Map(peers.map((p) => [p.vtep, p.mac]));
  const wantFdb = new Map(peers.map((p) => [p.mac, p.publicIP]));
  for (const r of current.routes) if (wantRoute.get(r.dst) !== r.gateway) del.push(["ip", "route", "del", r.dst, "dev", device]);
  for (const n of current.neighbours)
    if (wantNeigh.get(n.dst) !== n.lladdr?.toLowerCase()) del.push(["ip", "neigh", "del", n.dst, "dev", device]);
  for (const f of current.fdb)
    if (wantFdb.get(f.mac.toLowerCase()) !== f.dst)
      del.push(["bridge", "fdb", "del", f.mac, "dev", device, ...(f.dst ? ["dst", f.dst] : [])]);
  const haveRoute = new Map(current.routes.map((r) => [r.dst, r.gateway]));
  const haveNeigh = new Map(current.neighbours.map((n) => [n.dst, n.lladdr?.toLowerCase() ?? null]));
  const haveFdb = new Map(current.fdb.map((f) => [f.mac.toLowerCase(), f.dst]));
  for (const p of peers) {
    if (haveFdb.get(p.mac) !== p.publicIP)
      add.push(["bridge", "fdb", "append", p.mac, "dev", device, "dst", p.publicIP, "self", "permanent"]);
    if (haveNeigh.get(p.vtep) !== p.mac) add.push(["ip", "neigh", "replace", p.vtep, "lladdr", p.mac, "dev", device, "nud", "permanent"]);
    if (haveRoute.get(p.podCidr) !== p.vtep) add.push(["ip", "route", "replace", p.podCidr, "via", p.vtep, "dev", device, "onlink"]);
  }
  return [...del, ...add];
}

/**
 * Whether a device already there must be deleted and made anew: what `ip link set` cannot change
 * (the kind, VNI, UDP port or the outer UDP checksum) differs from what deviceCommands makes. A
 * device made by an earlier release sums its outer UDP; a field this iproute2 does not show counts
 * as right.
 */
export function deviceNeedsReplacing(o: Pick<OverlayPlan, "vni" | "port">, link: LinkView): string | null {
  if (!link.vxlan) return "it is not a VXLAN device";
  if (link.vxlan.vni !== null && link.vxlan.vni !== o.vni) return `its VNI is ${link.vxlan.vni}, not ${o.vni}`;
  if (link.vxlan.port !== null && link.vxlan.port !== o.port) return `its UDP port is ${link.vxlan.port}, not ${o.port}`;
  if (link.vxlan.udpCsum === true) return "it sums its outer UDP (udpcsum)";
  return null;
}

/**
 * The commands that create the device (when it is missing) and give it the node's VTEP: VXLAN
 * without learning (every entry comes from the cluster), its MAC derived from the VTEP, the VTEP as
 * a /32, then up. (The agent also sets loose reverse-path filtering on it: RP_FILTER.)
 *
 * The outer UDP checksum is zero (`noudpcsum`), as RFC 7348 says a VXLAN sender SHOULD send it and
 * flannel's device does. With the kernel's default (udpcsum) the outer checksum is wrong whenever
 * netfilter rewrote the inner packet, as kube-proxy does to UDP through a Service (measured on kernel
 * 6.18: the datagram leaves by tap0 with a bad outer checksum and slirp4netns drops it), so UDP
 * through a ClusterIP or NodePort to a pod on another node got no answer (issue 36). The inner
 * packet keeps its own checksum, and between the hosts the datagram is the payload of a host UDP
 * socket, which the host's kernel sums.
 */
export function deviceCommands(o: Pick<OverlayPlan, "vni" | "port" | "device" | "mtu">, vtep: string, exists: boolean): string[][] {
  const mac = vtepMac(vtep);
  return [
    ...(exists
      ? [["ip", "link", "set", o.device, "address", mac]]
      : [
          [
            "ip",
            "link",
            "add",
            o.device,
            "address",
            mac,
            "type",
            "vxlan",
            "id",
            String(o.vni),
            "dstport",
            String(o.port),
            "nolearning",
            "noudpcsum",
          ],
        ]),
    ["ip", "link", "set", o.device, "mtu", String(o.mtu)],
    ["ip", "addr", "replace", `${vtep}/32`, "dev", o.device],
    ["ip", "link", "set", o.device, "up"],
  ];
}

/**
 * The CNI bridge masquerades whatever its pods send outside their node's range (ipMasq): pod to pod
 * across nodes must keep its source (Kubernetes' network model), so traffic that leaves by the
 * overlay device between pod addresses is accepted before that rule (nat POSTROUTING, first).
 */
const KEEP_SOURCE_COMMENT = "rootless-k8s: pod to pod across nodes keeps its source";

export function keepSourceRule(device: string, pods: string): string[] {
  return ["POSTROUTING", "-o", device, "-s", pods, "-d", pods, "-m", "comment", "--comment", KEEP_SOURCE_COMMENT, "-j", "ACCEPT"];
}

/** Where the keep-source rule stands in `iptables -t nat -S POSTROUTING`: the first rule, behind another, or absent. */
export function keepSourcePlace(listing: string): "first" | "behind" | "absent" {
  const rules = listing.split("\n").filter((l) => l.startsWith("-A POSTROUTING "));
  const i = rules.findIndex((l) => l.includes(KEEP_SOURCE_COMMENT));
  return i < 0 ? "absent" : i === 0 ? "first" : "behind";
}

/**
 * Loose reverse-path filtering on the device (usernetes' rp_filter 2): a decapsulated packet's source
 * is a remote pod. The namespace's own sysctl, which its user namespace's root may set; the host's
 * stays as it is.
 */
export const RP_FILTER = { value: "2", path: (device: string) => `/proc/sys/net/ipv4/conf/${device}/rp_filter` } as const;
