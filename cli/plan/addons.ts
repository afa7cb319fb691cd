// The add-ons a node gets (issue: cluster essentials): which are on, and what they are built from.
// Pure: the plan's service network and the version set's pinned images in, decisions out.
import { nthAddress } from "./cidr";
import { DOCKER_CONTAINERD_STORE_FIX } from "./rules";
import type {
  AddonImage,
  AddonsPlan,
  Cidrs,
  MetricsAddonPlan,
  ModePlan,
  NetworkPlan,
  PlanOptions,
  StorageAddonPlan,
  VersionSet,
} from "./plan";

/** kubeadm 1.36's CoreDNS (cmd/kubeadm/app/constants CoreDNSVersion), when a manifest pins none. */
export const DEFAULT_COREDNS_IMAGE = "registry.k8s.io/coredns/coredns:v1.14.2";
export const CLUSTER_DOMAIN = "cluster.local";
/** The provisioner and helper images k3s's local-storage add-on runs, when a manifest pins none. */
export const DEFAULT_LOCAL_PATH_IMAGE = "docker.io/rancher/local-path-provisioner:v0.0.30";
export const DEFAULT_LOCAL_PATH_HELPER_IMAGE = "docker.io/rancher/mirrored-library-busybox:1.36.1";
/** metrics-server's own release manifest (components.yaml of v0.8.0), when a manifest pins none. */
export const DEFAULT_METRICS_SERVER_IMAGE = "registry.k8s.io/metrics-server/metrics-server:v0.8.0";

function addonImage(versions: VersionSet, id: string, fallback: string): { image: AddonImage; reason: string } {
  const pinned = versions.images?.[id];
  if (pinned?.digest)
    return {
      image: { name: pinned.name, digest: pinned.digest, ref: `${pinned.name}@${pinned.digest}` },
      reason: `image ${pinned.name}, pinned by digest ${pinned.digest.slice(0, 19)}… (components manifest)`,
    };
  const name = pinned?.name ?? fallback;
  return {
    image: { name, digest: null, ref: name },
    reason: `image ${name}, by tag only: the components manifest pins no digest for it`,
  };
}

/** Where names outside the cluster go, per network driver: the namespace's resolv.conf names its DNS. */
function upstreamReason(driver: NetworkPlan["driver"]): string {
  switch (driver) {
    case "slirp4netns":
      return "names outside the cluster go to slirp4netns's DNS, which asks the host's resolvers and re-reads the host's resolv.conf when it changes (NetworkManager, systemd-resolved's 127.0.0.53 stub)";
    case "builtin":
      return "names outside the cluster go to RootlessKit's gvisor-tap-vsock DNS, which asks the host's resolvers";
    case "pasta":
      return "names outside the cluster go to pasta's DNS forwarder, which takes the host's first resolver when the node starts: after the host's resolvers change, restart the node (systemctl --user restart rootless-k8s.target)";
    case "docker":
      return "names outside the cluster go to the resolver of dockerd's own namespace";
  }
}

function decideStorage(dataDir: string, versions: VersionSet, options: PlanOptions): StorageAddonPlan {
  const enabled = options.storage !== false;
  const { image, reason } = addonImage(versions, "local-path-provisioner", DEFAULT_LOCAL_PATH_IMAGE);
  const helper = addonImage(versions, "local-path-helper", DEFAULT_LOCAL_PATH_HELPER_IMAGE);
  const path = `${dataDir}/storage`;
  return {
    enabled,
    path,
    storageClass: "local-path",
    image,
    helperImage: helper.image,
    reasons: enabled
      ? [
          `the default StorageClass local-path: rancher's local-path-provisioner makes each volume a folder below ${path}`,
          "files containers write there belong to the user, or to one of the user's subordinate ids; uninstall keeps them, uninstall --purge removes them",
          reason,
          `helper ${helper.reason}`,
        ]
      : ["--no-storage: no StorageClass, so a PersistentVolumeClaim stays Pending until one is made"],
  };
}

function decideMetrics(mode: ModePlan["name"], versions: VersionSet, options: PlanOptions): MetricsAddonPlan {
  const enabled = options.metrics !== false;
  const { image, reason } = addonImage(versions, "metrics-server", DEFAULT_METRICS_SERVER_IMAGE);
  const figures = mode === "delegated" ? "nodes-and-pods" : "nodes";
  return {
    enabled,
    image,
    figures,
    reasons: enabled
      ? [
          figures === "nodes-and-pods"
            ? "kubectl top nodes and kubectl top pods: metrics-server reads the kubelet's figures, which come from each pod's own cgroup"
            : "kubectl top nodes only: in mode none pods have no cgroup of their own, so kubectl top pods shows every pod with the figures of the one cgroup they all share (the node's own usage), not the pod's",
          "metrics-server verifies the kubelet's serving certificate with the cluster CA (no --kubelet-insecure-tls); the API server reaches it through the aggregation layer",
          reason,
        ]
      : ["--no-metrics: no metrics-server, so kubectl top and the HorizontalPodAutoscaler's resource metrics do not answer"],
  };
}

export function decideAddons(
  cidrs: Cidrs,
  driver: NetworkPlan["driver"],
  dataDir: string,
  versions: VersionSet,
  options: PlanOptions,
  mode: ModePlan["name"],
): AddonsPlan {
  const serviceIP = nthAddress(cidrs.services, 10);
  const { image, reason } = addonImage(versions, "coredns", DEFAULT_COREDNS_IMAGE);
  const enabled = options.dns !== false;
  return {
    dns: {
      enabled,
      serviceIP,
      domain: CLUSTER_DOMAIN,
      image,
      reasons: enabled
        ? [
            `CoreDNS answers for ${CLUSTER_DOMAIN} at ${serviceIP} (the tenth address of ${cidrs.services}); the kubelet gives pods that address`,
            upstreamReason(driver),
            reason,
          ]
        : ["--no-dns: no CoreDNS, and pods get the node's resolv.conf instead of a cluster DNS"],
    },
    storage: decideStorage(dataDir, versions, options),
    metrics: decideMetrics(mode, versions, options),
  };
}

/** Which add-on runs each image of a manifest's `images`, and the install flag that turns it off. */
export const ADDON_OF_IMAGE: Readonly<Record<string, { addon: string; flag: string }>> = {
  coredns: { addon: "dns", flag: "--no-dns" },
  "local-path-provisioner": { addon: "storage", flag: "--no-storage" },
  "local-path-helper": { addon: "storage", flag: "--no-storage" },
  "metrics-server": { addon: "metrics", flag: "--no-metrics" },
};

/** An add-on image as a version set names it: its manifest id, full name, and pinned digest if any. */
export interface AddonImagePin {
  id: string;
  name: string;
  digest: string | null;
}

/** The images an installed plan's enabled add-ons run, by their manifest ids. */
export function addonImagePins(addons: AddonsPlan | undefined): AddonImagePin[] {
  if (!addons) return [];
  const pin = (id: string, i: AddonImage): AddonImagePin => ({ id, name: i.name, digest: i.digest });
  const { dns, storage, metrics } = addons;
  return [
    ...(dns.enabled ? [pin("coredns", dns.image)] : []),
    ...(storage?.enabled ? [pin("local-path-provisioner", storage.image), pin("local-path-helper", storage.helperImage)] : []),
    ...(metrics?.enabled ? [pin("metrics-server", metrics.image)] : []),
  ];
}

/**
 * An add-on image that image archives do not provide as its pod names it: no archive holds the
 * name (`missing`), or they hold it, but not as the pinned digest (`other-digest`; `have` lists the
 * digests they hold it as, null for a classic docker save, which carries none). A pod names a
 * pinned image `name@digest`, so offline only an image of that digest lets it start.
 */
export type AddonImageGap = AddonImagePin &
  ({ kind: "missing" } | { kind: "other-digest"; digest: string; have: (string | null)[]; files: string[] });

/** The gaps between add-on images and what archives carry (each image: its name, digest, and file). */
export function addonImageGaps(
  pins: readonly AddonImagePin[],
  carried: readonly { name: string; digest: string | null; file: string }[],
): AddonImageGap[] {
  const gaps: AddonImageGap[] = [];
  for (const p of pins) {
    const same = carried.filter((c) => c.name === p.name);
    if (same.length === 0) gaps.push({ ...p, kind: "missing" });
    else if (p.digest && !same.some((c) => c.digest === p.digest))
      gaps.push({
        ...p,
        kind: "other-digest",
        digest: p.digest,
        have: [...new Set(same.map((c) => c.digest))],
        files: [...new Set(same.map((c) => c.file))],
      });
  }
  return gaps;
}

/**
 * What the user reads about one gap: why the add-on's pod cannot start offline, and the exact fix.
 * `where`: the archives go into a bundle, or were loaded into the node (only other-digest applies),
 * or into the user's Docker on its classic image store, which keeps no registry digest for what it
 * loads (every pinned one).
 */
export function addonImageGapNote(g: AddonImageGap, where: "bundle" | "node" | "docker"): string {
  const use = ADDON_OF_IMAGE[g.id];
  const addon = `the ${use?.addon ?? g.id} add-on's image`;
  const off = use?.flag ?? "that add-on off";
  // A pinned image must keep its registry digest, which a classic docker save drops.
  const save = (digest: string | null) =>
    digest
      ? `skopeo copy --multi-arch all docker://${g.name}@${digest} oci-archive:${g.id}.tar:${g.name}`
      : `docker save ${g.name} -o ${g.id}.tar`;
  if (g.kind === "missing")
    return `the bundle carries no ${g.name} (${addon}): offline its pod cannot start; add it with --image FILE (for example \`${save(g.digest)}\`), or install with ${off}`;
  if (where === "docker")
    return `Docker's classic image store keeps no registry digest for a loaded image, and the version set pins ${g.name}@${g.digest.slice(0, 19)}… (${addon}): its pod makes dockerd pull that digest; let dockerd reach the registry (\`docker pull ${g.name}@${g.digest}\`), or ${DOCKER_CONTAINERD_STORE_FIX} and load the archive again, or install with ${off}`;
  const held = g.have.map((d) => (d ? `as ${d.slice(0, 19)}…` : "with no registry digest (a classic docker save)")).join(", ");
  const short = g.digest.slice(0, 19);
  const into = where === "bundle" ? "the bundle" : "the node";
  return `${g.files.join(", ")} hold${g.files.length > 1 ? "" : "s"} ${g.name} ${held}, but the version set pins ${short}… (${addon}), and its pod names ${g.name}@${short}…: offline it cannot start from ${into}'s copy; save the pinned image itself with \`${save(g.digest)}\` and use that file, or install with ${off}`;
}
