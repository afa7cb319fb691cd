// KubeletConfiguration (kubelet.config.k8s.io/v1beta1) and KubeProxyConfiguration
// (kubeproxy.config.k8s.io/v1alpha1) per mode. Every key is a field of Kubernetes 1.36
// (test/unit/render/kube-configs.test.ts checks them against the Kubernetes 1.36 field list in test/doubles/data/k8s-config-fields.json).
import YAML from "yaml";
import { advertisedIP } from "../plan/node";
import type { Plan } from "../plan/plan";
import { layout } from "./layout";
import { pkiPaths } from "./pki";

const HEADER = "# Written by rootless-k8s from the node plan; rewritten on every install.\n";

export function kubeletConfiguration(plan: Plan): Record<string, unknown> {
  const pki = pkiPaths(plan);
  const k = plan.kubelet;
  const worker = plan.role === "worker";
  const config: Record<string, unknown> = {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    // Only the API server (with its kubelet client certificate) may use the kubelet's API.
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: pki.cas.ca.cert },
    },
    authorization: { mode: "Webhook" },
    // A server's kubelet serves with the certificate we made; a worker's asks the control plane
    // for one (serverTLSBootstrap: a kubelet-serving CSR, approved on the control plane's host).
    ...(worker ? {} : { tlsCertFile: pki.certs.kubeletServing.cert, tlsPrivateKeyFile: pki.certs.kubeletServing.key }),
    port: plan.ports.kubelet,
    healthzBindAddress: "127.0.0.1",
    healthzPort: plan.ports.kubeletHealthz,
    containerRuntimeEndpoint: `unix://${plan.runtime.criSocket}`,
    cgroupDriver: k.cgroupDriver,
    cgroupsPerQOS: k.cgroupsPerQOS,
    enforceNodeAllocatable: k.enforceNodeAllocatable,
    ...(k.failCgroupV1 === null ? {} : { failCgroupV1: k.failCgroupV1 }),
    failSwapOn: false,
    featureGates: k.featureGates,
    // Off only where cAdvisor cannot read the data folder's file system (cli/host/fs-stats.ts).
    localStorageCapacityIsolation: k.localStorageCapacityIsolation,
    // Flexvolume's default /usr/libexec/kubernetes is not writable rootless (k3s-io/k3s#4216).
    volumePluginDir: layout(plan).data.kubeletPlugins,
    // A plan from before the thresholds could be chosen keeps the ones it was installed with.
    evictionHard: k.eviction?.hard ?? { "memory.available": "100Mi", "nodefs.available": "5%", "imagefs.available": "5%" },
    ...(k.eviction && Object.keys(k.eviction.soft).length
      ? { evictionSoft: k.eviction.soft, evictionSoftGracePeriod: k.eviction.softGracePeriod }
      : {}),
    // Only when the user's limits allow fewer pods than the kubelet's 110 (cli/plan/kubelet.ts).
    ...(k.maxPods !== undefined ? { maxPods: k.maxPods } : {}),
    clusterDomain: plan.addons?.dns.domain ?? "cluster.local",
    // Pods resolve through CoreDNS at the tenth service address (without it: the node's resolv.conf).
    ...(plan.addons?.dns.enabled ? { clusterDNS: [plan.addons.dns.serviceIP] } : {}),
    rotateCertificates: worker,
    serverTLSBootstrap: worker,
  };
  // Inside dockerd's namespaces /var/log is the host's (ours bind-mounts the node's own).
  if (plan.runtime.name === "docker") config.podLogsDir = `${layout(plan).data.log}/pods`;
  if (plan.node.taints.length) config.registerWithTaints = plan.node.taints.map((t) => ({ key: t.key, value: t.value, effect: t.effect }));
  return config;
}

export function kubeProxyConfiguration(plan: Plan): Record<string, unknown> {
  return {
    apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
    kind: "KubeProxyConfiguration",
    clientConnection: { kubeconfig: layout(plan).kubeconfigs.kubeProxy },
    hostnameOverride: plan.node.name,
    mode: plan.proxy.mode,
    // Masquerade all Service traffic (the plan's reason: no br_netfilter needed).
    ...(plan.proxy.masqueradeAll ? { [plan.proxy.mode]: { masqueradeAll: true } } : {}),
    clusterCIDR: plan.cidrs.pods,
    // nftables mode answers NodePorts on the node's primary address only: RootlessKit delivers them
    // to the namespace's own, so name both where the node advertises a host address.
    ...(plan.proxy.mode === "nftables" && advertisedIP(plan) !== plan.network.namespaceIP
      ? { nodePortAddresses: [`${plan.network.namespaceIP}/32`, `${advertisedIP(plan)}/32`] }
      : {}),
    healthzBindAddress: `127.0.0.1:${plan.ports.kubeProxyHealthz}`,
    metricsBindAddress: `127.0.0.1:${plan.ports.kubeProxyMetrics}`,
    // The conntrack sysctls are global, not per namespace: leave them alone (KEP-2033, Usernetes).
    conntrack: { maxPerCore: 0, tcpEstablishedTimeout: "0s", tcpCloseWaitTimeout: "0s" },
  };
}

export function renderYaml(doc: Record<string, unknown>): string {
  return HEADER + YAML.stringify(doc, { lineWidth: 0 });
}
