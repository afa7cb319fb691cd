// What rootless-k8s knows about a host: plain data, gathered read-only through a Host
// (cli/host/gather.ts), judged by cli/doctor and turned into a node by cli/plan.
// `null` always means "could not be determined", never "no".

import type { Listener } from "./parse/procfs";

export type Family = "debian" | "rhel" | "suse" | "arch" | "alpine" | "other";
export type CgroupMode = "v1" | "hybrid" | "v2";
export type Controller = "cpu" | "cpuset" | "io" | "memory" | "pids" | "hugetlb" | "rdma" | "misc";
export type Arch = "amd64" | "arm64";

export interface DistroFacts {
  id: string;
  versionId: string | null;
  idLike: string[];
  prettyName: string | null;
  versionCodename: string | null;
  family: Family;
  /** Which file was read: /etc/os-release, else /usr/lib/os-release; null if neither. */
  source: string | null;
}

export interface KernelFacts {
  /** `uname -s`: "Linux" on every host rootless-k8s supports. */
  sysname: string;
  release: string;
  /** [major, minor, patch] parsed from release; null if unparseable. */
  version: [number, number, number] | null;
  /** 0 = not WSL, 1 = WSL 1 ("-Microsoft"), 2 = WSL 2 ("-microsoft-standard"). From /proc/version. */
  wsl: 0 | 1 | 2;
  /** /proc/cmdline, for boot flags (user_namespace.enable=1, systemd.unified_cgroup_hierarchy). */
  cmdline: string | null;
}

export interface SubIdRange {
  start: number;
  count: number;
}

export interface SubIdFacts {
  /** The file that was read (/etc/subuid or /etc/subgid); null if absent. */
  file: string | null;
  /** Ranges of the evaluated user, matched by name or by numeric UID. */
  ranges: SubIdRange[];
  matchedBy: "name" | "uid" | null;
  /** Total ids over all ranges. */
  total: number;
  /** Other users' ranges that overlap one of ours. */
  overlapsOtherUsers: { owner: string; range: SubIdRange }[];
  /** Real UIDs/GIDs (from /etc/passwd or /etc/group) that fall inside our ranges. */
  overlapsRealIds: { name: string; id: number }[];
  /** Where the ranges came from: the file, or NSS through `getsubids` (SSSD, LDAP); null if none found. */
  source: "file" | "getsubids" | null;
  /** First start (>= 100000, a multiple of 65536) above every range in the file: where a new range fits. */
  nextFreeStart: number;
}

export interface IdMapBinary {
  /** Path found on PATH (or the usual /usr/bin location), null if missing. */
  path: string | null;
  setuidRoot: boolean;
  /** File capabilities as getcap prints them ("cap_setuid=ep"); null if none or unknown. */
  capabilities: string | null;
  /** False when neither setuid nor caps could be confirmed because getcap was unavailable. */
  capabilitiesKnown: boolean;
  /** The binary can map ids for others: setuid-root, or holds cap_setuid/cap_setgid. */
  privileged: boolean;
}

export interface UserFacts {
  name: string;
  uid: number;
  gid: number;
  home: string | null;
  /** The process runs as root (uid 0), or the evaluated user is root. */
  isRoot: boolean;
  /** The evaluated user is not the one running this process (doctor --user). */
  evaluatedOther: boolean;
  homeWritable: boolean | null;
  /**
   * XDG_RUNTIME_DIR as set (or /run/user/UID for --user), and whether it exists and is ours; its
   * owner and permission bits (st_mode & 0o7777), null when it does not exist.
   */
  runtimeDir: {
    path: string | null;
    fromEnv: boolean;
    exists: boolean;
    ownedByUser: boolean;
    writable: boolean | null;
    uid: number | null;
    mode: number | null;
  };
  /** Came in through su/sudo (SUDO_USER set, or no XDG_RUNTIME_DIR though a session exists). */
  viaSuOrSudo: boolean;
  subuid: SubIdFacts;
  subgid: SubIdFacts;
  newuidmap: IdMapBinary;
  newgidmap: IdMapBinary;
}

export interface UsernsFacts {
  /** kernel.unprivileged_userns_clone (Debian <= 10, old Arch); null if the sysctl does not exist. */
  unprivilegedUsernsClone: number | null;
  /** user.max_user_namespaces */
  maxUserNamespaces: number | null;
  /** RHEL/CentOS 7 kernel (3.10.x el7) without user_namespace.enable=1 on the command line. */
  rhel7BootFlagMissing: boolean;
  /** kernel.apparmor_restrict_unprivileged_userns (Ubuntu 23.10+); null if absent. */
  apparmorRestrict: number | null;
  /** AppArmor is enabled (/sys/module/apparmor/parameters/enabled = Y). */
  apparmorEnabled: boolean | null;
  /** Profiles in /etc/apparmor.d that grant `userns` to a given binary path (attach path -> profile file). */
  apparmorUsernsProfiles: { attach: string; file: string }[];
  /** The rootlesskit binary the node will run (gatherFacts option rootlesskitPath), as given. */
  rootlesskitPath: string;
  /**
   * The real paths AppArmor will see for it: the `current` link resolved, or, before install, a
   * representative versions/<set>/ path. A profile must cover every one of these.
   */
  rootlesskitRealPaths: string[];
  /** Attachment the root script's profile uses: covers every version set (versions/*\/bin/rootlesskit). */
  rootlesskitProfileAttach: string;
  /** An AppArmor profile with `userns` covers the rootlesskit the node will run; null when AppArmor is not involved. */
  rootlesskitCovered: boolean | null;
  /** `unshare --user --map-root-user true` as the evaluated user: null when not run. */
  smokeTest: { ok: boolean; error: string | null } | null;
}

export interface CgroupFacts {
  mode: CgroupMode;
  /** Controllers at the v2 root (/sys/fs/cgroup/cgroup.controllers or the hybrid unified mount). */
  rootControllers: Controller[];
  /** Path of user@UID.service in the v2 tree, e.g. /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service */
  userServicePath: string | null;
  /** Content of user@UID.service/cgroup.controllers; null if not readable (v1, or no user manager). */
  userControllers: Controller[] | null;
  /** cpu, memory and pids all delegated: the condition for the `delegated` mode. */
  delegated: boolean;
  /** The v2 hierarchy this process sits in (0:: line of /proc/self/cgroup). */
  selfCgroup: string | null;
  /** Mount point of the v2 hierarchy: /sys/fs/cgroup (v2) or /sys/fs/cgroup/unified (hybrid); null on pure v1. */
  v2Mount: string | null;
}

export interface SystemdFacts {
  /** systemctl --version, e.g. 252. */
  version: number | null;
  /** `systemctl --user show-environment` answered. */
  userManager: boolean;
  /** A D-Bus session bus for the user (socket at $XDG_RUNTIME_DIR/bus or dbus-user-session). */
  dbusUserSession: boolean;
  /** /var/lib/systemd/linger/USER exists (what loginctl enable-linger writes and logind reads). */
  linger: boolean | null;
  /** PID 1 is systemd. */
  pid1: boolean;
  /** The user manager writes to journald (journalctl --user works). */
  journal: boolean | null;
}

export interface ToolFacts {
  /** Upstream version without leading v or distro suffix: "1.6.20". */
  version: string | null;
  /** Exactly what the tool printed, first relevant line. */
  raw: string | null;
  path: string | null;
}

export interface PastaFacts extends ToolFacts {
  /**
   * `pasta --host-lo-to-ns-lo --version` succeeded: the option of passt 2024_10_30 that RootlessKit
   * probes for (its pasta.DetectFeatures). A version-free sign of a recent pasta: passt 2025_05_03
   * loses its `--version` text when stdout is a pipe (fprintf, then _exit), and Debian 12's build
   * prints "unknown version".
   */
  hostLoToNsLo: boolean;
}

export interface DockerFacts extends ToolFacts {
  clientVersion: string | null;
  serverVersion: string | null;
  /** Server reachable (`docker version` printed a Server section / `docker info` answered). */
  serverReachable: boolean;
  rootless: boolean | null;
  /** "none", "cgroupfs" or "systemd"; null if unknown. */
  cgroupDriver: string | null;
  cgroupVersion: "1" | "2" | null;
  /** Where dockerd keeps images (parse/docker.ts DockerReading.imageStore); absent in older facts. */
  imageStore?: "containerd" | "classic" | null;
  /** The daemon's socket (DOCKER_HOST or $XDG_RUNTIME_DIR/docker.sock). */
  socket: string | null;
  /** The uid that owns that socket file (stat); null when it is not a unix socket one can stat. */
  socketOwner?: number | null;
  /**
   * The address of dockerd's RootlessKit network namespace (its tap0, "10.0.2.100/24" by default),
   * read inside that namespace; null when it could not be read (older facts have no such field).
   */
  namespaceAddress?: string | null;
}

export interface IptablesFacts extends ToolFacts {
  backend: "legacy" | "nf_tables" | null;
}

export interface RuntimeFacts {
  docker: DockerFacts | null;
  containerd: ToolFacts | null;
  crio: ToolFacts | null;
  runc: ToolFacts | null;
  crun: ToolFacts | null;
  rootlesskit: ToolFacts | null;
  slirp4netns: ToolFacts | null;
  pasta: PastaFacts | null;
  fuseOverlayfs: ToolFacts | null;
  iptables: IptablesFacts | null;
  /** The nft command: kube-proxy's nftables mode runs it (knftables, nft >= 1.0.1). */
  nft: ToolFacts | null;
  nsenter: ToolFacts | null;
}

export type ModuleState = "loaded" | "builtin" | "missing" | "unknown";

export interface DeviceFacts {
  exists: boolean;
  /** The evaluated user can open it read-write (access(2) for the current user, mode bits for --user). */
  usable: boolean | null;
  /** Permission bits, e.g. 0o666. */
  mode: number | null;
}

export interface KernelFeatureFacts {
  /** Rootless overlayfs works: by kernel >= 5.11 or a real mount test in a user namespace. */
  overlayRootless: { ok: boolean | null; basis: "kernel-version" | "mount-test" | "unknown" };
  devFuse: boolean;
  devNetTun: boolean;
  /** Details of /dev/fuse and /dev/net/tun (slirp4netns and pasta open the tun device as the user). */
  devices: { fuse: DeviceFacts; netTun: DeviceFacts };
  /** Whether module state could be read at all (/proc/modules or modules.builtin present). */
  modulesSource: "proc-modules" | "evidence" | "none";
  modules: Record<string, ModuleState>;
  ipForward: number | null;
  ipUnprivilegedPortStart: number | null;
  inotifyMaxUserWatches: number | null;
  inotifyMaxUserInstances: number | null;
  /** Total swap in KiB from /proc/meminfo (kubelet runs with failSwapOn: false). */
  swapTotalKiB: number | null;
  memTotalKiB: number | null;
  selinux: "enforcing" | "permissive" | "disabled" | null;
  dmesgRestrict: number | null;
  /** net.ipv4.ping_group_range as [low, high]. */
  pingGroupRange: [number, number] | null;
}

export interface Route {
  /** Destination in CIDR form, e.g. "10.0.2.0/24"; "0.0.0.0/0" for the default route. */
  cidr: string;
  iface: string;
}

export interface NetworkFacts {
  /** IPv4 routes from /proc/net/route. */
  routes: Route[];
  /** The host's TCP sockets in LISTEN (from /proc/net/tcp and tcp6), each with its owner's uid. */
  listeners: Listener[];
  /** Names of the listeners' owners, by uid, as /etc/passwd gives them. */
  listenerNames: Record<number, string>;
  hostname: string | null;
  /** Non-loopback IPv4 addresses of the host (for API server SANs). */
  addresses: string[];
  /** The ports the node needs on the host (gatherFacts option ports), the API server's first. */
  wantedPorts: number[];
  /** The user chose the API port (--api-port): it does not move when taken. */
  apiPortFixed: boolean;
  /** The installed node's own published ports (its receipt; gatherFacts option ownPorts). */
  ownPorts: number[];
}

/** The per-user limits a full node meets (issue 45), and what the user holds of them now. */
export interface UserLimitFacts {
  /** The uid's keys (/proc/key-users) and its quota, kernel.keys.maxkeys (root_maxkeys for root). */
  keys: { used: number; max: number } | null;
  /** RLIMIT_NPROC (ulimit -u), counting the user's processes and threads together; null when unknown (doctor --user). */
  nproc: number | "unlimited" | null;
  /** The threads the user's processes run now; null when /proc cannot be listed. */
  threads: number | null;
  /** kernel.threads-max: the whole system's. */
  threadsMax: number | null;
  /**
   * The lowest pids.max over user.slice, the user's slice (user-UID.slice, systemd's UserTasksMax=)
   * and user manager (user@UID.service), which every task of the node counts against (its units run
   * under the user manager in either mode); null where none is set or readable.
   */
  pidsMax?: { max: number; cgroup: string } | null;
}

export interface DiskFacts {
  /** The folder data would live in (or its nearest existing parent) and its free space. */
  dataDir: string;
  freeBytes: number | null;
  /** statfs type magic name when interesting: "nfs", "tmpfs", ... */
  fsType: string | null;
  /** The major number of its device: 0 when the file system has no block device; null when unknown. */
  devMajor: number | null;
}

export interface Facts {
  distro: DistroFacts;
  kernel: KernelFacts;
  arch: Arch | string;
  user: UserFacts;
  userns: UsernsFacts;
  cgroup: CgroupFacts;
  systemd: SystemdFacts;
  runtimes: RuntimeFacts;
  features: KernelFeatureFacts;
  network: NetworkFacts;
  disk: DiskFacts;
  /** The per-user limits a full node meets; absent from facts recorded before they were read. */
  limits?: UserLimitFacts;
  /** Facts that were not gathered and why (e.g. commands not run under --root). */
  notes: string[];
}

/** What the kubelet binary in use can do, read from its own --help (cli/host/kubelet.ts). */
export interface KubeletCapabilities {
  path: string;
  version: string | null;
  /** `--cgroup-driver` lists "none" (a patched kubelet such as Usernetes' 2019-2021 builds). */
  cgroupDriverNone: boolean;
  /** The patched kubelet also needs the SupportNoneCgroupDriver feature gate. */
  supportNoneCgroupDriverGate: boolean;
}
