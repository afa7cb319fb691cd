// Cluster DNS in the plan and its rendering: CoreDNS at the tenth service address, the kubelet's
// clusterDNS, the image as the manifest pins it, --no-dns, and plans older than add-ons.
import { describe, expect, it } from "vitest";
import { buildPlan } from "../../../cli/plan";
import { addonImageGapNote, addonImageGaps, addonImagePins } from "../../../cli/plan/addons";
import { nthAddress } from "../../../cli/plan/cidr";
import type { Plan } from "../../../cli/plan/plan";
import { addons } from "../../../cli/render/addons";
import { kubeletConfiguration } from "../../../cli/render/kube-configs";
import { generatePki, renderNode } from "../../../cli/render/index";
import { baseFacts, delegatedFacts, upstreamVersions } from "./facts-builder";
import { DOCKER_CONTAINERD_STORE_FIX } from "../../../cli/plan/rules";

const versions = upstreamVersions();
const DIGEST = `sha256:${"ab".repeat(32)}`;

describe("the dns add-on in the plan", () => {
  it("is on by default: CoreDNS at the tenth address of the service network, for cluster.local", () => {
    const plan = buildPlan(delegatedFacts(), {}, versions);
    const dns = plan.addons!.dns;
    expect(dns.enabled).toBe(true);
    expect(dns.serviceIP).toBe(nthAddress(plan.cidrs.services, 10));
    expect(dns.serviceIP).not.toBe(plan.cidrs.firstServiceIP);
    expect(dns.domain).toBe("cluster.local");
    expect(kubeletConfiguration(plan)).toMatchObject({ clusterDNS: [dns.serviceIP], clusterDomain: "cluster.local" });
  });

  it("runs the built-in manifest's CoreDNS by the digest it pins, and says so", () => {
    const dns = buildPlan(baseFacts(), {}, versions).addons!.dns;
    const digest = "sha256:e7e6440cfd1e919280958f5b5a6ab2b184d385bba774c12ad2a9e1e4183f90d9";
    expect(dns.image).toEqual({
      name: "registry.k8s.io/coredns/coredns:v1.14.2",
      digest,
      ref: `registry.k8s.io/coredns/coredns:v1.14.2@${digest}`,
    });
    expect(dns.reasons.join(" ")).toMatch(/pinned by digest sha256:e7e6440cfd1e…/);
  });

  it("takes an image by tag when the manifest pins no digest, and says so", () => {
    const byTag = { ...versions, images: { coredns: { name: "registry.k8s.io/coredns/coredns:v1.14.3", digest: null } } };
    const dns = buildPlan(baseFacts(), {}, byTag).addons!.dns;
    expect(dns.image).toEqual({
      name: "registry.k8s.io/coredns/coredns:v1.14.3",
      digest: null,
      ref: "registry.k8s.io/coredns/coredns:v1.14.3",
    });
    expect(dns.reasons.join(" ")).toMatch(/by tag only/);
  });

  it("runs the image by digest when the manifest pins one", () => {
    const pinned = { ...versions, images: { coredns: { name: "registry.k8s.io/coredns/coredns:v1.14.3", digest: DIGEST } } };
    const plan = buildPlan(baseFacts(), {}, pinned);
    expect(plan.addons!.dns.image.ref).toBe(`registry.k8s.io/coredns/coredns:v1.14.3@${DIGEST}`);
    const deployment = addons(plan)[0]!.objects.find((o) => o.kind === "Deployment") as unknown as {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    expect(deployment.spec.template.spec.containers[0]!.image).toBe(plan.addons!.dns.image.ref);
  });

  it("--no-dns: no clusterDNS, no add-on file, and the add-on is listed as off (its objects get deleted)", async () => {
    const plan = buildPlan(baseFacts(), { dns: false }, versions);
    expect(plan.addons!.dns.enabled).toBe(false);
    expect(kubeletConfiguration(plan)).not.toHaveProperty("clusterDNS");
    const files = renderNode(plan, await generatePki(plan));
    expect(files.filter((f) => f.kind === "addon").map((f) => f.path.split("/").pop())).toEqual([
      "storage.yaml",
      "metrics.yaml",
      "ports.yaml",
      "network-policy.yaml",
      "csr-approver.yaml",
    ]);
    expect(addons(plan).map((a) => [a.id, a.enabled])).toEqual([
      ["dns", false],
      ["storage", true],
      ["metrics", true],
      ["ports", true],
      ["network-policy", true],
      ["csr-approver", true],
    ]);
  });

  it("a plan from a receipt older than add-ons renders no add-on and no clusterDNS", async () => {
    const plan = buildPlan(baseFacts(), {}, versions);
    const old = { ...plan } as Plan;
    delete old.addons;
    expect(addons(old)).toEqual([]);
    expect(kubeletConfiguration(old)).not.toHaveProperty("clusterDNS");
    expect(renderNode(old, await generatePki(old)).some((f) => f.kind === "addon")).toBe(false);
  });
});

describe("the CoreDNS objects", () => {
  const plan = buildPlan(baseFacts(), { taintNone: true }, versions);
  const [dns] = addons(plan);
  const byKind = (k: string) => dns!.objects.find((o) => o.kind === k) as unknown as Record<string, any>;

  it("are RBAC, config, workload and Service in that order, each labelled as ours", () => {
    expect(dns!.objects.map((o) => o.kind)).toEqual([
      "ServiceAccount",
      "ClusterRole",
      "ClusterRoleBinding",
      "ConfigMap",
      "Deployment",
      "Service",
    ]);
    for (const o of dns!.objects)
      expect((o.metadata as unknown as { labels: Record<string, string> }).labels["rootless-k8s.io/addon"]).toBe("dns");
  });

  it("the kube-dns Service holds the plan's address, UDP and TCP 53", () => {
    const svc = byKind("Service");
    expect(svc.metadata).toMatchObject({ name: "kube-dns", namespace: "kube-system" });
    expect(svc.spec.clusterIP).toBe(plan.addons!.dns.serviceIP);
    expect(svc.spec.ports.filter((p: { port: number }) => p.port === 53).map((p: { protocol: string }) => p.protocol)).toEqual([
      "UDP",
      "TCP",
    ]);
  });

  it("CoreDNS serves the cluster domain and forwards the rest to the node namespace's resolver", () => {
    const corefile = byKind("ConfigMap").data.Corefile as string;
    expect(corefile).toContain("kubernetes cluster.local in-addr.arpa ip6.arpa {");
    expect(corefile).toContain("forward . /etc/resolv.conf");
    expect(byKind("Deployment").spec.template.spec.dnsPolicy).toBe("Default");
  });

  it("tolerates the taint rootless-k8s puts on a mode none node (--taint-none)", () => {
    expect(plan.node.taints.length).toBe(1);
    const tolerations = byKind("Deployment").spec.template.spec.tolerations as { key: string }[];
    expect(tolerations.map((t) => t.key)).toContain(plan.node.taints[0]!.key);
  });

  it("are written for the user to read as config/addons/dns.yaml, without a restart", async () => {
    const files = renderNode(plan, await generatePki(plan));
    const f = files.find((x) => x.kind === "addon");
    expect(f?.path).toBe(`${plan.paths.configDir}/addons/dns.yaml`);
    expect(f?.unit).toBeUndefined();
    expect(String(f?.content)).toContain(`clusterIP: ${plan.addons!.dns.serviceIP}`);
  });
});

describe("the storage add-on", () => {
  const DIGEST2 = `sha256:${"cd".repeat(32)}`;
  const pinned = {
    ...versions,
    images: {
      "local-path-provisioner": { name: "docker.io/rancher/local-path-provisioner:v0.0.30", digest: DIGEST },
      "local-path-helper": { name: "registry.k8s.io/e2e-test-images/busybox:1.37.0-1", digest: DIGEST2 },
    },
  };
  const plan = buildPlan(baseFacts(), { taintNone: true }, pinned);
  const storage = addons(plan).find((a) => a.id === "storage")!;
  const byKind = (k: string) => storage.objects.find((o) => o.kind === k) as unknown as Record<string, any>;

  it("is on by default: volumes in the node's data folder, the default StorageClass local-path", () => {
    const st = plan.addons!.storage!;
    expect(st.enabled).toBe(true);
    expect(st.path).toBe(`${plan.paths.dataDir}/storage`);
    const sc = byKind("StorageClass");
    expect(sc.metadata.annotations["storageclass.kubernetes.io/is-default-class"]).toBe("true");
    expect(sc).toMatchObject({ provisioner: "rancher.io/local-path", volumeBindingMode: "WaitForFirstConsumer", reclaimPolicy: "Delete" });
  });

  it("the provisioner keeps every node's volumes below that folder, and runs the pinned images", () => {
    const cm = byKind("ConfigMap");
    expect(JSON.parse(cm.data["config.json"]).nodePathMap).toEqual([
      { node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [plan.addons!.storage!.path] },
    ]);
    expect(byKind("Deployment").spec.template.spec.containers[0].image).toBe(`docker.io/rancher/local-path-provisioner:v0.0.30@${DIGEST}`);
    expect(cm.data["helperPod.yaml"]).toContain(`image: registry.k8s.io/e2e-test-images/busybox:1.37.0-1@${DIGEST2}`);
    // Helper pods and the provisioner run on a node with rootless-k8s's taint.
    expect(cm.data["helperPod.yaml"]).toContain(plan.node.taints[0]!.key);
    expect(byKind("Deployment").spec.template.spec.tolerations.map((t: { key: string }) => t.key)).toContain(plan.node.taints[0]!.key);
  });

  it("the volume folder is created 0700 at install: only the user (root in the node's namespace) goes through", async () => {
    const { folders } = await import("../../../cli/render/layout");
    expect(folders(plan)).toContainEqual({ path: plan.addons!.storage!.path, mode: 0o700 });
  });

  it("--no-storage: off, no folder, and its objects get deleted (the namespace stays)", async () => {
    const off = buildPlan(baseFacts(), { storage: false }, versions);
    expect(off.addons!.storage!.enabled).toBe(false);
    const { folders } = await import("../../../cli/render/layout");
    expect(folders(off).map((f) => f.path)).not.toContain(off.addons!.storage!.path);
    expect(addons(off).find((a) => a.id === "storage")!.enabled).toBe(false);
  });
});

describe("the metrics add-on", () => {
  const pinned = {
    ...versions,
    images: { "metrics-server": { name: "registry.k8s.io/metrics-server/metrics-server:v0.8.0", digest: DIGEST } },
  };
  const metricsOf = (plan: Plan) => addons(plan).find((a) => a.id === "metrics")!;
  const byKind = (plan: Plan, k: string) => metricsOf(plan).objects.find((o) => o.kind === k) as unknown as Record<string, any>;

  it("is on by default; in mode delegated kubectl top answers for nodes and pods, in mode none for nodes only, and the plan says why", () => {
    const delegated = buildPlan(delegatedFacts(), {}, versions).addons!.metrics!;
    expect(delegated).toMatchObject({ enabled: true, figures: "nodes-and-pods" });
    const none = buildPlan(baseFacts(), {}, versions).addons!.metrics!;
    expect(none).toMatchObject({ enabled: true, figures: "nodes" });
    expect(none.reasons[0]).toMatch(/kubectl top nodes only: .*no cgroup of their own.*one cgroup they all share/);
  });

  it("verifies the kubelet's serving certificate with the cluster CA every pod gets, never --kubelet-insecure-tls", () => {
    const plan = buildPlan(baseFacts(), {}, pinned);
    const c = byKind(plan, "Deployment").spec.template.spec.containers[0];
    expect(c.image).toBe(`registry.k8s.io/metrics-server/metrics-server:v0.8.0@${DIGEST}`);
    expect(c.args).toContain("--kubelet-certificate-authority=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
    expect(c.args.join(" ")).not.toContain("insecure");
    expect(c.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    // Its liveness outlasts a restart of the node's only kubelet (the VM's upgrade killed it at 3 × 10 s).
    expect(c.livenessProbe.periodSeconds * c.livenessProbe.failureThreshold).toBeGreaterThanOrEqual(120);
  });

  it("registers metrics.k8s.io v1beta1 with the aggregation layer, the APIService applied last and so deleted first", () => {
    const plan = buildPlan(baseFacts(), { taintNone: true }, versions);
    const kinds = metricsOf(plan).objects.map((o) => o.kind);
    expect(kinds.at(-1)).toBe("APIService");
    expect(byKind(plan, "APIService")).toMatchObject({
      apiVersion: "apiregistration.k8s.io/v1",
      metadata: { name: "v1beta1.metrics.k8s.io" },
      spec: { group: "metrics.k8s.io", version: "v1beta1", service: { name: "metrics-server", namespace: "kube-system" } },
    });
    const tolerations = byKind(plan, "Deployment").spec.template.spec.tolerations as { key: string }[];
    expect(tolerations.map((t) => t.key)).toContain(plan.node.taints[0]!.key);
    // kubectl top's readers: admin, edit and view aggregate the metrics reader role.
    expect(byKind(plan, "ClusterRole").metadata.labels["rbac.authorization.k8s.io/aggregate-to-view"]).toBe("true");
  });

  it("--no-metrics: off, listed so its objects get deleted; a plan older than the add-on has none", () => {
    const off = buildPlan(baseFacts(), { metrics: false }, versions);
    expect(off.addons!.metrics!.enabled).toBe(false);
    expect(metricsOf(off).enabled).toBe(false);
    const old = {
      ...off,
      addons: { ...off.addons!, metrics: undefined },
      publish: undefined,
      networkPolicy: undefined,
      units: { ...off.units, csrApprover: undefined },
    } as Plan;
    expect(addons(old).map((a) => a.id)).toEqual(["dns", "storage"]);
  });
});

describe("add-on images that archives do not provide as their pods name them", () => {
  const A = `sha256:${"a1".repeat(32)}`;
  const B = `sha256:${"b2".repeat(32)}`;
  const dns = { id: "coredns", name: "registry.k8s.io/coredns/coredns:v1.14.2", digest: A };
  const helper = { id: "local-path-helper", name: "docker.io/rancher/mirrored-library-busybox:1.36.1", digest: null };

  it("a pinned image is provided only by an archive that holds it as the pinned digest", () => {
    expect(addonImageGaps([dns], [{ name: dns.name, digest: A, file: "a.tar" }])).toEqual([]);
    // Held twice, once right: provided.
    expect(
      addonImageGaps(
        [dns],
        [
          { name: dns.name, digest: B, file: "b.tar" },
          { name: dns.name, digest: A, file: "a.tar" },
        ],
      ),
    ).toEqual([]);
    expect(
      addonImageGaps(
        [dns],
        [
          { name: dns.name, digest: B, file: "b.tar" },
          { name: dns.name, digest: null, file: "c.tar" },
        ],
      ),
    ).toEqual([{ ...dns, kind: "other-digest", have: [B, null], files: ["b.tar", "c.tar"] }]);
    // Another tag is another image.
    expect(addonImageGaps([dns], [{ name: "registry.k8s.io/coredns/coredns:v1.14.3", digest: A, file: "a.tar" }])).toEqual([
      { ...dns, kind: "missing" },
    ]);
  });

  it("an image named by tag only is provided by any archive of that name", () => {
    expect(addonImageGaps([helper], [{ name: helper.name, digest: null, file: "h.tar" }])).toEqual([]);
    expect(addonImageGaps([helper], [])).toEqual([{ ...helper, kind: "missing" }]);
  });

  it("the note names the file, both digests, the pod's reference and the exact fix", () => {
    const [g] = addonImageGaps([dns], [{ name: dns.name, digest: null, file: "coredns.tar" }]);
    expect(addonImageGapNote(g!, "node")).toBe(
      `coredns.tar holds ${dns.name} with no registry digest (a classic docker save), but the version set pins ${A.slice(0, 19)}… (the dns add-on's image), and its pod names ${dns.name}@${A.slice(0, 19)}…: offline it cannot start from the node's copy; save the pinned image itself with \`skopeo copy --multi-arch all docker://${dns.name}@${A} oci-archive:coredns.tar:${dns.name}\` and use that file, or install with --no-dns`,
    );
  });

  it("loaded into Docker, a pinned image loses its digest: the note says dockerd pulls it, and how to let it", () => {
    const [g] = addonImageGaps([dns], [{ name: dns.name, digest: null, file: "coredns.tar" }]);
    expect(addonImageGapNote(g!, "docker")).toBe(
      `Docker's classic image store keeps no registry digest for a loaded image, and the version set pins ${dns.name}@${A.slice(0, 19)}… (the dns add-on's image): its pod makes dockerd pull that digest; let dockerd reach the registry (\`docker pull ${dns.name}@${A}\`), or ${DOCKER_CONTAINERD_STORE_FIX} and load the archive again, or install with --no-dns`,
    );
    expect(DOCKER_CONTAINERD_STORE_FIX).toContain('"features": {"containerd-snapshotter": true} in ~/.config/docker/daemon.json');
  });

  it("a missing image: a pinned one is saved with its registry digest, one by tag with docker save", () => {
    const [pinned, byTag] = addonImageGaps([dns, helper], []);
    expect(addonImageGapNote(pinned!, "bundle")).toContain(
      `(for example \`skopeo copy --multi-arch all docker://${dns.name}@${A} oci-archive:coredns.tar:${dns.name}\`)`,
    );
    expect(addonImageGapNote(byTag!, "bundle")).toBe(
      `the bundle carries no ${helper.name} (the storage add-on's image): offline its pod cannot start; add it with --image FILE (for example \`docker save ${helper.name} -o local-path-helper.tar\`), or install with --no-storage`,
    );
  });

  it("an installed plan's pins are the enabled add-ons' images, as the pods name them", () => {
    const plan = buildPlan(baseFacts(), {}, versions);
    expect(addonImagePins(plan.addons).map((p) => [p.id, p.name, p.digest])).toEqual([
      ["coredns", plan.addons!.dns.image.name, plan.addons!.dns.image.digest],
      ["local-path-provisioner", plan.addons!.storage!.image.name, plan.addons!.storage!.image.digest],
      ["local-path-helper", plan.addons!.storage!.helperImage.name, plan.addons!.storage!.helperImage.digest],
      ["metrics-server", plan.addons!.metrics!.image.name, plan.addons!.metrics!.image.digest],
    ]);
    const lean = buildPlan(baseFacts(), { dns: false, storage: false }, versions);
    expect(addonImagePins(lean.addons).map((p) => p.id)).toEqual(["metrics-server"]);
  });
});
