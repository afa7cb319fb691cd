import { describe, expect, it } from "vitest";
import { ExitCode } from "../../../cli/errors";
import { buildPlan, planProblems, validatePlan } from "../../../cli/plan";
import { firstFree, nthAddress, overlapping, parseCidr } from "../../../cli/plan/cidr";
import type { PlanOptions } from "../../../cli/plan/plan";
import { userErrorFrom } from "../../helpers/errors";
import { baseFacts, delegatedFacts, rootlessDocker, upstreamVersions, withFacts } from "./facts-builder";
import type { DockerFacts, Facts } from "../../../cli/host/facts";
import { firstNodeRange } from "../../../cli/plan/network";
import { describePlan } from "../../../cli/plan/describe";
import { NONE_GIVES_UP } from "../../../cli/doctor";
import { DOCKER_CONTAINERD_STORE_FIX } from "../../../cli/plan/rules";

const versions = upstreamVersions();

describe("mode", () => {
  it("is none on cgroup v1 hybrid, with what it gives up, the honest label and failCgroupV1: false", () => {
    const plan = buildPlan(baseFacts(), {}, versions);
    expect(plan.mode.name).toBe("none");
    expect(plan.mode.reasons[0]).toMatch(/hybrid/);
    expect(plan.mode.givesUp.length).toBeGreaterThanOrEqual(5);
    expect(plan.node.labels["rootless-k8s.io/resource-isolation"]).toBe("none");
    expect(plan.node.taints).toEqual([]);
    expect(plan.kubelet).toMatchObject({ cgroupsPerQOS: false, enforceNodeAllocatable: [], failCgroupV1: false, cgroupDriver: "cgroupfs" });
    expect(plan.kubelet.featureGates).toEqual({ KubeletInUserNamespace: true });
    expect(plan.runtime.disableCgroup).toBe(true);
    expect(plan.rootlesskit.evacuateCgroup2).toBeNull();
  });

  it("is delegated on cgroup v2 with cpu, memory and pids delegated", () => {
    const plan = buildPlan(delegatedFacts(), {}, versions);
    expect(plan.mode.name).toBe("delegated");
    expect(plan.mode.givesUp).toEqual([]);
    expect(plan.kubelet).toMatchObject({ cgroupsPerQOS: true, failCgroupV1: null, cgroupDriver: "cgroupfs" });
    expect(plan.runtime.disableCgroup).toBe(false);
    expect(plan.rootlesskit.evacuateCgroup2).toBe("rootlesskit_evacuation");
    expect(plan.node.labels["rootless-k8s.io/resource-isolation"]).toBeUndefined();
  });

  it("is none on cgroup v2 when a required controller is not delegated, naming it", () => {
    const f = withFacts(delegatedFacts(), (x) => {
      x.cgroup.userControllers = ["cpu", "pids"];
      x.cgroup.delegated = false;
    });
    const plan = buildPlan(f, {}, versions);
    expect(plan.mode.name).toBe("none");
    expect(plan.mode.reasons[0]).toBe(
      "cgroup v2, but user@1000.service has cpu pids: memory not delegated (cpu, memory and pids must all be)",
    );
    expect(plan.kubelet.failCgroupV1).toBeNull();
  });

  it("localStorageCapacityIsolation only where the kubelet can read the data folder's file system (a block device)", () => {
    const on = (devMajor: number | null) =>
      buildPlan(
        withFacts(baseFacts(), (f) => (f.disk = { ...f.disk, fsType: devMajor === 0 ? "zfs" : "ext4", devMajor })),
        {},
        versions,
      ).kubelet;
    expect(on(254).localStorageCapacityIsolation).toBe(true);
    expect(on(254).reasons.join("\n")).toMatch(
      /localStorageCapacityIsolation: true: .* so the eviction manager observes memory, disk and PIDs/,
    );
    expect(on(0).localStorageCapacityIsolation).toBe(false);
    expect(on(0).reasons.join("\n")).toMatch(/localStorageCapacityIsolation: false: .*device major 0.* the eviction manager never runs/);
    expect(on(null).localStorageCapacityIsolation).toBe(false);
    expect(buildPlan(delegatedFacts(), {}, versions).kubelet.localStorageCapacityIsolation).toBe(true);
  });

  it("--mode overrides only delegated → none", () => {
    expect(buildPlan(delegatedFacts(), { mode: "none" }, versions).mode.name).toBe("none");
    const e = userErrorFrom(() => buildPlan(baseFacts(), { mode: "delegated" }, versions));
    expect(e.exitCode).toBe(ExitCode.Refused);
    expect(e.message).toMatch(/--mode delegated is not possible here/);
    expect(e.fix).toMatch(/doctor/);
  });

  it("--taint-none taints a none node and is refused on a delegated one", () => {
    const plan = buildPlan(baseFacts(), { taintNone: true }, versions);
    expect(plan.node.taints).toEqual([{ key: "rootless-k8s.io/resource-isolation", value: "none", effect: "NoSchedule" }]);
    expect(userErrorFrom(() => buildPlan(delegatedFacts(), { taintNone: true }, versions)).fix).toMatch(/--mode none/);
  });

  it("uses --cgroup-driver=none only when the probed kubelet accepts it", () => {
    const probed = { path: "/k/kubelet", version: "1.20.0", cgroupDriverNone: true, supportNoneCgroupDriverGate: true };
    const plan = buildPlan(baseFacts(), { kubelet: probed }, versions);
    expect(plan.kubelet.cgroupDriver).toBe("none");
    expect(plan.kubelet.featureGates.SupportNoneCgroupDriver).toBe(true);
    expect(plan.kubelet.probe).toBe("probed");
    const stock = buildPlan(baseFacts(), { kubelet: { ...probed, cgroupDriverNone: false, supportNoneCgroupDriverGate: false } }, versions);
    expect(stock.kubelet.cgroupDriver).toBe("cgroupfs");
    expect(buildPlan(baseFacts(), {}, versions).kubelet.probe).toBe("not-installed");
  });

  it("never uses --cgroup-driver=none on a kubelet >= 1.34: it takes its cgroup driver from the runtime (KubeletCgroupDriverFromCRI)", () => {
    const patched134 = { path: "/k/kubelet", version: "1.34.2", cgroupDriverNone: true, supportNoneCgroupDriverGate: true };
    const plan = buildPlan(baseFacts(), { kubelet: patched134 }, versions);
    expect(plan.kubelet).toMatchObject({ cgroupDriver: "cgroupfs", cgroupsPerQOS: false, enforceNodeAllocatable: [] });
    expect(plan.kubelet.featureGates).toEqual({ KubeletInUserNamespace: true });
    expect(plan.kubelet.reasons.join("\n")).toMatch(/kubelet 1\.34\.2 takes its cgroup driver from the runtime .*cannot take effect/);
    // The probe's version decides; without one, the version set's.
    const unknown = buildPlan(baseFacts(), { kubelet: { ...patched134, version: null } }, versions);
    expect(unknown.kubelet.cgroupDriver).toBe("cgroupfs");
  });
});

describe("runtime", () => {
  it("defaults to the bundled containerd 2.x with config version 3", () => {
    const plan = buildPlan(baseFacts(), {}, versions);
    expect(plan.runtime).toMatchObject({
      name: "containerd",
      source: "bundled",
      version: versions.components.containerd,
      containerdConfigVersion: 3,
    });
    expect(plan.runtime.binary).toBe(`/home/alice/.local/share/rootless-k8s/versions/current/bin/containerd`);
    expect(plan.runtime.criSocket).toBe("/run/user/1000/rootless-k8s/containerd/containerd.sock");
  });

  it("uses config version 2 for a containerd 1.x given with --runtime-bin", () => {
    const plan = buildPlan(baseFacts(), { runtimeBin: "/usr/bin/containerd", runtimeBinVersion: "1.6.20~ds1" }, versions);
    expect(plan.runtime).toMatchObject({ source: "host", binary: "/usr/bin/containerd", containerdConfigVersion: 2 });
  });

  it("refuses --runtime-bin whose version is unknown, and with another runtime", () => {
    expect(userErrorFrom(() => buildPlan(baseFacts(), { runtimeBin: "/opt/x/containerd" }, versions)).message).toMatch(
      /could not read the version/,
    );
    expect(userErrorFrom(() => buildPlan(baseFacts(), { runtime: "crio", runtimeBin: "/x" }, versions)).message).toMatch(
      /--runtime containerd only/,
    );
  });

  it("takes the version of --runtime-bin from the facts when it is the detected containerd", () => {
    const f = withFacts(
      baseFacts(),
      (x) => (x.runtimes.containerd = { version: "1.7.24", raw: "containerd 1.7.24", path: "/usr/bin/containerd" }),
    );
    expect(buildPlan(f, { runtimeBin: "/usr/bin/containerd" }, versions).runtime.version).toBe("1.7.24");
  });

  it("refuses docker unless a rootless daemon answers", () => {
    expect(userErrorFrom(() => buildPlan(baseFacts(), { runtime: "docker" }, versions)).message).toMatch(/not installed/);
    const docker = rootlessDocker({ rootless: false, socket: "/var/run/docker.sock" });
    const rootful = withFacts(baseFacts(), (x) => (x.runtimes.docker = docker));
    expect(userErrorFrom(() => buildPlan(rootful, { runtime: "docker" }, versions)).message).toMatch(/not rootless/);
    const rootless = withFacts(baseFacts(), (x) => {
      x.cgroup.mode = "v2";
      x.runtimes.docker = {
        ...docker,
        rootless: true,
        cgroupDriver: "systemd",
        cgroupVersion: "2",
        socket: "unix:///run/user/1000/docker.sock",
      };
    });
    const plan = buildPlan(rootless, { runtime: "docker" }, versions);
    expect(plan.runtime.docker).toEqual({
      socket: "/run/user/1000/docker.sock",
      pidFile: "/run/user/1000/docker.pid",
      unit: "docker.service",
      cgroupDriver: "systemd",
      imageStore: null,
    });
    expect(plan.network).toMatchObject({ driver: "docker", namespaceIP: "10.0.2.100" });
    expect(userErrorFrom(() => buildPlan(rootless, { runtime: "docker", network: "pasta" }, versions)).message).toMatch(
      /does not apply to --runtime docker/,
    );
    expect(plan.units.owner).toBe("docker.service");
    expect(plan.units.criDockerd).toBe("rootless-k8s-cri-dockerd.service");
  });

  it("says what dockerd's image store means for the add-ons' pinned images: the classic one needs the registry, with the fix", () => {
    const on = (imageStore: DockerFacts["imageStore"]) =>
      buildPlan(
        withFacts(baseFacts(), (x) => {
          x.cgroup.mode = "v2";
          x.runtimes.docker = rootlessDocker({ cgroupDriver: "systemd", cgroupVersion: "2", imageStore });
        }),
        { runtime: "docker", mode: "none" },
        versions,
      ).runtime;
    const classic = on("classic");
    expect(classic.docker?.imageStore).toBe("classic");
    expect(classic.reasons).toContain(
      "dockerd's classic image store keeps no registry digest for a loaded image: the add-ons' images, pinned by digest, are pulled from their registry, so offline their pods cannot start",
    );
    expect(classic.reasons).toContain(`offline: ${DOCKER_CONTAINERD_STORE_FIX}`);
    const c8d = on("containerd");
    expect(c8d.docker?.imageStore).toBe("containerd");
    expect(c8d.reasons.join("\n")).toMatch(/containerd image store keeps the digest/);
    expect(c8d.reasons.join("\n")).not.toMatch(/classic/);
    expect(on(undefined).reasons.join("\n")).not.toMatch(/image store/);
  });

  it("refuses a DOCKER_HOST that is another user's socket, or not a unix socket (exit 3, one line, before anything is written)", () => {
    const on = (over: Partial<DockerFacts>) =>
      withFacts(baseFacts(), (x) => (x.runtimes.docker = rootlessDocker({ cgroupDriver: "systemd", cgroupVersion: "2", ...over })));
    let e = userErrorFrom(() =>
      buildPlan(on({ socket: "unix:///run/user/1002/docker.sock", socketOwner: 1002 }), { runtime: "docker", mode: "none" }, versions),
    );
    expect(e.exitCode).toBe(3);
    expect(e.message).toBe(
      "--runtime docker: unix:///run/user/1002/docker.sock belongs to uid 1002, not to you (uid 1000): the node would run in another user's dockerd",
    );
    expect(e.fix).toMatch(/^unset DOCKER_HOST, or point it at your own rootless dockerd/);
    e = userErrorFrom(() =>
      buildPlan(on({ socket: "tcp://127.0.0.1:2375", socketOwner: null }), { runtime: "docker", mode: "none" }, versions),
    );
    expect(e.exitCode).toBe(3);
    expect(e.message).toMatch(/DOCKER_HOST is tcp:\/\/127.0.0.1:2375, not a unix socket/);
    // The user's own socket: planned.
    const plan = buildPlan(on({ socketOwner: 1000 }), { runtime: "docker", mode: "none" }, versions);
    expect(plan.runtime.name).toBe("docker");
  });

  it("docker with a kubelet >= 1.36: ExtendWebSocketsToKubelet off, so the API server translates exec (cri-dockerd's streaming URL has no scheme)", () => {
    const facts = withFacts(baseFacts(), (x) => (x.runtimes.docker = rootlessDocker({ cgroupDriver: "systemd", cgroupVersion: "2" })));
    const plan = buildPlan(facts, { runtime: "docker", mode: "none" }, versions);
    expect(versions.components.kubernetes).toMatch(/^1\.(3[6-9]|[4-9]\d)\./);
    expect(plan.kubelet.featureGates).toEqual({ KubeletInUserNamespace: true, ExtendWebSocketsToKubelet: false });
    expect(plan.kubelet.reasons.join("\n")).toContain("Mirantis/cri-dockerd#560");
    // Only for cri-dockerd: containerd's and CRI-O's URLs carry their scheme.
    expect(buildPlan(facts, { runtime: "containerd", mode: "none" }, versions).kubelet.featureGates).toEqual({
      KubeletInUserNamespace: true,
    });
  });

  it("docker on dockerd's systemd driver in mode none: the plan says dockerd limits each container, not that nothing is limited", () => {
    const facts = withFacts(baseFacts(), (x) => (x.runtimes.docker = rootlessDocker({ cgroupDriver: "systemd", cgroupVersion: "2" })));
    const docker = buildPlan(facts, { runtime: "docker", mode: "none" }, versions);
    expect(docker.mode.givesUp[0]).toMatch(/^per-container limits only: dockerd .* docker-<id>\.scope; no pod-level cgroup/);
    expect(docker.mode.givesUp.slice(1)).toEqual(NONE_GIVES_UP.slice(1));
    expect(describePlan(docker).join("\n")).toContain("container limits by dockerd");
    // The bundled containerd in mode none: nothing limited, as before.
    const own = buildPlan(facts, { runtime: "containerd", mode: "none" }, versions);
    expect(own.mode.givesUp).toEqual([...NONE_GIVES_UP]);
    expect(describePlan(own).join("\n")).toContain("no cgroup writes");
  });

  it("docker: the node's namespace network is dockerd's, as read inside it; a host route over it is refused with the fix that moves dockerd's", () => {
    // A VM on qemu's (or VirtualBox's) user network is 10.0.2.15/24: slirp4netns' default network too.
    const onQemu = (namespaceAddress?: string) =>
      withFacts(baseFacts(), (x) => {
        x.cgroup.mode = "v2";
        x.network.routes.push({ cidr: "10.0.2.0/24", iface: "enp0s2" });
        x.runtimes.docker = rootlessDocker({ cgroupDriver: "systemd", cgroupVersion: "2", namespaceAddress });
      });
    const unread = onQemu();
    const plan = buildPlan(unread, { runtime: "docker", mode: "none" }, versions);
    expect(plan.network).toMatchObject({ namespaceCidr: "10.0.2.0/24", namespaceIP: "10.0.2.100" });
    expect(plan.network.reasons[0]).toContain("slirp4netns' default: it could not be read");
    const [overlap] = planProblems(plan, unread).filter((p) => p.id === "cidr-overlap");
    expect(overlap?.message).toBe("the namespace network 10.0.2.0/24 overlaps the host route 10.0.2.0/24");
    expect(overlap?.fix).toContain("Environment=DOCKERD_ROOTLESS_ROOTLESSKIT_FLAGS=--cidr=10.0.3.0/24");
    expect(overlap?.fix).toContain("systemctl --user restart docker");
    // dockerd started with --cidr=10.0.3.0/24: the node takes that network, and nothing overlaps.
    const moved = onQemu("10.0.3.100/24");
    const plan2 = buildPlan(moved, { runtime: "docker", mode: "none" }, versions);
    expect(plan2.network).toMatchObject({ namespaceCidr: "10.0.3.0/24", namespaceIP: "10.0.3.100" });
    expect(plan2.network.reasons[0]).toContain("10.0.3.0/24, read inside it");
    expect(planProblems(plan2, moved).filter((p) => p.id === "cidr-overlap")).toEqual([]);
  });

  it("refuses rootless Docker reporting cgroup driver none for a kubelet >= 1.34: cri-dockerd answers its RuntimeConfig with an error", () => {
    const docker = rootlessDocker({ cgroupDriver: "none" });
    const hybrid = withFacts(baseFacts(), (x) => (x.runtimes.docker = docker));
    const e = userErrorFrom(() => buildPlan(hybrid, { runtime: "docker" }, versions));
    expect(e.exitCode).toBe(ExitCode.Refused);
    expect(e.message).toMatch(/dockerd reports cgroup driver "none" .*cri-dockerd .*kubelet 1\.3\d\.\d+'s RuntimeConfig/);
    expect(e.fix).toMatch(/--runtime containerd/);
    // Delegated: dockerd's cgroupfs exec-opt gives "none" too when rootless, so the fix no longer suggests it.
    const delegated = withFacts(delegatedFacts(), (x) => (x.runtimes.docker = { ...docker, cgroupDriver: "systemd", cgroupVersion: "2" }));
    expect(userErrorFrom(() => buildPlan(delegated, { runtime: "docker" }, versions)).fix).not.toMatch(/native\.cgroupdriver=cgroupfs/);
    // An older kubelet falls back to its own setting.
    const old = { ...versions, components: { ...versions.components, kubernetes: "1.33.5" } };
    expect(buildPlan(hybrid, { runtime: "docker" }, old).runtime.name).toBe("docker");
  });

  it("picks overlayfs, fuse-overlayfs (CRI-O) or native as the host allows", () => {
    expect(buildPlan(baseFacts(), {}, versions).runtime.snapshotter?.name).toBe("overlayfs");
    const noOverlay = withFacts(baseFacts(), (x) => {
      x.features.overlayRootless = { ok: false, basis: "kernel-version" };
      x.runtimes.fuseOverlayfs = { version: "1.10", raw: "", path: "/usr/bin/fuse-overlayfs" };
    });
    expect(buildPlan(noOverlay, { runtime: "crio" }, versions).runtime.snapshotter).toMatchObject({
      name: "fuse-overlayfs",
      fuseOverlayfs: "/usr/bin/fuse-overlayfs",
    });
    expect(buildPlan(noOverlay, {}, versions).runtime.snapshotter?.name).toBe("native");
    const noFuse = withFacts(noOverlay, (x) => (x.features.devFuse = false));
    expect(buildPlan(noFuse, { runtime: "crio" }, versions).runtime.snapshotter?.reasons.join(" ")).toMatch(/\/dev\/fuse is missing/);
  });
});

describe("network", () => {
  it("prefers the host's slirp4netns, then RootlessKit 3's built-in driver, then pasta", () => {
    expect(buildPlan(baseFacts(), {}, versions).network).toMatchObject({
      driver: "slirp4netns",
      binary: "/usr/bin/slirp4netns",
      portDriver: "builtin",
      mtu: 65520,
    });
    const pasta = withFacts(baseFacts(), (x) => {
      x.runtimes.slirp4netns = null;
      x.runtimes.pasta = { version: "2024_09_06.6b38f07", raw: "pasta 2024_09_06.6b38f07", path: "/usr/bin/pasta", hostLoToNsLo: false };
    });
    // RootlessKit 3 has the built-in driver, which publishes Services' ports; pasta does not.
    expect(buildPlan(pasta, {}, versions).network).toMatchObject({ driver: "builtin", binary: null, portDriver: "builtin" });
    const rk2 = { ...versions, components: { ...versions.components, rootlesskit: "2.3.5" } };
    const onRk2 = buildPlan(pasta, {}, rk2).network;
    expect(onRk2).toMatchObject({ driver: "pasta", portDriver: "implicit", forwardsAllPorts: true });
    expect(onRk2.reasons.join("\n")).toMatch(/NodePort, LoadBalancer and hostPort ports are iptables rules, not sockets/);
  });
  it("passes over a pasta older than RootlessKit needs, and refuses --network pasta with it (Debian 12's)", () => {
    const old = withFacts(baseFacts(), (x) => {
      x.runtimes.slirp4netns = null;
      x.runtimes.pasta = { version: null, raw: "pasta unknown version", path: "/usr/bin/pasta", hostLoToNsLo: false };
    });
    const auto = buildPlan(old, {}, versions).network;
    expect(auto.driver).toBe("builtin");
    expect(auto.reasons.join("\n")).toMatch(/the host's pasta is not used: .*older than 2023_12_04/);
    const e = userErrorFrom(() => buildPlan(old, { network: "pasta" }, versions));
    expect(e.exitCode).toBe(ExitCode.Refused);
    expect(e.message).toMatch(/^--network pasta is not possible: pasta at \/usr\/bin\/pasta .* is older than 2023_12_04/);
    expect(e.fix).toMatch(/^install passt 2023_12_04 or later, or leave --network out/);
  });

  it("uses the bundled slirp4netns on request, and refuses drivers the RootlessKit lacks", () => {
    const noSlirp = withFacts(baseFacts(), (x) => (x.runtimes.slirp4netns = null));
    expect(buildPlan(noSlirp, { network: "slirp4netns" }, versions).network.binary).toBe(
      "/home/alice/.local/share/rootless-k8s/versions/current/bin/slirp4netns",
    );
    const rk11 = { ...versions, components: { ...versions.components, rootlesskit: "1.1.0" } };
    expect(userErrorFrom(() => buildPlan(baseFacts(), { network: "builtin" }, rk11)).message).toMatch(
      /RootlessKit 1\.1\.0 has no builtin driver/,
    );
    expect(userErrorFrom(() => buildPlan(noSlirp, { network: "pasta" }, versions)).message).toMatch(/pasta \(passt\) is not installed/);
  });

  it("publishes only the API port, on --api-port, on loopback for a node alone", () => {
    const plan = buildPlan(baseFacts(), { apiPort: 7443 }, versions);
    expect(plan.network.published).toEqual([{ hostIP: "127.0.0.1", hostPort: 7443, namespacePort: 7443, protocol: "tcp" }]);
    expect(plan.network.namespaceIP).toBe("10.0.2.100");
    expect(plan.network.reasons.join("\n")).toMatch(/publishes the API server on 127\.0\.0\.1:7443: this host only/);
  });

  it("publishes the API port on every address for a node that other hosts join (--node-ip)", () => {
    const plan = buildPlan(baseFacts(), { nodeIP: "192.168.1.20" }, versions);
    expect(plan.network.published).toEqual([{ hostIP: "0.0.0.0", hostPort: 6443, namespacePort: 6443, protocol: "tcp" }]);
    expect(plan.network.reasons.join("\n")).toMatch(/--node-ip 192\.168\.1\.20: the hosts that join reach it at this host's address/);
  });

  it("chooses pod, service and namespace networks that avoid every host route", () => {
    const crowded = withFacts(baseFacts(), (x) => {
      x.network.routes.push(
        { cidr: "10.0.0.0/16", iface: "tun0" },
        { cidr: "10.244.5.0/24", iface: "br0" },
        { cidr: "10.96.0.0/12", iface: "vpn0" },
      );
    });
    const plan = buildPlan(crowded, {}, versions);
    expect(plan.network.namespaceCidr).toBe("10.203.0.0/24");
    expect(plan.cidrs.pods).toBe("10.88.0.0/16");
    expect(plan.cidrs.services).toBe("10.43.0.0/16");
    expect(plan.cidrs.firstServiceIP).toBe("10.43.0.1");
    expect(planProblems(plan, crowded)).toEqual([]);
  });
});

describe("paths", () => {
  it("follows XDG, and --prefix moves everything but units and sockets", () => {
    const p = buildPlan(baseFacts(), { env: { XDG_CONFIG_HOME: "/home/alice/cfg", XDG_DATA_HOME: "relative/ignored" } }, versions).paths;
    expect(p.configDir).toBe("/home/alice/cfg/rootless-k8s");
    expect(p.shareDir).toBe("/home/alice/.local/share/rootless-k8s");
    expect(p.versionBinDir).toBe(`/home/alice/.local/share/rootless-k8s/versions/${versions.id}/bin`);
    expect(p.unitDir).toBe("/home/alice/.config/systemd/user");
    const q = buildPlan(baseFacts(), { prefix: "/srv/k8s" }, versions).paths;
    expect(q).toMatchObject({
      shareDir: "/srv/k8s",
      configDir: "/srv/k8s/config",
      dataDir: "/srv/k8s/data",
      pkiDir: "/srv/k8s/config/pki",
      binDir: "/srv/k8s/versions/current/bin",
    });
    expect(q.unitDir).toBe("/home/alice/.config/systemd/user");
    expect(q.runtimeDir).toBe("/run/user/1000/rootless-k8s");
  });

  it("refuses without XDG_RUNTIME_DIR, saying how to get one", () => {
    const f = withFacts(baseFacts(), (x) => (x.user.runtimeDir.path = null));
    const e = userErrorFrom(() => buildPlan(f, {}, versions));
    expect(e.message).toMatch(/XDG_RUNTIME_DIR/);
    expect(e.exitCode).toBe(ExitCode.Refused);
  });
});

describe("validatePlan refuses bad plans before anything is written", () => {
  const expectRefusal = (opts: PlanOptions, change: (f: ReturnType<typeof baseFacts>) => void, pattern: RegExp) => {
    const facts = withFacts(baseFacts(), change);
    const plan = buildPlan(facts, opts, versions);
    const e = userErrorFrom(() => validatePlan(plan, facts));
    expect(e.exitCode).toBe(ExitCode.Refused);
    expect(e.message).toMatch(pattern);
    expect(e.fix).toBeTruthy();
    return e;
  };

  it("a port another user holds, even one the installed node's receipt lists; our own node's socket is no obstacle", () => {
    const bob = (f: Facts) => {
      f.network.listeners.push({ port: 6443, uid: 1006, address: "127.0.0.1" });
      f.network.listenerNames[1006] = "bob";
    };
    const e = expectRefusal({}, bob, /host port 6443 is already in use \(by bob \(uid 1006\)\)/);
    expect(e.fix).toMatch(/--api-port 6444/);
    // "Ours" is decided by who holds the socket, not by the receipt.
    const taken = withFacts(baseFacts(), bob);
    const plan = buildPlan(taken, {}, versions);
    expect(() => validatePlan(plan, taken, { previous: plan })).toThrow(/6443 is already in use/);
    const mine = withFacts(baseFacts(), (f) => f.network.listeners.push({ port: 6443, uid: 1000, address: "127.0.0.1" }));
    expect(() => validatePlan(plan, mine, { previous: plan })).not.toThrow();
    // This user's own program on the port, with no node of ours there: in the way too.
    expect(() => validatePlan(plan, mine)).toThrow(/6443 is already in use \(by uid 1000\)/);
  });

  it("a privileged API port", () => {
    expectRefusal({ apiPort: 443 }, () => {}, /below net.ipv4.ip_unprivileged_port_start/);
  });

  it("a CIDR overlapping a host route (a route added after the plan was made)", () => {
    const plan = buildPlan(baseFacts(), {}, versions);
    const later = withFacts(baseFacts(), (f) => f.network.routes.push({ cidr: "10.244.0.0/16", iface: "flannel.1" }));
    const e = userErrorFrom(() => validatePlan(plan, later));
    expect(e.message).toMatch(/pod network 10\.244\.0\.0\/16 overlaps the host route 10\.244\.0\.0\/16/);
  });

  it("a runtime below its minimum version", () => {
    expectRefusal({ runtimeBin: "/usr/bin/containerd", runtimeBinVersion: "1.2.13" }, () => {}, /containerd 1\.2\.13 is below 1\.3,/);
    expectRefusal({ runtimeBin: "/usr/bin/containerd", runtimeBinVersion: "1.5.9" }, () => {}, /speaks only CRI v1/);
    const old = delegatedFacts();
    const plan = buildPlan(old, { runtimeBin: "/usr/bin/containerd", runtimeBinVersion: "1.3.4" }, versions);
    expect(planProblems(plan, old).map((p) => p.id)).toContain("runtime-too-old");
  });

  it("rootless Docker below 23.0, the least cri-dockerd talks to: refused up front in both modes (exit 3), naming cri-dockerd's own error", () => {
    const docker = (v: string, f = baseFacts()) =>
      withFacts(f, (x) => {
        x.runtimes.docker = rootlessDocker({ version: v, clientVersion: v, serverVersion: v, cgroupDriver: "systemd", cgroupVersion: "2" });
      });
    for (const [f, mode] of [
      [docker("20.10.24"), "none"],
      [docker("22.06.0", delegatedFacts()), "delegated"],
    ] as const) {
      const e = userErrorFrom(() => buildPlan(f, { runtime: "docker", mode }, versions));
      expect(e.exitCode).toBe(3);
      expect(e.message).toMatch(/^--runtime docker: Docker (20\.10\.24|22\.06\.0) is older than 23\.0: cri-dockerd needs Docker API 1\.42/);
      expect(e.message).toContain('"docker API version is older than 1.42.0"');
      expect(e.fix).toMatch(/upgrade rootless Docker to 23\.0 or later/);
    }
    const f = docker("23.0.0");
    expect(planProblems(buildPlan(f, { runtime: "docker", mode: "none" }, versions), f)).toEqual([]);
  });

  it("CRI-O in mode none on cgroup v2, v1 and hybrid alike: planned with an infra container for every pod, not refused", () => {
    const v2none = withFacts(delegatedFacts(), (x) => {
      x.cgroup.delegated = false;
      x.cgroup.userControllers = [];
    });
    const v1 = withFacts(baseFacts(), (f) => (f.cgroup.mode = "v1"));
    const hybrid = baseFacts();
    for (const f of [v2none, v1, hybrid]) {
      const plan = buildPlan(f, { runtime: "crio" }, versions);
      expect(plan.mode.name).toBe("none");
      expect(plan.runtime.disableCgroup).toBe(true);
      expect(planProblems(plan, f)).toEqual([]);
      expect(() => validatePlan(plan, f)).not.toThrow();
      expect(plan.runtime.reasons.join("\n")).toMatch(/drop_infra_ctr = false: every pod keeps its infra container/);
    }
    const delegated = delegatedFacts();
    const plan = buildPlan(delegated, { runtime: "crio" }, versions);
    expect(planProblems(plan, delegated)).toEqual([]);
    expect(plan.runtime.disableCgroup).toBe(false);
    expect(plan.runtime.reasons.join("\n")).not.toMatch(/drop_infra_ctr/);
  });

  it("containerd 1.x for Kubernetes 1.36 and later (1.35 was the last release to support it)", () => {
    expect(versions.components.kubernetes).toMatch(/^1\.3[6-9]\./);
    const e = expectRefusal(
      { runtimeBin: "/usr/bin/containerd", runtimeBinVersion: "1.7.24" },
      () => {},
      /containerd 1\.7\.24 cannot run Kubernetes 1\.3\d\.\d+: Kubernetes 1\.35 was the last/,
    );
    expect(e.fix).toMatch(/drop --runtime-bin to use the bundled containerd 2\./);
    const old = { ...versions, components: { ...versions.components, kubernetes: "1.35.2" } };
    const f = baseFacts();
    expect(planProblems(buildPlan(f, { runtimeBin: "/usr/bin/containerd", runtimeBinVersion: "1.7.24" }, old), f)).toEqual([]);
    expect(planProblems(buildPlan(f, { runtimeBin: "/usr/bin/containerd", runtimeBinVersion: "2.0.5" }, versions), f)).toEqual([]);
  });

  it("kube-proxy without iptables where its nftables mode cannot run (kernel < 5.13, no nft)", () => {
    const nft = { version: "1.0.6", raw: "nftables v1.0.6 (Lester Gooch #5)", path: "/usr/sbin/nft" };
    const e = expectRefusal(
      {},
      (f) => {
        f.runtimes.iptables = null;
        f.runtimes.nft = nft;
        f.kernel = { ...f.kernel, release: "5.10.0-28-cloud-amd64", version: [5, 10, 0] };
      },
      /kube-proxy has no backend: iptables is not installed, and kube-proxy refuses nftables mode below kernel 5\.13 \(this kernel is 5\.10\.0-28-cloud-amd64\)/,
    );
    expect(e.fix).toBe("install iptables, as root: apt-get install -y iptables");
    expectRefusal({}, (f) => (f.runtimes.iptables = null), /runs the nft command \(1\.0\.1 or later\), which is not installed/);
    const ok = withFacts(baseFacts(), (f) => {
      f.runtimes.iptables = null;
      f.runtimes.nft = nft;
    });
    const plan = buildPlan(ok, {}, versions);
    expect(plan.proxy.mode).toBe("nftables");
    expect(plan.proxy.reasons[0]).toMatch(
      /kube-proxy uses nftables \(nft 1\.0\.6, kernel 6\.1\.0-18-amd64; it needs kernel 5\.13\+ and nft 1\.0\.1\+\)/,
    );
    expect(planProblems(plan, ok)).toEqual([]);
    expect(buildPlan(baseFacts(), {}, versions).proxy.mode).toBe("iptables");
  });

  it("names how many more problems there are", () => {
    const facts = withFacts(baseFacts(), (f) => f.network.listeners.push({ port: 7443, uid: 0, address: "0.0.0.0" }));
    const plan = buildPlan(facts, { apiPort: 7443, runtimeBin: "/c", runtimeBinVersion: "1.0.0" }, versions);
    expect(userErrorFrom(() => validatePlan(plan, facts)).message).toMatch(/\(and 1 more problem\)/);
  });
});

describe("cidr", () => {
  it("parses, overlaps and picks", () => {
    expect(parseCidr("10.96.3.4/16")).toEqual({ base: (10 << 24) + (96 << 16), prefix: 16 });
    expect(parseCidr("10.0.0.256/8")).toBeNull();
    expect(nthAddress("10.96.0.0/16", 1)).toBe("10.96.0.1");
    expect(overlapping("10.0.0.0/8", ["10.1.2.0/24", "192.168.0.0/16"])).toEqual(["10.1.2.0/24"]);
    expect(firstFree(["10.0.0.0/8", "172.16.0.0/12"], ["10.5.0.0/16"])).toBe("172.16.0.0/12");
    expect(firstFree(["10.0.0.0/8"], ["0.0.0.0/1"])).toBeNull();
  });
});

describe("the first node's part of the pod network (#33)", () => {
  it("is the pod network's first /24, as the controller-manager's range allocator gives the first node; none below a /24", () => {
    expect(firstNodeRange("10.244.0.0/16")).toBe("10.244.0.0/24");
    expect(firstNodeRange("10.42.0.0/24")).toBe("10.42.0.0/24");
    expect(firstNodeRange("172.31.128.0/17")).toBe("172.31.128.0/24");
    expect(firstNodeRange("10.244.0.0/25")).toBeNull();
    expect(firstNodeRange("not a network")).toBeNull();
  });
});
