// The node's network: a RootlessKit network driver (slirp4netns, pasta or RootlessKit 3's built-in
// gvisor-tap-vsock, whichever the host has, in that order), MTU 65520, the API server port published
// on the host, and pod/service/namespace networks that avoid every route of the host.
import * as path from "node:path";
import { ExitCode, UserError } from "../errors";
import { PASTA_FOR_ROOTLESSKIT, pastaBlocker } from "../host/pasta";
import type { Facts } from "../host/facts";
import { firstFree, formatCidr, nthAddress, parseCidr } from "./cidr";
import type { Cidrs, NetworkDriver, NetworkPlan, Paths, PlanOptions, Ports, VersionSet } from "./plan";
import { ROOTLESSKIT_NETWORK_FLOORS, atLeast } from "./rules";

export const MTU = 65520;

export const DEFAULT_PORTS: Ports = {
  apiServer: 6443,
  etcdClient: 2379,
  etcdPeer: 2380,
  kubelet: 10250,
  kubeletHealthz: 10248,
  controllerManager: 10257,
  scheduler: 10259,
  kubeProxyHealthz: 10256,
  kubeProxyMetrics: 10249,
};

/** Candidates, most conventional first. Each list is tried in order against the host's routes. */
export const NAMESPACE_CIDRS = ["10.0.2.0/24", "10.0.3.0/24", "10.203.0.0/24", "172.29.255.0/24", "192.168.203.0/24"];
export const POD_CIDRS = ["10.244.0.0/16", "10.88.0.0/16", "10.42.0.0/16", "172.30.0.0/16", "192.168.128.0/18"];
export const SERVICE_CIDRS = ["10.96.0.0/16", "10.43.0.0/16", "10.112.0.0/16", "172.31.0.0/16", "192.168.192.0/18"];

/** The host's routes that a node network must not overlap (the default route excluded). */
export function hostRouteCidrs(facts: Facts): string[] {
  return facts.network.routes.map((r) => r.cidr).filter((c) => !c.endsWith("/0"));
}

/**
 * `avoid`: networks besides the host's routes that the node's must not overlap: for a worker, its
 * control plane's address (reached through the namespace's default route, never on its link) and
 * the cluster's pod and service networks.
 */
export function chooseCidrs(facts: Facts, avoid: readonly string[] = []): { cidrs: Cidrs; namespaceCidr: string } {
  const routes = [...hostRouteCidrs(facts), ...avoid];
  const pick = (what: string, candidates: string[], taken: string[]): string => {
    const free = firstFree(candidates, taken);
    if (!free) {
      throw new UserError(`every candidate ${what} network overlaps a route of this host (${candidates.join(", ")})`, {
        exitCode: ExitCode.Refused,
        fix: "free one of those ranges on the host, or report the host's `ip route` output as a bug",
      });
    }
    return free;
  };
  const namespaceCidr = pick("namespace", NAMESPACE_CIDRS, routes);
  const pods = pick("pod", POD_CIDRS, [...routes, namespaceCidr]);
  const services = pick("service", SERVICE_CIDRS, [...routes, namespaceCidr, pods]);
  const reasons = [
    routes.length
      ? `pod ${pods}, service ${services} and namespace ${namespaceCidr} avoid the host's routes (${routes.join(", ")})`
      : "the host has no routes besides the default one",
  ];
  return { cidrs: withNodeRange({ pods, services, firstServiceIP: nthAddress(services, 1), reasons }, null), namespaceCidr };
}

interface DriverCandidate {
  driver: NetworkDriver;
  binary: string | null;
  why: string;
}

export function decideNetwork(
  facts: Facts,
  options: PlanOptions,
  versions: VersionSet,
  paths: Paths,
  ports: Ports,
  namespaceCidr: string,
): NetworkPlan {
  const rk = versions.components.rootlesskit ?? "0";
  const supports = (d: NetworkDriver) => atLeast(rk, ROOTLESSKIT_NETWORK_FLOORS[d].version);
  const hostSlirp = facts.runtimes.slirp4netns?.path ?? null;
  const hostPasta = facts.runtimes.pasta?.path ?? null;
  const bundledSlirp = versions.components.slirp4netns ? path.join(paths.binDir, "slirp4netns") : null;

  const candidate = (d: NetworkDriver): DriverCandidate | string => {
    if (!supports(d)) return `RootlessKit ${rk} has no ${d} driver (${ROOTLESSKIT_NETWORK_FLOORS[d].why})`;
    switch (d) {
      case "slirp4netns":
        if (hostSlirp)
          return {
            driver: d,
            binary: hostSlirp,
            why: `slirp4netns ${facts.runtimes.slirp4netns?.version ?? ""} found at ${hostSlirp}`.replace("  ", " "),
          };
        if (bundledSlirp)
          return { driver: d, binary: bundledSlirp, why: `slirp4netns ${versions.components.slirp4netns} from the version set` };
        return "slirp4netns is not installed and not in the version set";
      case "pasta": {
        const p = facts.runtimes.pasta;
        if (!p || !hostPasta) return "pasta (passt) is not installed";
        const blocker = pastaBlocker(p);
        if (blocker) return blocker;
        const version = p.version ? `pasta ${p.version}` : "pasta (no version printed; it knows --host-lo-to-ns-lo: 2024_10_30 or later)";
        return { driver: d, binary: hostPasta, why: `${version} found at ${hostPasta}` };
      }
      case "builtin":
        return { driver: d, binary: null, why: `RootlessKit ${rk}'s built-in gvisor-tap-vsock driver` };
    }
  };

  let chosen: DriverCandidate;
  const reasons: string[] = [];
  if (options.network) {
    const c = candidate(options.network);
    if (typeof c === "string") {
      throw new UserError(`--network ${options.network} is not possible: ${c}`, {
        exitCode: ExitCode.Refused,
        fix:
          options.network === "pasta" && facts.runtimes.pasta
            ? `install passt ${PASTA_FOR_ROOTLESSKIT} or later, or leave --network out to pick what this host has (slirp4netns or the built-in driver)`
            : "leave --network out to pick what this host has, or install the driver",
      });
    }
    chosen = c;
    reasons.push(`--network ${c.driver}: ${c.why}`);
  } else {
    // The host's own slirp4netns, then RootlessKit 3's built-in driver, then pasta; the bundled
    // slirp4netns last, for a RootlessKit that has neither. pasta comes after the built-in driver:
    // it forwards only ports a program listens on, so the cluster's NodePort, LoadBalancer and
    // hostPort ports (iptables rules, no socket) stay unreachable from the host (measured in the
    // e2e matrix), while the built-in driver publishes them through RootlessKit's port API.
    const order: DriverCandidate[] = [];
    if (hostSlirp && supports("slirp4netns")) order.push(candidate("slirp4netns") as DriverCandidate);
    const builtin = candidate("builtin");
    if (typeof builtin !== "string") order.push(builtin);
    const pasta = candidate("pasta");
    if (typeof pasta !== "string") order.push(pasta);
    const slirp = candidate("slirp4netns");
    if (typeof slirp !== "string") order.push(slirp);
    const first = order[0];
    if (!first) {
      throw new UserError(`no usable RootlessKit network driver: RootlessKit ${rk} with neither slirp4netns nor pasta on this host`, {
        exitCode: ExitCode.Refused,
        fix: "install slirp4netns (apt-get install slirp4netns / dnf install slirp4netns)",
      });
    }
    chosen = first;
    reasons.push(`${first.driver}: ${first.why} (preference: slirp4netns, built-in, pasta)`);
    if (typeof pasta === "string" && facts.runtimes.pasta) reasons.push(`the host's pasta is not used: ${pasta}`);
  }

  const forwardsAllPorts = chosen.driver === "pasta";
  const api = apiServerAddress(options);
  const published = forwardsAllPorts
    ? namespacePorts(ports).map((p) => ({ hostIP: "0.0.0.0", hostPort: p, namespacePort: p, protocol: "tcp" as const }))
    : [{ hostIP: api.hostIP, hostPort: ports.apiServer, namespacePort: ports.apiServer, protocol: "tcp" as const }];
  if (forwardsAllPorts)
    reasons.push(
      "pasta forwards every port a program of the node listens on to the host, on every address of the host (RootlessKit's implicit port driver; the API server's too, whatever --node-ip says); NodePort, LoadBalancer and hostPort ports are iptables rules, not sockets, so they are not reachable from the host",
    );
  else reasons.push(`RootlessKit's builtin port driver publishes the API server on ${api.hostIP}:${ports.apiServer}: ${api.why}`);
  return {
    driver: chosen.driver,
    binary: chosen.binary,
    portDriver: forwardsAllPorts ? "implicit" : "builtin",
    mtu: MTU,
    namespaceCidr,
    namespaceIP: nthAddress(namespaceCidr, 100),
    published,
    forwardsAllPorts,
    reasons,
  };
}

/**
 * Where the API server is published on the host. A node alone: on loopback, so neither other users
 * of the host nor other machines reach it (kind does the same); its users and agents reach it at
 * 127.0.0.1. A node that other hosts join (--node-ip, which `token create` requires): on every
 * address, since workers reach it at the host's address.
 */
export function apiServerAddress(options: Pick<PlanOptions, "nodeIP">): { hostIP: string; why: string } {
  return options.nodeIP
    ? { hostIP: "0.0.0.0", why: `--node-ip ${options.nodeIP}: the hosts that join reach it at this host's address` }
    : {
        hostIP: "127.0.0.1",
        why: "this host only, as kind does: no other machine reaches it (other users of this host do, and without a certificate only its health endpoints answer them); install --node-ip ADDR publishes it for hosts that join",
      };
}

/** slirp4netns' default network, the one dockerd-rootless.sh's RootlessKit takes unless told otherwise. */
export const DOCKER_DEFAULT_NAMESPACE = "10.0.2.100/24";

/**
 * The docker runtime: dockerd-rootless.sh's RootlessKit owns the network, and the node takes its
 * address as read inside that namespace (facts), else slirp4netns' default (10.0.2.0/24, the node
 * at .100); rootless-k8s publishes the API port through its API.
 */
export function dockerNetwork(options: PlanOptions, ports: Ports, namespaceAddress?: string | null): NetworkPlan {
  if (options.network) {
    throw new UserError(`--network ${options.network} does not apply to --runtime docker: dockerd's own RootlessKit chose the network`, {
      exitCode: ExitCode.Refused,
      fix: "drop --network (set DOCKERD_ROOTLESS_ROOTLESSKIT_NET for dockerd instead)",
    });
  }
  const address = namespaceAddress && parseCidr(namespaceAddress) ? namespaceAddress : DOCKER_DEFAULT_NAMESPACE;
  const namespaceCidr = formatCidr(parseCidr(address)!);
  return {
    driver: "docker",
    binary: null,
    portDriver: "builtin",
    mtu: MTU,
    namespaceCidr,
    namespaceIP: address.split("/")[0]!,
    published: [{ hostIP: apiServerAddress(options).hostIP, hostPort: ports.apiServer, namespacePort: ports.apiServer, protocol: "tcp" }],
    forwardsAllPorts: false,
    reasons: [
      `dockerd's RootlessKit (dockerd-rootless.sh) owns the network namespace the node joins: ${namespaceCidr}${namespaceAddress ? ", read inside it" : " (slirp4netns' default: it could not be read)"}`,
      `the API server port ${ports.apiServer} is published on ${apiServerAddress(options).hostIP} through that RootlessKit's API (rootlessctl add-ports): ${apiServerAddress(options).why}`,
    ],
  };
}

/** The size of each node's part of the pod network (the controller-manager's --node-cidr-mask-size). */
export const NODE_CIDR_MASK = 24;

/**
 * The range the controller-manager gives the first node of a cluster: the pod network's first /24
 * (its range allocator hands out the lowest free one). Install writes the CNI network for it at
 * once and checks it once the node is Ready; null when the pod network is smaller than a /24.
 */
export function firstNodeRange(pods: string): string | null {
  const net = parseCidr(pods);
  return net && net.prefix <= NODE_CIDR_MASK ? formatCidr({ base: net.base, prefix: NODE_CIDR_MASK }) : null;
}

/**
 * The node's own part of the pod network (`cidrs.node`), with the reason: the /24 the
 * controller-manager gave it, or null until it registers (the CNI network is written then).
 */
export function withNodeRange(cidrs: Cidrs, node: string | null): Cidrs {
  const reasons = cidrs.reasons.filter((r) => !r.startsWith("this node's pods"));
  return {
    ...cidrs,
    node,
    reasons: [
      ...reasons,
      node
        ? `this node's pods get addresses of ${node}, the range the controller-manager gave it (its spec.podCIDR)`
        : "this node's pods get addresses of the /24 the controller-manager gives it (its spec.podCIDR) once it registers: the CNI network is written then",
    ],
  };
}

/** Every TCP port the node listens on inside the namespace, sorted. */
export function namespacePorts(ports: Ports): number[] {
  return [...new Set(Object.values(ports))].sort((a, b) => a - b);
}
