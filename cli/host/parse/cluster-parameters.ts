// What a rootless-k8s control plane publishes for the hosts that join it (ConfigMap
// kube-system/rootless-k8s-cluster, written by cli/render/join.ts): its networks, DNS and version,
// which a worker's plan must share. Parsed field by field: the joiner trusts only what it checked.

/** Where a control plane publishes what its workers need (cli/render/join.ts writes it, `join` reads it). */
export const CLUSTER_PARAMETERS = { namespace: "kube-system", name: "rootless-k8s-cluster", key: "cluster.json" } as const;

/** The control plane's settings every node of its cluster must share. */
export interface ClusterParameters {
  /** The pod network: the controller-manager gives each node a /24 of it. */
  pods: string;
  services: string;
  firstServiceIP: string;
  /** Cluster DNS (CoreDNS's Service address and the domain), or null when the control plane has none. */
  dns: { serviceIP: string; domain: string } | null;
  /** The control plane's Kubernetes version, without "v". */
  kubernetes: string;
}

const CIDR = /^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/;
export const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const VERSION = /^\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?$/;

/** The ConfigMap's JSON, checked field by field; null when it is not what a control plane writes. */
export function parseClusterParameters(text: string): ClusterParameters | null {
  let v: Partial<ClusterParameters>;
  try {
    v = JSON.parse(text) as Partial<ClusterParameters>;
  } catch {
    return null;
  }
  if (!v || typeof v !== "object") return null;
  const str = (x: unknown, re: RegExp) => typeof x === "string" && re.test(x);
  if (!str(v.pods, CIDR) || !str(v.services, CIDR) || !str(v.firstServiceIP, IPV4) || !str(v.kubernetes, VERSION)) return null;
  const dns = v.dns ?? null;
  if (dns !== null && (!str(dns.serviceIP, IPV4) || typeof dns.domain !== "string" || !/^[a-z0-9.-]+$/.test(dns.domain))) return null;
  return {
    pods: v.pods as string,
    services: v.services as string,
    firstServiceIP: v.firstServiceIP as string,
    dns,
    kubernetes: v.kubernetes as string,
  };
}
