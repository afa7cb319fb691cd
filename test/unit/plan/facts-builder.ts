// Facts for plan tests that vary one thing at a time. The base is a Debian 12 host like the
// development machine (cgroup v1 hybrid, no delegation); golden tests use real fixture hosts instead.
import type { DockerFacts, Facts } from "../../../cli/host/facts";
import { loadManifest } from "../../../cli/fetch/manifest";
import { versionSetOf } from "../../../cli/plan/versions";
import type { Plan, VersionSet } from "../../../cli/plan/plan";
import { workerPlan } from "../../../cli/plan/worker";

/** The pinned version set of the built-in components manifest (assets/components.json). */
export function upstreamVersions(): VersionSet {
  return versionSetOf(loadManifest(), "amd64");
}

const tool = (version: string, path: string) => ({ version, raw: version, path });

export function baseFacts(): Facts {
  return {
    distro: {
      id: "debian",
      versionId: "12",
      idLike: [],
      prettyName: "Debian GNU/Linux 12 (bookworm)",
      versionCodename: "bookworm",
      family: "debian",
      source: "/etc/os-release",
    },
    kernel: { sysname: "Linux", release: "6.1.0-18-amd64", version: [6, 1, 0], wsl: 0, cmdline: null },
    arch: "amd64",
    user: {
      name: "alice",
      uid: 1000,
      gid: 1000,
      home: "/home/alice",
      isRoot: false,
      evaluatedOther: false,
      homeWritable: true,
      runtimeDir: { path: "/run/user/1000", fromEnv: true, exists: true, ownedByUser: true, writable: true, uid: 1000, mode: 0o700 },
      viaSuOrSudo: false,
      subuid: {
        file: "/etc/subuid",
        ranges: [{ start: 100000, count: 65536 }],
        matchedBy: "name",
        total: 65536,
        overlapsOtherUsers: [],
        overlapsRealIds: [],
        source: "file",
        nextFreeStart: 165536,
      },
      subgid: {
        file: "/etc/subgid",
        ranges: [{ start: 100000, count: 65536 }],
        matchedBy: "name",
        total: 65536,
        overlapsOtherUsers: [],
        overlapsRealIds: [],
        source: "file",
        nextFreeStart: 165536,
      },
      newuidmap: { path: "/usr/bin/newuidmap", setuidRoot: true, capabilities: null, capabilitiesKnown: true, privileged: true },
      newgidmap: { path: "/usr/bin/newgidmap", setuidRoot: true, capabilities: null, capabilitiesKnown: true, privileged: true },
    },
    userns: {
      unprivilegedUsernsClone: null,
      maxUserNamespaces: 63704,
      rhel7BootFlagMissing: false,
      apparmorRestrict: null,
      apparmorEnabled: false,
      apparmorUsernsProfiles: [],
      rootlesskitPath: "/home/alice/.local/share/rootless-k8s/versions/current/bin/rootlesskit",
      rootlesskitRealPaths: [],
      rootlesskitProfileAttach: "/home/alice/.local/share/rootless-k8s/versions/*/bin/rootlesskit",
      rootlesskitCovered: null,
      smokeTest: { ok: true, error: null },
    },
    cgroup: {
      mode: "hybrid",
      rootControllers: [],
      userServicePath: null,
      userControllers: null,
      delegated: false,
      selfCgroup: "/",
      v2Mount: "/sys/fs/cgroup/unified",
    },
    systemd: { version: 252, userManager: true, dbusUserSession: true, linger: true, pid1: true, journal: true },
    runtimes: {
      docker: null,
      containerd: null,
      crio: null,
      runc: null,
      crun: null,
      rootlesskit: null,
      slirp4netns: tool("1.2.0", "/usr/bin/slirp4netns"),
      pasta: null,
      fuseOverlayfs: null,
      iptables: { ...tool("1.8.9", "/usr/sbin/iptables"), backend: "nf_tables" },
      nft: null,
      nsenter: tool("2.38.1", "/usr/bin/nsenter"),
    },
    features: {
      overlayRootless: { ok: true, basis: "kernel-version" },
      devFuse: true,
      devNetTun: true,
      devices: { fuse: { exists: true, usable: true, mode: 0o666 }, netTun: { exists: true, usable: true, mode: 0o666 } },
      modulesSource: "proc-modules",
      modules: {},
      ipForward: 1,
      ipUnprivilegedPortStart: 1024,
      inotifyMaxUserWatches: 65536,
      inotifyMaxUserInstances: 128,
      swapTotalKiB: 0,
      memTotalKiB: 8 * 1024 * 1024,
      selinux: null,
      dmesgRestrict: 1,
      pingGroupRange: [0, 2147483647],
    },
    network: {
      routes: [
        { cidr: "0.0.0.0/0", iface: "eth0" },
        { cidr: "192.168.1.0/24", iface: "eth0" },
      ],
      listeners: [{ port: 22, uid: 0, address: "0.0.0.0" }],
      listenerNames: { 0: "root" },
      hostname: "devbox",
      addresses: ["192.168.1.20"],
      wantedPorts: [6443, 10250],
      apiPortFixed: false,
      ownPorts: [],
    },
    disk: { dataDir: "/home/alice/.local/share", freeBytes: 50e9, fsType: null, devMajor: 8 },
    notes: [],
  };
}

/** Cgroup v2 with cpu, memory and pids delegated to user@1000.service. */
export function delegatedFacts(): Facts {
  const f = baseFacts();
  f.cgroup = {
    mode: "v2",
    rootControllers: ["cpuset", "cpu", "io", "memory", "hugetlb", "pids"],
    userServicePath: "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service",
    userControllers: ["cpuset", "cpu", "io", "memory", "pids"],
    delegated: true,
    selfCgroup: "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope",
    v2Mount: "/sys/fs/cgroup",
  };
  return f;
}

/** Deep-merge helper for one-off variations: facts({network: {...}}) keeps the rest. */
export function withFacts(f: Facts, change: (f: Facts) => void): Facts {
  const copy = structuredClone(f);
  change(copy);
  return copy;
}

/** A rootless dockerd 24.0.7 that answers on the user's socket (cgroup v1, driver cgroupfs), with `over` changed. */
export function rootlessDocker(over: Partial<DockerFacts> = {}): DockerFacts {
  return {
    version: "24.0.7",
    raw: "",
    path: "/usr/bin/docker",
    clientVersion: "24.0.7",
    serverVersion: "24.0.7",
    serverReachable: true,
    rootless: true,
    cgroupDriver: "cgroupfs",
    cgroupVersion: "1",
    socket: "unix:///run/user/1000/docker.sock",
    ...over,
  };
}

/** `base` joined as a worker to a control plane at 192.0.2.2 with the default pod and service ranges, no DNS. */
export function joinedWorker(base: Plan, nodeIP?: string): Plan {
  return workerPlan(base, {
    server: "https://192.0.2.2:6443",
    caPem: "-",
    caHash: `sha256:${"d".repeat(64)}`,
    cluster: {
      pods: "10.244.0.0/16",
      services: "10.96.0.0/16",
      firstServiceIP: "10.96.0.1",
      dns: null,
      kubernetes: base.versions.components.kubernetes as string,
    },
    ...(nodeIP ? { nodeIP } : {}),
  });
}
