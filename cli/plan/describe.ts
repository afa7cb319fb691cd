// The plan in plain words, for `install --dry-run` and the install confirmation: every decision
// with the reasons for it.
import { nodePortsOf, rangeText } from "./node-ports";
import { clientAddressWords } from "../doctor/checks/node";
import type { Style } from "../ui/output";
import type { Plan } from "./plan";
import { dockerdLimitsContainers } from "./runtime";

const PLAIN: Pick<Style, "bold" | "dim"> = { bold: (s) => s, dim: (s) => s };

/** ~/x instead of /home/user/x, for shorter lines. */
export function tildify(p: string, home: string): string {
  return p === home ? "~" : p.startsWith(home + "/") ? "~" + p.slice(home.length) : p;
}

export function describePlan(plan: Plan, style: Pick<Style, "bold" | "dim"> = PLAIN): string[] {
  const t = (p: string) => tildify(p, plan.paths.home);
  const lines: string[] = [];
  const item = (label: string, value: string, reasons: string[] = []) => {
    lines.push(`${style.bold(label.padEnd(12))}${value}`);
    for (const r of reasons) lines.push(`${" ".repeat(12)}${style.dim(`- ${r}`)}`);
  };
  const v = plan.versions.components;
  const rt = plan.runtime;
  const n = plan.network;
  item("Mode", plan.mode.name, plan.mode.reasons);
  if (plan.mode.givesUp.length) {
    lines.push(`${" ".repeat(12)}A node in mode none gives up:`);
    for (const g of plan.mode.givesUp) lines.push(`${" ".repeat(12)}${style.dim(`- ${g}`)}`);
  }
  item("Versions", `Kubernetes ${v.kubernetes}, etcd ${v.etcd}, RootlessKit ${plan.rootlesskit.version} (set ${plan.versions.id})`, [
    ...(plan.versions.reasons ?? []),
  ]);
  const runtimeDetails = [
    rt.source === "host" ? `the user's (${t(rt.binary)})` : "bundled",
    rt.containerdConfigVersion ? `config version ${rt.containerdConfigVersion}` : null,
    rt.snapshotter ? `snapshotter ${rt.snapshotter.name}` : null,
    dockerdLimitsContainers(rt)
      ? "container limits by dockerd (a docker-<id>.scope each, through your systemd)"
      : rt.disableCgroup
        ? "no cgroup writes"
        : "cgroups of the delegated subtree",
  ].filter(Boolean);
  item("Runtime", `${rt.name} ${rt.version}: ${runtimeDetails.join(", ")}`, [...rt.reasons, ...(rt.snapshotter?.reasons ?? [])]);
  item(
    "Network",
    `${n.driver}${n.binary ? ` (${t(n.binary)})` : ""}, MTU ${n.mtu}, namespace ${n.namespaceCidr}, node IP ${n.namespaceIP}`,
    n.reasons,
  );
  const published = n.forwardsAllPorts
    ? `every node port (${n.published.map((p) => p.hostPort).join(", ")})`
    : n.published.map((p) => `${p.hostIP}:${p.hostPort}`).join(", ");
  item("Published", `${published} on the host; API server on ${plan.ports.apiServer}`);
  if (plan.role !== "worker") item("Node ports", `Services' NodePorts from ${rangeText(nodePortsOf(plan))} (--node-port-range)`);
  const pub = plan.publish;
  if (pub) {
    item(
      "Services",
      pub.enabled
        ? `NodePort, LoadBalancer and hostPort published on ${pub.bindAddress} by ${plan.units.ports ?? "the ports unit"}; ${clientAddressWords(pub.keepsSourceIP)}`
        : "not published by rootless-k8s",
      pub.reasons,
    );
  }
  if (plan.networkPolicy) {
    const np = plan.networkPolicy;
    item("Policies", np.enforced ? `NetworkPolicies enforced by ${plan.units.networkPolicy}` : `NetworkPolicies NOT enforced: ${np.why}`, [
      ...np.reasons,
      ...(np.fix?.root ? [`fix, as root: ${np.fix.root.join("; ")}`] : np.fix?.user ? [`fix: ${np.fix.user}`] : []),
    ]);
  }
  item("Networks", `pods ${plan.cidrs.pods}, services ${plan.cidrs.services}`, plan.cidrs.reasons);
  const labels = Object.entries(plan.node.labels).map(([k, val]) => `${k}=${val}`);
  const taints = plan.node.taints.map((x) => `${x.key}=${x.value}:${x.effect}`);
  item("Node", `${plan.node.name}; labels ${labels.join(", ")}; taints ${taints.length ? taints.join(", ") : "none"}`);
  const k = plan.kubelet;
  item(
    "Kubelet",
    `cgroupDriver ${k.cgroupDriver}, cgroupsPerQOS ${k.cgroupsPerQOS}, enforceNodeAllocatable [${k.enforceNodeAllocatable.join(", ")}]${k.failCgroupV1 === false ? ", failCgroupV1 false" : ""}`,
    k.reasons,
  );
  item("kube-proxy", plan.proxy.mode, plan.proxy.reasons);
  if (plan.addons) {
    const d = plan.addons.dns;
    item("DNS", d.enabled ? `CoreDNS at ${d.serviceIP} for ${d.domain}` : "off", d.reasons);
    const st = plan.addons.storage;
    if (st) item("Storage", st.enabled ? `StorageClass ${st.storageClass} (default), volumes in ${t(st.path)}` : "off", st.reasons);
    const m = plan.addons.metrics;
    if (m)
      item("Metrics", m.enabled ? `metrics-server (kubectl top ${m.figures === "nodes" ? "nodes" : "nodes and pods"})` : "off", m.reasons);
  }
  item("PKI", plan.pki.algorithm === "rsa-2048" ? "RSA 2048" : "ECDSA P-256", [
    `API server names: ${[...plan.pki.hostnames, ...plan.pki.hostAddresses].join(", ") || "(loopback only)"}`,
  ]);
  if (plan.memory) item("Memory", `GOGC=${plan.memory.goGC} for the Go components`, plan.memory.reasons);
  if (plan.supervisor)
    item("Runs under", plan.supervisor.kind === "up" ? "rootless-k8s up (no systemd)" : "the user's systemd", plan.supervisor.reasons);
  item("Logs", plan.logging.to === "journal" ? "journal" : `files in ${t(plan.paths.logDir)}`, plan.logging.reasons);
  item("Binaries", `${t(plan.paths.versionBinDir)} (active through ${t(plan.paths.currentLink)})`);
  item("Data", t(plan.paths.dataDir));
  item("Config", `${t(plan.paths.configDir)} (PKI in ${t(plan.paths.pkiDir)})`);
  item(
    "Units",
    `${t(plan.paths.unitDir)}: ${plan.units.target} and ${Object.values(plan.units).filter((u) => u && u !== plan.units.target).length} services`,
  );
  if (plan.onDemand?.units.length) item("On demand", plan.onDemand.units.join(", "), plan.onDemand.reasons);
  item("Sockets", t(plan.paths.runtimeDir));
  return lines;
}
