// A worker's files (`rootless-k8s join`) from a real plan: only the runtime, the kubelet and
// kube-proxy; the kubelet gets its certificates by TLS bootstrap (no key of the cluster on the
// worker: only the control plane's CA), advertises the host's address (given to the namespace's
// loopback, where the kubelet looks for it), and gets its CNI network once the node has its pod range.
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { buildPlan } from "../../../cli/plan/index";
import { workerPlan } from "../../../cli/plan/worker";
import { kubeletArgs } from "../../../cli/render/components";
import { layout, renderNode } from "../../../cli/render/index";
import { pkiPaths } from "../../../cli/render/pki";
import { rootlesskitArgs } from "../../../cli/render/rootlesskit";
import { baseFacts, upstreamVersions } from "../plan/facts-builder";

const versions = upstreamVersions();
const base = buildPlan(baseFacts(), { nodeName: "w1" }, versions);
const caPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const cluster = {
  pods: "10.244.0.0/16",
  services: "10.96.0.0/16",
  firstServiceIP: "10.96.0.1",
  dns: { serviceIP: "10.96.0.10", domain: "cluster.local" },
  kubernetes: versions.components.kubernetes!,
};
const inputs = { server: "https://192.0.2.2:6443", caPem, caHash: `sha256:${"b".repeat(64)}`, cluster, nodeIP: "198.51.100.2" };
const registering = workerPlan(base, inputs);
const joined = workerPlan(base, { ...inputs, podCidr: "10.244.1.0/24" });
const text = (files: ReturnType<typeof renderNode>, p: string) => String(files.find((f) => f.path === p)?.content ?? "");

describe("a worker's files", () => {
  const files = renderNode(joined, null);
  const l = layout(joined);

  it("are the runtime's, the kubelet's, kube-proxy's, the NetworkPolicy enforcer's, the port publisher's and the overlay's units only: no etcd, no control plane", () => {
    expect(files.filter((f) => f.kind === "unit").map((f) => f.unit)).toEqual([
      "rootless-k8s.target",
      "rootless-k8s-rootlesskit.service",
      "rootless-k8s-kubelet.service",
      "rootless-k8s-kube-proxy.service",
      "rootless-k8s-ports.service",
      "rootless-k8s-overlay.service",
      "rootless-k8s-netpol.service",
    ]);
    const kubelet = text(files, `${joined.paths.unitDir}/rootless-k8s-kubelet.service`);
    expect(kubelet).not.toContain("kube-apiserver");
  });

  it("hold no key of the cluster: the control plane's CA certificate is the only PKI file", () => {
    expect(files.filter((f) => f.kind === "pki").map((f) => [f.path, f.content, f.mode])).toEqual([
      [pkiPaths(joined).cas.ca.cert, caPem, 0o644],
    ]);
    expect(files.some((f) => f.path.endsWith(".key"))).toBe(false);
  });

  it("start the kubelet with the join token's kubeconfig for TLS bootstrap, its own cert folder and the host's address", () => {
    const args = kubeletArgs(joined);
    expect(args).toContain(`--bootstrap-kubeconfig=${l.kubeconfigs.kubeletBootstrap}`);
    expect(args).toContain(`--kubeconfig=${l.kubeconfigs.kubelet}`);
    expect(args).toContain(`--cert-dir=${l.kubeletCertDir}`);
    expect(args).toContain("--node-ip=198.51.100.2");
    const config = YAML.parse(text(files, l.kubeletConfig));
    expect(config).toMatchObject({ rotateCertificates: true, serverTLSBootstrap: true, clusterDNS: ["10.96.0.10"] });
    expect(config.authentication.x509.clientCAFile).toBe(pkiPaths(joined).cas.ca.cert);
    expect(config).not.toHaveProperty("tlsCertFile");
  });

  it("give the namespace's loopback the host's address, where the kubelet looks for its --node-ip", () => {
    expect(text(files, l.scripts.child)).toContain("ip -4 addr replace 198.51.100.2/32 dev lo ||");
  });

  it("publish the kubelet's port on the host", () => {
    expect(rootlesskitArgs(joined)).toContain("--publish=0.0.0.0:10250:10250/tcp");
    expect(rootlesskitArgs(joined).some((a) => a.includes(":6443:"))).toBe(false);
  });

  it("give kube-proxy the control plane's URL and the kubelet's own certificate (0600)", () => {
    const kp = files.find((f) => f.path === l.kubeconfigs.kubeProxy)!;
    expect(kp.mode).toBe(0o600);
    const doc = YAML.parse(String(kp.content));
    expect(doc.clusters[0].cluster).toEqual({ server: "https://192.0.2.2:6443", "certificate-authority": pkiPaths(joined).cas.ca.cert });
    expect(doc.users[0]).toEqual({
      name: "system:node:w1",
      user: {
        "client-certificate": `${l.kubeletCertDir}/kubelet-client-current.pem`,
        "client-key": `${l.kubeletCertDir}/kubelet-client-current.pem`,
      },
    });
  });

  it("give the CNI bridge the node's own pod range, and no CNI network before the node has one", () => {
    expect(JSON.parse(text(files, l.cniConflist)).plugins[0].ipam.ranges).toEqual([[{ subnet: "10.244.1.0/24" }]]);
    expect(renderNode(registering, null).some((f) => f.path === l.cniConflist)).toBe(false);
  });

  it("a server's files still need its PKI", () => {
    expect(() => renderNode(base, null)).toThrow(/PKI/);
  });
});
