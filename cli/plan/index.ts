// cli/plan: turns host facts and the user's choices into one typed Plan, with no side effects.
//   buildPlan(facts, options, versions) → Plan        refuses an unusable choice (UserError, exit 3)
//   validatePlan(plan, facts, {previous})              refuses a plan the host cannot run, before
//                                                      anything is written (port in use, CIDR
//                                                      overlapping a route, runtime too old, ...)
// The plan is then rendered by cli/render and written by cli/apply.
import { installPackage } from "../doctor/fixes";
import { decideSupervisor } from "./supervisor";
import { choosePort, holderWords } from "../doctor/port-choice";
import { ExitCode, UserError } from "../errors";
import type { Facts } from "../host/facts";
import { NFTABLES_PROXY, nftablesProxyBlocker } from "../host/kube-proxy";
import { decideAddons } from "./addons";
import { firstFree, overlapping } from "./cidr";
import { decideKubelet } from "./kubelet";
import { evictionProblem } from "./eviction";
import { noneGivesUp } from "../doctor/verdict";
import { decideMode } from "./mode";
import { DEFAULT_PORTS, NAMESPACE_CIDRS, chooseCidrs, decideNetwork, dockerNetwork, hostRouteCidrs } from "./network";
import { decideNode, decideNodeIP } from "./node";
import { DEFAULT_NODE_PORTS } from "./node-ports";
import { OVERLAY_UNIT, decideOverlay } from "./overlay";
import { NETPOL_UNIT, decideNetworkPolicy } from "./network-policy";
import { planPaths } from "./paths";
import { PORTS_UNIT, decidePublish } from "./publish";
import { PLAN_SCHEMA_VERSION, type Plan, type PlanOptions, type Ports, type UnitNames, type VersionSet } from "./plan";
import { CONTAINERD_2_FOR_KUBERNETES, CONTAINERD_CRI_V1, RUNTIME_FLOORS, atLeast } from "./rules";
import { decideRuntime, dockerdLimitsContainers } from "./runtime";
import { requireVersion } from "./versions";

export type * from "./plan";
export { PLAN_SCHEMA_VERSION } from "./plan";
export { versionSetOf } from "./versions";
export { planPaths } from "./paths";

import { LOG_FILE_CAP_BYTES, LOG_GENERATIONS } from "./logging";
import { decideMemory } from "./memory";
import { decideOnDemand } from "./on-demand";

export const UNIT_PREFIX = "rootless-k8s";

export const APPROVER_UNIT = `${UNIT_PREFIX}-csr-approver.service`;

/** The timer that rotates the units' log files where there is no journal (its service has the same name, .service). */
export const LOGROTATE_TIMER = `${UNIT_PREFIX}-logrotate.timer`;

export function unitNames(plan: Pick<Plan, "runtime" | "publish" | "role" | "overlay" | "logging" | "networkPolicy">): UnitNames {
  const docker = plan.runtime.name === "docker";
  return {
    target: `${UNIT_PREFIX}.target`,
    owner: docker ? (plan.runtime.docker?.unit ?? "docker.service") : `${UNIT_PREFIX}-rootlesskit.service`,
    etcd: `${UNIT_PREFIX}-etcd.service`,
    apiServer: `${UNIT_PREFIX}-kube-apiserver.service`,
    controllerManager: `${UNIT_PREFIX}-kube-controller-manager.service`,
    scheduler: `${UNIT_PREFIX}-kube-scheduler.service`,
    kubelet: `${UNIT_PREFIX}-kubelet.service`,
    kubeProxy: `${UNIT_PREFIX}-kube-proxy.service`,
    criDockerd: docker ? `${UNIT_PREFIX}-cri-dockerd.service` : null,
    ports: plan.publish?.enabled ? PORTS_UNIT : null,
    csrApprover: plan.role === "worker" ? null : APPROVER_UNIT,
    overlay: plan.overlay?.enabled ? OVERLAY_UNIT : null,
    networkPolicy: plan.networkPolicy?.enforced ? NETPOL_UNIT : null,
    logRotate: plan.logging.to === "file" ? LOGROTATE_TIMER : null,
  };
}

export function buildPlan(facts: Facts, options: PlanOptions, versions: VersionSet): Plan {
  requireVersion(versions, "kubernetes");
  const mode = decideMode(facts, options);
  const supervisor = decideSupervisor(facts, options);
  const paths = planPaths(facts, options, versions);
  const ports: Ports = { ...DEFAULT_PORTS, apiServer: options.apiPort ?? DEFAULT_PORTS.apiServer };
  const { cidrs, namespaceCidr } = chooseCidrs(facts, options.avoidCidrs);
  const runtime = decideRuntime(facts, options, versions, mode.name, paths);
  const network =
    runtime.name === "docker"
      ? dockerNetwork(options, ports, facts.runtimes.docker?.namespaceAddress)
      : decideNetwork(facts, options, versions, paths, ports, namespaceCidr);
  const proxy = decideProxy(facts);
  const hostAddresses = facts.network.addresses.filter((a) => !a.startsWith("127."));
  const plan: Omit<Plan, "units"> = {
    schemaVersion: PLAN_SCHEMA_VERSION,
    user: { name: facts.user.name, uid: facts.user.uid, gid: facts.user.gid },
    arch: facts.arch,
    // dockerd on its systemd driver limits each container: mode none gives up less (doctor/verdict.ts).
    mode: mode.name === "none" && dockerdLimitsContainers(runtime) ? { ...mode, givesUp: noneGivesUp(true) } : mode,
    versions,
    rootlesskit: {
      version: requireVersion(versions, "rootlesskit"),
      evacuateCgroup2: mode.name === "delegated" ? "rootlesskit_evacuation" : null,
    },
    runtime,
    network: { ...network, nodePorts: options.nodePortRange ?? DEFAULT_NODE_PORTS },
    cidrs,
    ports,
    node: withIP(decideNode(facts, mode.name, options), decideNodeIP(options.nodeIP, hostAddresses, network)),
    kubelet: decideKubelet(facts, mode.name, options, versions, runtime.name),
    proxy,
    pki: {
      algorithm: options.pkiAlgorithm ?? "ecdsa-p256",
      hostnames: facts.network.hostname ? [facts.network.hostname] : [],
      hostAddresses,
    },
    addons: decideAddons(cidrs, network.driver, paths.dataDir, versions, options, mode.name),
    publish: decidePublish(
      { network, rootlesskitVersion: requireVersion(versions, "rootlesskit"), proxy: proxy.mode, hostAddresses, home: paths.home },
      options,
    ),
    overlay: decideOverlay(network, runtime),
    networkPolicy: decideNetworkPolicy(facts, options, runtime.name, proxy.mode),
    memory: decideMemory(),
    paths,
    supervisor,
    logging:
      supervisor.kind === "up" || facts.systemd.journal === false
        ? {
            to: "file",
            reasons: [
              `${supervisor.kind === "up" ? "`rootless-k8s up` runs the node" : "the user manager has no journal"}: each unit appends to ${paths.logDir}/<unit>.log, rotated past ${LOG_FILE_CAP_BYTES / 2 ** 20} MiB every 5 minutes (${LOGROTATE_TIMER}; ${LOG_GENERATIONS} older generations kept)`,
            ],
          }
        : { to: "journal", reasons: ["unit output goes to the journal (journalctl --user -u UNIT)"] },
  };
  const units = unitNames(plan);
  return { ...plan, units, onDemand: decideOnDemand(units, "server") };
}

function withIP<T extends object>(node: T, ip: string | undefined): T & { ip?: string } {
  return ip === undefined ? node : { ...node, ip };
}

/**
 * Service traffic is masqueraded (SNAT to the bridge's address) always: without br_netfilter, a
 * pod's connection to a Service whose endpoint is another pod on the node's bridge gets replies
 * straight over the bridge, past the Service NAT, and fails. A user can neither load br_netfilter
 * nor count on it after a reboot (it is loaded on demand, e.g. by Docker); the e2e's VM has none.
 * The price: pods see the bridge's address as the source of Service connections.
 */
const MASQUERADE_ALL =
  "masqueradeAll: Service connections are SNATed to the bridge's address, so pod-to-Service-to-pod traffic on the node works without br_netfilter (which a user can neither load nor rely on)";

/** kube-proxy's mode: iptables when the host has it, else nftables (refused by planProblems where kube-proxy would refuse it). */
function decideProxy(facts: Facts): Plan["proxy"] {
  const iptables = facts.runtimes.iptables;
  if (iptables?.path)
    return {
      mode: "iptables",
      masqueradeAll: true,
      reasons: [`iptables ${iptables.version ?? ""} (${iptables.backend ?? "unknown"} backend) found`.replace("  ", " "), MASQUERADE_ALL],
    };
  const nft = facts.runtimes.nft;
  return {
    mode: "nftables",
    masqueradeAll: true,
    reasons: [
      `iptables is not installed: kube-proxy uses nftables (${nft ? `nft ${nft.version ?? "(version unknown)"}` : "nft not found"}, kernel ${facts.kernel.release}; it needs kernel ${NFTABLES_PROXY.kernel}+ and nft ${NFTABLES_PROXY.nft}+)`,
      MASQUERADE_ALL,
    ],
  };
}

export interface Problem {
  id: "port-in-use" | "port-privileged" | "cidr-overlap" | "runtime-too-old" | "kube-proxy-backend" | "eviction-threshold";
  message: string;
  fix: string;
}

export interface ValidateOptions {
  /** The plan of the node already installed (from the receipt): its own ports are not "in use". */
  previous?: Plan | null;
}

/** Everything that stops this plan from running on this host; empty when it can run. */
export function planProblems(plan: Plan, facts: Facts, opts: ValidateOptions = {}): Problem[] {
  const problems: Problem[] = [];
  const own = opts.previous?.network.published.map((p) => p.hostPort) ?? [];
  const unprivilegedStart = facts.features.ipUnprivilegedPortStart ?? 1024;
  for (const p of plan.network.published) {
    // Held by someone else, by the socket's owner: a port the receipt lists is ours only while we hold it.
    const c = choosePort(facts.network.listeners, { wanted: p.hostPort, fixed: true, own, uid: facts.user.uid });
    if (c.kind === "taken") {
      problems.push({
        id: "port-in-use",
        message: `host port ${p.hostPort} is already in use (by ${holderWords(c.holders, facts.network.listenerNames)})`,
        fix:
          plan.role === "worker"
            ? `stop what listens on ${p.hostPort} (ss -ltnp 'sport = :${p.hostPort}'): the control plane reaches this worker's kubelet there`
            : p.namespacePort === plan.ports.apiServer
              ? `pick a free port with --api-port ${c.free}, or stop what listens on ${p.hostPort} (ss -ltnp 'sport = :${p.hostPort}')`
              : `stop what listens on ${p.hostPort} (ss -ltnp 'sport = :${p.hostPort}'), or use --network slirp4netns, which publishes only the API port`,
      });
    }
    if (p.hostPort < unprivilegedStart) {
      problems.push({
        id: "port-privileged",
        message: `host port ${p.hostPort} is below net.ipv4.ip_unprivileged_port_start (${unprivilegedStart})`,
        fix: `use --api-port 6443 (or any port >= ${unprivilegedStart}), or as root: sysctl -w net.ipv4.ip_unprivileged_port_start=${p.hostPort}`,
      });
    }
  }
  const routes = hostRouteCidrs(facts);
  const networks: [string, string][] = [
    ["pod", plan.cidrs.pods],
    ["service", plan.cidrs.services],
    ["namespace", plan.network.namespaceCidr],
  ];
  for (const [what, cidr] of networks) {
    const hit = overlapping(cidr, routes);
    if (hit.length) {
      problems.push({
        id: "cidr-overlap",
        message: `the ${what} network ${cidr} overlaps the host route ${hit.join(", ")}`,
        fix:
          what === "namespace" && plan.network.driver === "docker"
            ? `that network is rootless dockerd's (its RootlessKit's): give it another one, e.g. \`systemctl --user edit docker.service\` with [Service] Environment=DOCKERD_ROOTLESS_ROOTLESSKIT_FLAGS=--cidr=${firstFree(NAMESPACE_CIDRS, [...routes, plan.cidrs.pods, plan.cidrs.services]) ?? "<a free /24>"}, then \`systemctl --user restart docker\` and install again`
            : "re-run install without the old plan so it picks free networks (rootless-k8s uninstall, then install)",
      });
    }
  }
  const rt = plan.runtime;
  const k8s = plan.versions.components.kubernetes ?? "0";
  const floor = RUNTIME_FLOORS[rt.name][plan.mode.name];
  if (!atLeast(rt.version, floor.version)) {
    problems.push({
      id: "runtime-too-old",
      message: `${rt.name} ${rt.version} is below ${floor.version}, the minimum for mode ${plan.mode.name}: ${floor.why}`,
      fix:
        rt.source === "host"
          ? `upgrade ${rt.name}, or use the bundled containerd (--runtime containerd without --runtime-bin)`
          : "use a version set with a newer runtime",
    });
  } else if (rt.name === "containerd" && !atLeast(rt.version, CONTAINERD_CRI_V1.version)) {
    problems.push({
      id: "runtime-too-old",
      message: `containerd ${rt.version} is below ${CONTAINERD_CRI_V1.version}: ${CONTAINERD_CRI_V1.why}`,
      fix: "upgrade containerd to 1.6 or later, or drop --runtime-bin to use the bundled containerd",
    });
  } else if (
    rt.name === "containerd" &&
    atLeast(k8s, CONTAINERD_2_FOR_KUBERNETES.since) &&
    !atLeast(rt.version, CONTAINERD_2_FOR_KUBERNETES.version)
  ) {
    problems.push({
      id: "runtime-too-old",
      message: `containerd ${rt.version} cannot run Kubernetes ${k8s}: ${CONTAINERD_2_FOR_KUBERNETES.why}`,
      fix: `drop --runtime-bin to use the bundled containerd ${plan.versions.components.containerd ?? "2.x"}, or point --runtime-bin at a containerd 2.x`,
    });
  }
  const mem = facts.features.memTotalKiB;
  const eviction = plan.kubelet.eviction ? evictionProblem(plan.kubelet.eviction, mem === null ? null : mem * 1024) : null;
  if (eviction) {
    problems.push({
      id: "eviction-threshold",
      message: eviction,
      fix: "give --eviction-hard a memory.available below the machine's memory (e.g. memory.available<500Mi)",
    });
  }
  if (plan.proxy.mode === "nftables") {
    const blocker = nftablesProxyBlocker(facts);
    if (blocker) {
      problems.push({
        id: "kube-proxy-backend",
        message: `kube-proxy has no backend: iptables is not installed, and ${blocker}`,
        fix: `install iptables, as root: ${installPackage(facts, "iptables")}`,
      });
    }
  }
  return problems;
}

/** Throws the first problem as a UserError (exit 3), naming how many more there are. */
export function validatePlan(plan: Plan, facts: Facts, opts: ValidateOptions = {}): void {
  const problems = planProblems(plan, facts, opts);
  const first = problems[0];
  if (!first) return;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? "s" : ""})` : "";
  throw new UserError(`refusing this plan: ${first.message}${more}`, { exitCode: ExitCode.Refused, fix: first.fix });
}
