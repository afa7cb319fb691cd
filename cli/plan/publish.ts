// Publishing the cluster's own ports on the host (issue 12): whether rootless-k8s-ports.service runs,
// on which host address, where RootlessKit connects inside the namespace, what a port below
// net.ipv4.ip_unprivileged_port_start gets, and which client address pods see. Pure: the network
// plan, RootlessKit's version and kube-proxy's backend in, the decision and its reasons out.
// Which ports exactly is decided at run time from the cluster's objects (cli/plan/ports.ts).
import * as path from "node:path";
import { refuseControl } from "./paths";
import type { NetworkPlan, PlanOptions, ProxyMode, PublishPlan } from "./plan";
import { atLeast } from "./rules";

export const PORTS_UNIT = "rootless-k8s-ports.service";

/** RootlessKit's builtin port driver connects from the client's address (IP_TRANSPARENT, TCP) from 3.0 on. */
export const SOURCE_IP_TRANSPARENT = {
  version: "3.0.0",
  why: "RootlessKit's builtin port driver connects inside the namespace from the client's own address since 3.0 (IP_TRANSPARENT; --source-ip-transparent, on by default)",
} as const;

export interface PublishInputs {
  network: NetworkPlan;
  rootlesskitVersion: string;
  proxy: ProxyMode;
  /** The host's own non-loopback addresses (plan.pki.hostAddresses). */
  hostAddresses: string[];
  home: string;
}

const PRIVILEGED =
  "a port below net.ipv4.ip_unprivileged_port_start is refused, not shifted: `status` and an Event on its Service or pod name the fix (as root: sysctl net.ipv4.ip_unprivileged_port_start=PORT). A shifted port (k3s adds 10000) is one no client asks for, while the sysctl is one root command";

/** Which client address pods see through RootlessKit's builtin port driver, with the reasons. */
function sourceIP(i: PublishInputs): { keeps: PublishPlan["keepsSourceIP"]; reasons: string[] } {
  const rk = i.rootlesskitVersion;
  const transparent = atLeast(rk, SOURCE_IP_TRANSPARENT.version);
  const tcp = transparent && i.proxy === "iptables";
  const tcpReason = tcp
    ? `TCP: pods see the client's own address: ${SOURCE_IP_TRANSPARENT.why}, and routes the replies with iptables there; for clients other than the host's loopback, on Services with externalTrafficPolicy: Local (Cluster masquerades, as on any node); per connection: one RootlessKit cannot open so within its 1 s dial timeout comes from the node's address`
    : transparent
      ? "TCP: pods see an address of the node, not the client's: RootlessKit's IP_TRANSPARENT path needs iptables inside the namespace, and this host has none (kube-proxy uses nftables)"
      : `TCP: pods see an address of the node, not the client's: RootlessKit ${rk} connects from the node's own address (${SOURCE_IP_TRANSPARENT.why})`;
  return {
    keeps: { tcp, udp: false },
    reasons: [
      tcpReason,
      "UDP: pods see an address of the node, not the client's: RootlessKit keeps the source address for TCP only (rootless-containers/rootlesskit#592)",
    ],
  };
}

export function decidePublish(i: PublishInputs, options: PlanOptions): PublishPlan {
  const bindAddress = options.publishAddress ?? "0.0.0.0";
  const command = options.selfCommand ?? [path.join(i.home, ".local", "bin", "rootless-k8s")];
  for (const word of command) refuseControl("the rootless-k8s binary's path", word);
  const ingressIPs = bindAddress === "127.0.0.1" || !i.hostAddresses.length ? ["127.0.0.1"] : [...i.hostAddresses];
  const base = (enabled: boolean, keepsSourceIP: PublishPlan["keepsSourceIP"], reasons: string[]): PublishPlan => ({
    enabled,
    bindAddress,
    childIP: i.network.namespaceIP,
    privilegedPorts: "refuse",
    ingressIPs,
    keepsSourceIP,
    command,
    reasons,
  });
  const off = (reasons: string[]) => base(false, { tcp: false, udp: false }, reasons);

  if (i.network.driver === "docker")
    return off([
      "off: the node lives in dockerd's own RootlessKit, whose published ports are dockerd's too (docker run -p): making its list the cluster's wanted set would remove them, and ports published there would outlive the node's units. Reach a Service with kubectl port-forward, or use --runtime containerd or crio",
    ]);
  if (i.network.portDriver !== "builtin")
    return off([
      "off: with pasta RootlessKit's implicit port driver has no port API to publish through (rootlessctl add-ports is refused), and pasta forwards only the ports a program listens on in the namespace (--tcp-ports=auto)",
      "so NodePorts and hostPorts, which are kube-proxy's and portmap's NAT rules with no listening socket (kube-proxy stopped holding NodePorts open: kubernetes#108496), are not reachable from the host: use --network slirp4netns or builtin to publish them",
    ]);

  const src = sourceIP(i);
  const where =
    bindAddress === "127.0.0.1"
      ? "--publish-address 127.0.0.1: reachable from this host only"
      : "--publish-address 0.0.0.0 (the default, as Docker's -p): reachable on every address of the host, from other machines too; --publish-address 127.0.0.1 keeps them to this host";
  return base(true, src.keeps, [
    `${PORTS_UNIT} publishes every NodePort, each LoadBalancer Service's ports and every pod hostPort, TCP and UDP, on ${bindAddress} through RootlessKit's port API (as rootlessctl add-ports does), forwarded to the node's address ${i.network.namespaceIP}; LoadBalancer Services get the ingress address ${ingressIPs.join(", ")}`,
    where,
    PRIVILEGED,
    ...src.reasons,
    `the unit runs ${command.join(" ")} ports run: keep that binary there (self-upgrade replaces it in place)`,
  ]);
}
