// The plan of a worker: a node that joins another host's control plane (`rootless-k8s join`).
// Pure: this host's own plan (mode, runtime, network, paths: built from its facts as for install)
// and what the control plane publishes (its networks, DNS and version) in, the worker's plan out.
// A worker runs the runtime, the kubelet and kube-proxy; no etcd, no control plane, no add-ons.
import { ExitCode, UserError } from "../errors";
import { withNodeRange } from "./network";
import { decideOnDemand } from "./on-demand";
import type { JoinPlan, Plan } from "./plan";
import { atLeast } from "./rules";
import { CLUSTER_PARAMETERS, type ClusterParameters, IPV4 } from "../host/parse/cluster-parameters";

export { CLUSTER_PARAMETERS, parseClusterParameters, type ClusterParameters } from "../host/parse/cluster-parameters";

/** What a join knows besides this host's plan: the verified control plane, and the node's address. */
export interface WorkerInputs {
  server: string;
  caPem: string;
  caHash: string;
  cluster: ClusterParameters;
  /** --node-ip; default: the host's first address that is not loopback. */
  nodeIP?: string;
  /** The node's pod network, once the controller-manager gave it one (a re-join or an upgrade keeps it). */
  podCidr?: string | null;
}

/** Why a worker may not run `version` against a control plane of `controlPlane`: null when it may. */
export function workerSkewProblem(version: string, controlPlane: string): string | null {
  if (atLeast(controlPlane, version)) return null;
  return `this worker's Kubernetes ${version} is newer than its control plane's ${controlPlane}: a kubelet may never be newer than the API server (Kubernetes' version skew policy)`;
}

/**
 * The worker's plan: `base` is this host's own plan for the same flags (as install would build
 * it); the control plane decides the networks and DNS, the kubelet's port is published on the
 * host (the control plane reaches the kubelet at the node's host address), and only the runtime,
 * the kubelet and kube-proxy run.
 */
export function workerPlan(base: Plan, w: WorkerInputs): Plan {
  const k8s = base.versions.components.kubernetes ?? "0";
  const skew = workerSkewProblem(k8s, w.cluster.kubernetes);
  if (skew)
    throw new UserError(`refusing to join: ${skew}`, {
      exitCode: ExitCode.Refused,
      fix: `upgrade the control plane first (rootless-k8s upgrade on that host), or join with a rootless-k8s release of Kubernetes ${w.cluster.kubernetes}`,
    });
  if (base.overlay && !base.overlay.enabled)
    throw new UserError(`refusing to join: this node could not reach the other nodes' pods (${base.overlay.reasons[0]})`, {
      exitCode: ExitCode.Refused,
      fix: "join with --network slirp4netns or --network builtin (and without --runtime docker)",
    });
  const nodeIP = w.nodeIP ?? base.pki.hostAddresses[0];
  if (!nodeIP)
    throw new UserError("this host has no address besides loopback: the control plane could not reach its kubelet", {
      exitCode: ExitCode.Refused,
      fix: "connect the host to the network the control plane is on, or name the address with --node-ip ADDR",
    });
  if (!IPV4.test(nodeIP))
    throw new UserError(`--node-ip ${nodeIP} is not an IPv4 address`, { exitCode: ExitCode.Usage, fix: "pass --node-ip A.B.C.D" });
  const kubeletPort = base.ports.kubelet;
  const published = base.network.forwardsAllPorts
    ? base.network.published.filter((p) => p.namespacePort !== base.ports.apiServer)
    : [{ hostIP: "0.0.0.0", hostPort: kubeletPort, namespacePort: kubeletPort, protocol: "tcp" as const }];
  const join: JoinPlan = {
    server: w.server,
    caPem: w.caPem,
    caHash: w.caHash,
    nodeIP,
    controlPlaneVersion: w.cluster.kubernetes,
    reasons: [
      `joins the control plane at ${w.server} (its CA pinned by ${w.caHash.slice(0, 19)}…), Kubernetes ${w.cluster.kubernetes}`,
      `advertises ${nodeIP} (the kubelet's --node-ip): the control plane reaches the kubelet there, on host port ${kubeletPort}`,
    ],
  };
  const dns = base.addons?.dns;
  const off = (what: string) => [`a worker runs no ${what} of its own: the control plane's serves the cluster`];
  return {
    ...base,
    role: "worker",
    join,
    node: { ...base.node, ip: nodeIP },
    network: {
      ...base.network,
      published,
      reasons: [
        ...base.network.reasons.filter((r) => !r.includes("publishes the API server")),
        `RootlessKit's ${base.network.portDriver} port driver publishes the kubelet on host port ${kubeletPort}`,
      ],
    },
    cidrs: withNodeRange(
      {
        pods: w.cluster.pods,
        services: w.cluster.services,
        firstServiceIP: w.cluster.firstServiceIP,
        reasons: [`the control plane's networks (ConfigMap ${CLUSTER_PARAMETERS.namespace}/${CLUSTER_PARAMETERS.name})`],
      },
      w.podCidr ?? null,
    ),
    ...(dns
      ? {
          addons: {
            dns: {
              ...dns,
              enabled: w.cluster.dns !== null,
              serviceIP: w.cluster.dns?.serviceIP ?? dns.serviceIP,
              domain: w.cluster.dns?.domain ?? dns.domain,
              reasons: w.cluster.dns
                ? [`pods resolve through the control plane's CoreDNS at ${w.cluster.dns.serviceIP}`]
                : ["the control plane has no cluster DNS: pods use the node's resolv.conf"],
            },
            ...(base.addons?.storage ? { storage: { ...base.addons.storage, enabled: false, reasons: off("storage provisioner") } } : {}),
            ...(base.addons?.metrics ? { metrics: { ...base.addons.metrics, enabled: false, reasons: off("metrics-server") } } : {}),
          },
        }
      : {}),
    // Every node serves NodePorts and LoadBalancer ports, so the worker publishes them on its own
    // host too; the control plane's publisher alone writes a LoadBalancer's ingress addresses.
    ...(base.publish
      ? {
          publish: {
            ...base.publish,
            ingressIPs: [],
            reasons: [
              ...base.publish.reasons,
              "with the kubelet's own credential (system:node: it reads Services and this node's pods and writes Events); the control plane's publisher sets LoadBalancer ingress addresses",
            ],
          },
        }
      : {}),
    units: { ...base.units, csrApprover: null },
    onDemand: decideOnDemand({ ...base.units, csrApprover: null }, "worker"),
  };
}

/** A plan's role; plans written before workers existed are servers. */
export function roleOf(plan: Pick<Plan, "role">): "server" | "worker" {
  return plan.role ?? "server";
}

/**
 * One host runs one node: `install` over a worker, or `join` over a server, would turn one into the
 * other and lose its state. Null when the command fits the node already there (or there is none).
 */
export function roleConflict(command: "install" | "upgrade" | "join", previous: Pick<Plan, "role" | "join"> | null): UserError | null {
  if (!previous) return null;
  if (command === "install" && roleOf(previous) === "worker")
    return new UserError(
      `this host's node is a worker of ${previous.join?.server ?? "another control plane"}: install would turn it into a control plane`,
      {
        exitCode: ExitCode.Refused,
        fix: "remove it first (rootless-k8s uninstall: it leaves the cluster), or upgrade it (rootless-k8s upgrade)",
      },
    );
  if (command === "join" && roleOf(previous) === "server")
    return new UserError("this host runs a control plane of its own (rootless-k8s install): a host is one node", {
      exitCode: ExitCode.Refused,
      fix: "join from another host, or remove this node first: rootless-k8s uninstall",
    });
  return null;
}

/** What a worker's own networks (its namespace's) must avoid: its control plane's address, the cluster's networks. */
export function workerAvoids(server: string, cluster: Pick<ClusterParameters, "pods" | "services">): string[] {
  const host = new URL(server).hostname;
  return [...(IPV4.test(host) ? [`${host}/32`] : []), cluster.pods, cluster.services];
}
