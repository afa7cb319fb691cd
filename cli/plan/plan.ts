// The node plan: every decision rootless-k8s makes about a node, as one typed, serializable
// object. cli/plan builds it from host facts (pure), cli/render turns it into files (pure),
// cli/apply writes those files. `rootless-k8s install --dry-run --json` prints it as is.
//
// Everything here is data: no functions, no Dates, no Buffers, so a plan round-trips through
// JSON (the receipt stores it) and two plans compare with a deep equality.

import type { KubeletCapabilities } from "../host/facts";
import type { SupervisorKind, SupervisorPlan } from "./supervisor";
import type { NetworkPolicyPlan } from "./network-policy";

export type { KubeletCapabilities };

export const PLAN_SCHEMA_VERSION = 1;

/** `delegated`: cgroup v2 with cpu, memory and pids delegated. `none`: no cgroup writes at all. */
export type Mode = "delegated" | "none";
export type RuntimeName = "containerd" | "crio" | "docker";
/** RootlessKit network drivers; `builtin` is RootlessKit 3's gvisor-tap-vsock. */
export type NetworkDriver = "slirp4netns" | "pasta" | "builtin";
export type Snapshotter = "overlayfs" | "fuse-overlayfs" | "native";
export type PkiAlgorithm = "ecdsa-p256" | "rsa-2048";
export type ProxyMode = "iptables" | "nftables";

/** A decision and the plain-words reasons for it, so `--dry-run` can explain itself. */
export interface Reasoned {
  reasons: string[];
}

export interface ModePlan extends Reasoned {
  name: Mode;
  /** What a `none` node gives up, point by point; empty for `delegated`. */
  givesUp: string[];
  /** The host's cgroup layout the mode was chosen for. */
  cgroup: "v1" | "hybrid" | "v2";
}

/** The versions of one version set (from the components manifest). */
export interface VersionSet {
  /** Names the folder versions/<id>; stable for the same set of versions. */
  id: string;
  /** Component name → upstream version without a leading "v" (kubernetes, etcd, containerd, ...). */
  components: Readonly<Record<string, string>>;
  /** Add-on id → the image the manifest pins for it (absent from older receipts and manifests). */
  images?: Readonly<Record<string, { name: string; digest: string | null }>>;
  /** Components the set could not carry, with why (a --kubernetes-version set). */
  unavailable?: Readonly<Record<string, string>>;
  /** How the set was chosen and who vouches for its checksums, a line each (absent in older receipts). */
  reasons?: readonly string[];
}

/** A container image an add-on runs: `ref` is what the pod spec names (name@digest when pinned). */
export interface AddonImage {
  name: string;
  digest: string | null;
  ref: string;
}

/** Cluster DNS: CoreDNS behind the kube-dns Service, and the kubelet's clusterDNS pointing at it. */
export interface DnsAddonPlan extends Reasoned {
  enabled: boolean;
  /** The tenth address of the service network (kubeadm's and k3s's choice). */
  serviceIP: string;
  domain: string;
  image: AddonImage;
}

/** Storage: the default StorageClass, backed by rancher's local-path-provisioner. */
export interface StorageAddonPlan extends Reasoned {
  enabled: boolean;
  /** Where volumes live: a folder of the node's data (kept by uninstall, removed by --purge). */
  path: string;
  storageClass: string;
  image: AddonImage;
  /** The helper pod's image: it creates and removes each volume's folder. */
  helperImage: AddonImage;
}

/** Metrics: metrics-server behind the metrics.k8s.io APIService (kubectl top). */
export interface MetricsAddonPlan extends Reasoned {
  enabled: boolean;
  image: AddonImage;
  /**
   * Whose figures `kubectl top` shows: nodes and pods (mode delegated), or nodes only (mode none,
   * where every pod shows the figures of the cgroup all pods share, not its own).
   */
  figures: "nodes-and-pods" | "nodes";
}

/** Add-ons applied through the API server once the node is Ready (cli/render/addons.ts). */
export interface AddonsPlan {
  dns: DnsAddonPlan;
  /** Absent from plans written before the storage add-on existed. */
  storage?: StorageAddonPlan;
  /** Absent from plans written before the metrics add-on existed. */
  metrics?: MetricsAddonPlan;
}

export interface RuntimePlan extends Reasoned {
  name: RuntimeName;
  /** The runtime's version: the pinned one we install, or the user's (--runtime-bin, docker). */
  version: string;
  /** "bundled": from the version set, installed by us. "host": the user's own binary or daemon. */
  source: "bundled" | "host";
  /** The daemon binary the owner unit runs (containerd, crio); for docker, cri-dockerd. */
  binary: string;
  /** CRI socket the kubelet talks to (absolute path). */
  criSocket: string;
  /** containerd only: config format version (3 for containerd 2.x, 2 for 1.x). */
  containerdConfigVersion: 2 | 3 | null;
  /**
   * OCI runtime binary (runc from the version set; crun for CRI-O's bundle, and for containerd 2.x
   * in mode none with `cgroupManager: "disabled"`: crun's own switch that makes it ignore every
   * cgroup path and limit, which containerd 2.0 no longer offers (it removed `disable_cgroup`).
   */
  ociRuntime: { name: "runc" | "crun"; path: string; cgroupManager?: "disabled" } | null;
  /** Whether the runtime must not touch cgroups (containerd 1.x `disable_cgroup`, crun's disabled manager). */
  disableCgroup: boolean;
  /**
   * Whether every container gets a session keyring of its own (runc's and crun's default). Each
   * counts against the user's kernel.keys.maxkeys (200 for a user who is not root, about 97 pods
   * with their pause containers); false: containers keep the node's own session keyring
   * (containerd's NoNewKeyring), which the namespace owner's unit makes private to the node.
   */
  keyringPerContainer: boolean;
  /**
   * docker only: the user's rootless dockerd: its socket, its pid file (dockerd runs inside its
   * RootlessKit's namespaces, so its pid is the way in), and its systemd user unit.
   */
  /** cgroupDriver: dockerd's (its `docker info`); "systemd" puts each container in its own scope with its limits. */
  /** imageStore: where dockerd keeps images ("containerd" keeps a loaded image's digest; "classic" none). */
  docker: {
    socket: string;
    pidFile: string;
    unit: string;
    cgroupDriver?: string | null;
    imageStore?: "containerd" | "classic" | null;
  } | null;
  /** Snapshotter (containerd) or storage driver (CRI-O); null for docker (dockerd decides). */
  snapshotter: { name: Snapshotter; reasons: string[]; fuseOverlayfs: string | null } | null;
}

export interface NetworkPlan extends Reasoned {
  /** "docker": dockerd's own RootlessKit owns the network (the docker runtime). */
  driver: NetworkDriver | "docker";
  /** Binary RootlessKit runs for the driver (slirp4netns, pasta); null for builtin. */
  binary: string | null;
  /** RootlessKit's port driver for this network driver. */
  portDriver: "builtin" | "implicit";
  mtu: number;
  /** The namespace's own network (RootlessKit --cidr) and the node's address in it. */
  namespaceCidr: string;
  namespaceIP: string;
  /** Ports published on the host: for pasta every listening port is forwarded implicitly. */
  published: { hostIP: string; hostPort: number; namespacePort: number; protocol: "tcp" }[];
  /** True when the driver forwards every port bound in the namespace (pasta's implicit driver). */
  forwardsAllPorts: boolean;
  /** The range of Services' NodePorts (--node-port-range; the API server's default 30000-32767). Absent from plans written before it. */
  nodePorts?: { first: number; last: number };
}

/** The pod network across hosts: a VXLAN device in the namespace, kept by the overlay unit (cli/plan/overlay.ts). */
export interface OverlayPlan extends Reasoned {
  /** Off where the host's port for it cannot be published (docker, pasta): then the node is a single node. */
  enabled: boolean;
  vni: number;
  /** The UDP port, in the namespace and on the host. */
  port: number;
  device: string;
  mtu: number;
}

export interface Cidrs extends Reasoned {
  pods: string;
  /**
   * This node's own part of the pod network: the /24 the controller-manager gave it (spec.podCIDR),
   * the CNI bridge's range, so that no two nodes' pods share an address. Null until the node
   * registered: the apply engine then writes the CNI network in a second pass. Absent from plans
   * written before nodes had ranges (their bridge takes the whole pod network).
   */
  node?: string | null;
  services: string;
  /** First address of the service range: the `kubernetes` service, a SAN of the API server. */
  firstServiceIP: string;
}

/**
 * Publishing the cluster's own ports on the host: rootless-k8s-ports.service (`rootless-k8s ports
 * run`) watches Services and pods and publishes every NodePort, each LoadBalancer port and every pod
 * hostPort through RootlessKit's port API (cli/plan/ports.ts decides the set).
 */
export interface PublishPlan extends Reasoned {
  /** Off where RootlessKit's port API is not ours to reconcile, or there is none (docker, pasta): then no ports unit. */
  enabled: boolean;
  /** --publish-address: the host address every port is published on (default 0.0.0.0, as Docker's -p). */
  bindAddress: "0.0.0.0" | "127.0.0.1";
  /**
   * Where RootlessKit connects inside the namespace: the node's own address (network.namespaceIP),
   * which kube-proxy's NodePort rules (iptables and nftables) and portmap's hostPort rules match.
   */
  childIP: string;
  /** A port below net.ipv4.ip_unprivileged_port_start is refused, naming the sysctl that allows it (never shifted). */
  privilegedPorts: "refuse";
  /** status.loadBalancer.ingress of LoadBalancer Services: the host's addresses (127.0.0.1 when bound there). */
  ingressIPs: string[];
  /** Whether a pod sees the client's own address (TCP, UDP) through this port driver; the reasons say when. */
  keepsSourceIP: { tcp: boolean; udp: boolean };
  /** The command the ports unit runs before `ports run`: this rootless-k8s binary. */
  command: string[];
}

/** TCP ports inside the namespace. Only apiServer is published unless the driver forwards all. */
export interface Ports {
  apiServer: number;
  etcdClient: number;
  etcdPeer: number;
  kubelet: number;
  kubeletHealthz: number;
  controllerManager: number;
  scheduler: number;
  kubeProxyHealthz: number;
  kubeProxyMetrics: number;
}

export interface NodePlan {
  name: string;
  /**
   * The address the node advertises (the kubelet's --node-ip, a server's API server
   * --advertise-address): a host address (install --node-ip, a worker's join), put on the
   * namespace's loopback where the kubelet looks for it. Absent: the namespace's own address.
   */
  ip?: string;
  labels: Record<string, string>;
  taints: { key: string; value: string; effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute" }[];
}

export interface KubeletPlan extends Reasoned {
  /** "none" only when the kubelet in use was probed and accepts it (a patched kubelet). */
  cgroupDriver: "cgroupfs" | "none";
  cgroupsPerQOS: boolean;
  enforceNodeAllocatable: string[];
  /** Set (false) on cgroup v1/hybrid: kubelet >= 1.35 refuses v1 otherwise. */
  failCgroupV1: boolean | null;
  featureGates: Record<string, boolean>;
  /**
   * Whether the kubelet accounts local storage (ephemeral-storage, emptyDir, the node's file
   * systems): on only where cAdvisor can read the data folder's file system (cli/host/fs-stats.ts),
   * and then the eviction manager observes memory, disk and PIDs; off elsewhere, where it cannot.
   */
  localStorageCapacityIsolation: boolean;
  /** How the cgroup driver was found: probed from the binary, or the binary is not there yet. */
  probe: "probed" | "not-installed";
  /** The eviction thresholds (cli/plan/eviction.ts); absent from plans written before they could be chosen. */
  eviction?: EvictionPlan;
  /** Below the kubelet's 110 only when the user's limits allow fewer pods (doctor's pod-limits rule); absent: 110. */
  maxPods?: number;
}

/** The kubelet's evictionHard, evictionSoft and evictionSoftGracePeriod: { signal: value }. */
export interface EvictionPlan {
  hard: Record<string, string>;
  soft: Record<string, string>;
  softGracePeriod: Record<string, string>;
}

export interface Paths {
  home: string;
  /** --prefix, when given: binaries, data, config and PKI move below it. */
  prefix: string | null;
  /** ~/.local/share/rootless-k8s (or the prefix). */
  shareDir: string;
  /** shareDir/versions; each set in versions/<set>, the active one behind the `current` link. */
  versionsDir: string;
  /** versions/<set> of this plan. */
  versionDir: string;
  /** versions/<set>/bin: where the binaries of this plan's set are installed. */
  versionBinDir: string;
  /** versions/current: a symlink to versions/<set>, switched atomically on upgrade. */
  currentLink: string;
  /** versions/current/bin: what units run, so an upgrade is a link switch plus restarts. */
  binDir: string;
  /** Helper scripts rendered from the plan (the namespace child, the nsenter wrapper). */
  libexecDir: string;
  /** Persistent node data: etcd, kubelet, containerd/CRI-O storage, CNI state, logs. */
  dataDir: string;
  /** ~/.config/rootless-k8s: component configs, env files, kubeconfigs. */
  configDir: string;
  /** configDir/pki: keys and certificates (0700). */
  pkiDir: string;
  /** $XDG_RUNTIME_DIR/rootless-k8s: sockets and pid files. */
  runtimeDir: string;
  /** RootlessKit's --state-dir (child_pid, api.sock). */
  rootlesskitStateDir: string;
  /**
   * Where the services' definitions go: ~/.config/systemd/user, the only place the user's systemd
   * reads units from (not moved by --prefix); under `rootless-k8s up`, configDir/services.
   */
  unitDir: string;
  /** The environment file every unit reads (ours) and the user's optional one (never written by us). */
  envFile: string;
  userEnvFile: string;
  /** The install receipt (written by cli/apply). */
  receipt: string;
  /** The admin kubeconfig (0600). */
  adminKubeconfig: string;
  /** ~/.kube/config: where the admin context is offered for merging. */
  userKubeconfig: string;
  /** Download cache of cli/fetch. */
  cacheDir: string;
  /** Unit output when the user manager has no journal: $XDG_STATE_HOME/rootless-k8s/logs/<unit>.log. */
  logDir: string;
}

export interface UserPlan {
  name: string;
  uid: number;
  gid: number;
}

/**
 * A worker: a node that joined another host's control plane (`rootless-k8s join`). It runs the
 * runtime, the kubelet and kube-proxy, and no etcd and no control plane.
 */
export interface JoinPlan extends Reasoned {
  /** The control plane's API server, as this host reaches it (the URL of the join line). */
  server: string;
  /** The control plane's CA (PEM), fetched from cluster-info and verified against `caHash`. */
  caPem: string;
  /** kubeadm's pin of that CA: sha256:<hex of its SubjectPublicKeyInfo's digest>. */
  caHash: string;
  /**
   * The host address this node advertises (the kubelet's --node-ip): the control plane reaches the
   * kubelet there, through the port RootlessKit publishes. Added to the namespace's loopback, where
   * the kubelet looks for it.
   */
  nodeIP: string;
  /** The Kubernetes version of the control plane when this node joined (a worker never runs newer). */
  controlPlaneVersion: string;
}

export interface Plan {
  schemaVersion: typeof PLAN_SCHEMA_VERSION;
  /** "server": etcd, the control plane and a node (install). "worker": a node only (join). Absent: server. */
  role?: "server" | "worker";
  /** The worker's control plane; absent for a server. */
  join?: JoinPlan;
  user: UserPlan;
  arch: string;
  mode: ModePlan;
  versions: VersionSet;
  rootlesskit: {
    version: string;
    /** Create a cgroup namespace and move RootlessKit's own processes to a leaf (delegated mode). */
    evacuateCgroup2: string | null;
  };
  runtime: RuntimePlan;
  network: NetworkPlan;
  cidrs: Cidrs;
  ports: Ports;
  node: NodePlan;
  kubelet: KubeletPlan;
  /**
   * kube-proxy: its backend, and whether it masquerades all Service traffic (always: see
   * decideProxy in cli/plan/index.ts).
   */
  proxy: { mode: ProxyMode; masqueradeAll: boolean } & Reasoned;
  pki: { algorithm: PkiAlgorithm; hostnames: string[]; hostAddresses: string[] };
  /** Absent from the plans of receipts written before add-ons existed (read: no add-ons). */
  addons?: AddonsPlan;
  /** Absent from the plans of receipts written before ports were published (read: off, no ports unit). */
  publish?: PublishPlan;
  /** Absent from the plans of receipts written before nodes could join (read: off, no overlay unit). */
  overlay?: OverlayPlan;
  /** NetworkPolicy enforcement (cli/plan/network-policy.ts); absent from older plans (read: not enforced). */
  networkPolicy?: NetworkPolicyPlan;
  paths: Paths;
  /** The Go runtime's settings for the node's Go components (cli/plan/memory.ts); absent from older plans (Go's defaults). */
  memory?: { goGC: number } & Reasoned;
  /** What runs the services: the user's systemd, or `rootless-k8s up` (cli/plan/supervisor.ts); absent from older plans (systemd). */
  supervisor?: SupervisorPlan;
  /** Where unit output goes: the journal, or one file per unit in paths.logDir (no journald). */
  logging: { to: "journal" | "file" } & Reasoned;
  /** systemd unit names, by role. */
  units: UnitNames;
  /**
   * The services systemd starts only once the node admits other nodes (cli/plan/on-demand.ts): a
   * server's overlay and approver. Absent from older plans, whose units always ran.
   */
  onDemand?: { units: string[] } & Reasoned;
}

export interface UnitNames {
  target: string;
  /** The namespace owner (RootlessKit + runtime); for docker, the user's docker.service. */
  owner: string;
  etcd: string;
  apiServer: string;
  controllerManager: string;
  scheduler: string;
  kubelet: string;
  kubeProxy: string;
  /** docker only: cri-dockerd. */
  criDockerd: string | null;
  /** The port publisher, when plan.publish is on; absent from plans written before it existed. */
  ports?: string | null;
  /** The timer that rotates the units' log files (logging to files only); absent from plans written before it existed. */
  logRotate?: string | null;
  /**
   * The kubelet serving-certificate approver (`rootless-k8s approver run`, on the host): a server
   * approves its workers' kubelet-serving CSRs. Null on a worker; absent from older plans.
   */
  csrApprover?: string | null;
  /** The overlay agent (rootless-k8s-overlay.service); null or absent when the plan has no overlay. */
  overlay?: string | null;
  /** The NetworkPolicy enforcer (rootless-k8s-netpol.service); null or absent when the plan enforces none. */
  networkPolicy?: string | null;
}

/** What the user asked for on the command line; everything is optional. */
export interface PlanOptions {
  mode?: Mode;
  runtime?: RuntimeName;
  /** An existing runtime binary to use instead of the bundled one (containerd 1.x or 2.x). */
  runtimeBin?: string;
  /** Version of runtimeBin, probed by the caller (the plan stays pure). */
  runtimeBinVersion?: string | null;
  network?: NetworkDriver;
  apiPort?: number;
  prefix?: string;
  taintNone?: boolean;
  /** false: no cluster DNS (--no-dns). */
  dns?: boolean;
  /** false: no default StorageClass and provisioner (--no-storage). */
  storage?: boolean;
  /** false: no metrics-server (--no-metrics). */
  metrics?: boolean;
  /** --node-port-range: where Services' NodePorts come from (default 30000-32767). */
  nodePortRange?: { first: number; last: number };
  /** --publish-address: where Services' and pods' ports are published on the host (default 0.0.0.0). */
  publishAddress?: "0.0.0.0" | "127.0.0.1";
  /**
   * The rootless-k8s command the ports unit runs (cli/apply/prepare.ts: the running binary). Absent:
   * ~/.local/bin/rootless-k8s, where install.sh puts it.
   */
  selfCommand?: string[];
  pkiAlgorithm?: PkiAlgorithm;
  nodeName?: string;
  /** --node-ip: the host address the node advertises (for other hosts: a control plane that nodes join). */
  nodeIP?: string;
  /** What the kubelet binary in use accepts (cli/host/kubelet.ts); absent when not installed yet. */
  kubelet?: KubeletCapabilities | null;
  /**
   * Networks the node's own must not overlap besides the host's routes (a join: the control plane's
   * address, its pod and service networks).
   */
  avoidCidrs?: string[];
  /** XDG_* variables of the user's environment. */
  env?: Readonly<Record<string, string | undefined>>;
  /** --eviction-hard, parsed: { signal: value } over the defaults (cli/plan/eviction.ts). */
  evictionHard?: Record<string, string>;
  /** --eviction-soft, parsed. */
  evictionSoft?: Record<string, string>;
  /** --eviction-soft-grace: how long a soft threshold must hold (default 1m30s). */
  evictionSoftGrace?: string;
  /** --supervisor: what runs the node's services (default: systemd where a user manager answers, else `up`). */
  supervisor?: SupervisorKind;
  /** false: --no-network-policy (NetworkPolicies accepted, not enforced); default: enforced where the host can. */
  networkPolicy?: boolean;
}

/** Probed from the kubelet binary (cli/host/kubelet.ts). */
