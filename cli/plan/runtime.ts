// The container runtime: containerd (default; ours, or the user's with --runtime-bin), CRI-O
// (the static bundle), or the user's running rootless Docker through cri-dockerd.
import * as path from "node:path";
import { ExitCode, UserError } from "../errors";
import { DOCKERD_LIMITS_WORDS } from "../doctor/verdict";
import type { Facts } from "../host/facts";
import { dockerPidFile, dockerSocketPath } from "../host/parse/docker";
import type { Mode, Paths, PlanOptions, RuntimePlan, VersionSet } from "./plan";
import { DOCKER_CONTAINERD_STORE_FIX, KUBELET_CGROUP_DRIVER_FROM_CRI, RUNTIME_FLOORS, atLeast, majorOf } from "./rules";
import { requireVersion } from "./versions";

/**
 * Session keyrings (issue 45). runc and crun give every container a new session keyring, and the
 * kernel charges each to the user's uid: kernel.keys.maxkeys is 200 for a user who is not root, so
 * a node stops at about 97 pods ("create keyring: Disk quota exceeded"). The node's containers run
 * as the user anyway, so a keyring per container isolates nothing from the user that the user
 * namespace does not; what matters is that they never share the user's login keyring, which the
 * namespace owner's unit replaces with a private one (KeyringMode=private).
 */
const KEYRING_SHARED =
  "containers keep the node's own session keyring (NoNewKeyring), private to the node (KeyringMode=private): a keyring per container would count against the user's kernel.keys.maxkeys (200 on a stock kernel: about 97 pods)";
const KEYRING_PER_CONTAINER = (rt: string) =>
  `${rt} gives every container a session keyring of its own, each counted against the user's kernel.keys.maxkeys (200 on a stock kernel: about 97 pods)`;

export function decideRuntime(facts: Facts, options: PlanOptions, versions: VersionSet, mode: Mode, paths: Paths): RuntimePlan {
  const name = options.runtime ?? "containerd";
  if (options.runtimeBin && name !== "containerd") {
    throw new UserError(`--runtime-bin works with --runtime containerd only (got --runtime ${name})`, {
      exitCode: ExitCode.Refused,
      fix: "drop --runtime-bin, or use --runtime containerd",
    });
  }
  switch (name) {
    case "containerd":
      return containerd(facts, options, versions, mode, paths);
    case "crio":
      return crio(facts, versions, mode, paths);
    case "docker":
      return docker(facts, versions, mode, paths);
  }
}

function containerd(facts: Facts, options: PlanOptions, versions: VersionSet, mode: Mode, paths: Paths): RuntimePlan {
  const reasons: string[] = [];
  let version: string;
  let binary: string;
  let source: RuntimePlan["source"];
  if (options.runtimeBin) {
    binary = path.resolve(options.runtimeBin);
    const probed = options.runtimeBinVersion ?? (facts.runtimes.containerd?.path === binary ? facts.runtimes.containerd.version : null);
    if (!probed) {
      throw new UserError(`could not read the version of ${binary}`, {
        exitCode: ExitCode.Refused,
        fix: `check that \`${binary} --version\` prints a containerd version`,
      });
    }
    version = probed;
    source = "host";
    reasons.push(`--runtime-bin: the user's containerd ${version} at ${binary}`);
  } else {
    version = requireVersion(versions, "containerd");
    binary = path.join(paths.binDir, "containerd");
    source = "bundled";
    reasons.push(`containerd ${version} from version set ${versions.id}, inside our RootlessKit`);
  }
  const configVersion = majorOf(version) >= 2 ? 3 : 2;
  reasons.push(`config version ${configVersion} (containerd ${configVersion === 3 ? "2.x" : "1.x"})`);
  // containerd 2.0 removed the CRI option disable_cgroup (containerd/containerd#10594): every
  // container gets a cgroup path, and rootless runc fails on a path it may not create. crun's
  // --cgroup-manager=disabled ignores cgroup paths and limits, as Podman's --cgroups=disabled does.
  const crunNoCgroups = mode === "none" && configVersion === 3;
  if (crunNoCgroups) {
    const crun = requireVersion(versions, "crun");
    reasons.push(
      `OCI runtime crun ${crun} with --cgroup-manager=disabled: containerd 2 has no disable_cgroup (removed in 2.0), and runc cannot run a container whose cgroup it may not create`,
    );
  } else if (mode === "none") {
    reasons.push("disable_cgroup: containerd 1.x creates no cgroups");
  }
  reasons.push(KEYRING_SHARED);
  return {
    name: "containerd",
    version,
    source,
    binary,
    criSocket: path.join(paths.runtimeDir, "containerd", "containerd.sock"),
    containerdConfigVersion: configVersion,
    ociRuntime: crunNoCgroups
      ? { name: "crun", path: path.join(paths.binDir, "crun"), cgroupManager: "disabled" }
      : { name: "runc", path: path.join(paths.binDir, "runc") },
    disableCgroup: mode === "none",
    keyringPerContainer: false,
    docker: null,
    snapshotter: chooseSnapshotter(facts, "containerd"),
    reasons,
  };
}

function crio(facts: Facts, versions: VersionSet, mode: Mode, paths: Paths): RuntimePlan {
  const version = requireVersion(versions, "cri-o");
  return {
    name: "crio",
    version,
    source: "bundled",
    binary: path.join(paths.binDir, "crio"),
    criSocket: path.join(paths.runtimeDir, "crio", "crio.sock"),
    containerdConfigVersion: null,
    ociRuntime: { name: "crun", path: path.join(paths.binDir, "crun") },
    disableCgroup: mode === "none",
    keyringPerContainer: true,
    docker: null,
    snapshotter: chooseSnapshotter(facts, "crio"),
    reasons: [
      `CRI-O ${version} from the static bundle of version set ${versions.id}, with cgroup_manager "cgroupfs" and conmon_cgroup "pod"`,
      ...(mode === "none"
        ? [
            "drop_infra_ctr = false: every pod keeps its infra container, so CRI-O never creates a pod cgroup itself, which it may not in mode none",
          ]
        : []),
      KEYRING_PER_CONTAINER("CRI-O"),
    ],
  };
}

function docker(facts: Facts, versions: VersionSet, mode: Mode, paths: Paths): RuntimePlan {
  const d = facts.runtimes.docker;
  const refuse = (what: string, fix: string): never => {
    throw new UserError(`--runtime docker: ${what}`, { exitCode: ExitCode.Refused, fix });
  };
  if (!d || (!d.serverVersion && !d.version)) {
    return refuse(
      "Docker is not installed",
      "install rootless Docker (dockerd-rootless-setuptool.sh install), or use --runtime containerd",
    );
  }
  // The node enters dockerd's namespaces through docker.pid beside its socket, and runs every pod in
  // that daemon: it must be the user's own, on a unix socket.
  const own =
    "unset DOCKER_HOST, or point it at your own rootless dockerd (unix://$XDG_RUNTIME_DIR/docker.sock), or use --runtime containerd";
  if (d.socket && !d.socket.startsWith("unix://") && d.socket.includes("://")) {
    return refuse(`DOCKER_HOST is ${d.socket}, not a unix socket: the node must reach dockerd's own namespaces beside its socket`, own);
  }
  if (d.socketOwner != null && d.socketOwner !== facts.user.uid) {
    return refuse(
      `${d.socket ?? "the Docker socket"} belongs to uid ${d.socketOwner}, not to you (uid ${facts.user.uid}): the node would run in another user's dockerd`,
      own,
    );
  }
  if (!d.serverReachable) {
    return refuse("the Docker daemon does not answer", "start it with `systemctl --user start docker`, or use --runtime containerd");
  }
  if (d.rootless !== true) {
    return refuse(
      d.rootless === false ? "the Docker daemon is not rootless" : "could not tell whether the Docker daemon is rootless",
      "point DOCKER_HOST at your rootless dockerd (unix://$XDG_RUNTIME_DIR/docker.sock), or use --runtime containerd",
    );
  }
  // Before anything else about this daemon: cri-dockerd will not talk to it at all (it exits).
  const floor = RUNTIME_FLOORS.docker[mode];
  const have = d.serverVersion ?? d.version;
  if (have && !atLeast(have, floor.version)) {
    return refuse(
      `Docker ${have} is older than ${floor.version}: ${floor.why}; cri-dockerd would exit at its start ("docker API version is older than 1.42.0")`,
      `upgrade rootless Docker to ${floor.version} or later (Docker's own packages), or use --runtime containerd`,
    );
  }
  // Since 1.34 the kubelet takes its cgroup driver from the runtime; cri-dockerd passes on dockerd's,
  // and answers an error for anything but cgroupfs and systemd (docs/upstream-notes.md, item 3).
  const k8s = versions.components.kubernetes ?? "0";
  const driverFromCri = atLeast(k8s, KUBELET_CGROUP_DRIVER_FROM_CRI);
  if (mode === "delegated" && d.cgroupDriver === "systemd") {
    return refuse(
      "dockerd uses the systemd cgroup driver, which the kubelet cannot share from inside dockerd's namespace",
      driverFromCri
        ? `use --mode none, in which ${DOCKERD_LIMITS_WORDS}, or --runtime containerd (rootless dockerd's only other driver is reported as "none", which kubelet ${k8s} cannot use)`
        : `use --mode none, in which ${DOCKERD_LIMITS_WORDS}; or add "exec-opts": ["native.cgroupdriver=cgroupfs"] to ~/.config/docker/daemon.json and restart docker, or use --runtime containerd`,
    );
  }
  if (d.cgroupDriver === "none" && driverFromCri) {
    return refuse(
      `dockerd reports cgroup driver "none" (rootless dockerd does on cgroup v1 and hybrid, and whenever it does not use systemd); cri-dockerd answers kubelet ${k8s}'s RuntimeConfig request with an error for it, and a kubelet >= 1.34 then stops`,
      "use --runtime containerd (the bundled containerd runs without cgroups in mode none)",
    );
  }
  const runtimeBase = path.dirname(paths.runtimeDir);
  const socket = d.socket ? dockerSocketPath(d.socket) : path.join(runtimeBase, "docker.sock");
  const version = d.serverVersion ?? d.version ?? "0";
  return {
    name: "docker",
    version,
    source: "host",
    binary: path.join(paths.binDir, "cri-dockerd"),
    criSocket: path.join(paths.runtimeDir, "cri-dockerd.sock"),
    containerdConfigVersion: null,
    ociRuntime: null,
    disableCgroup: mode === "none",
    keyringPerContainer: true,
    docker: {
      socket,
      pidFile: dockerPidFile(socket),
      unit: "docker.service",
      cgroupDriver: d.cgroupDriver ?? null,
      imageStore: d.imageStore ?? null,
    },
    snapshotter: null,
    reasons: [
      `the user's rootless Docker ${version} (cgroup driver ${d.cgroupDriver ?? "unknown"}) through cri-dockerd`,
      "kubelet and cri-dockerd enter dockerd's RootlessKit namespaces; no anchor covers this path (experimental)",
      ...dockerImageStoreReasons(d.imageStore ?? null),
    ],
  };
}

/** overlayfs when rootless overlay works, else fuse-overlayfs where the runtime can use it, else native. */
export function chooseSnapshotter(facts: Facts, runtime: "containerd" | "crio"): NonNullable<RuntimePlan["snapshotter"]> {
  const overlay = facts.features.overlayRootless;
  if (overlay.ok === true) {
    const basis =
      overlay.basis === "mount-test" ? "a real overlay mount in a user namespace worked" : `kernel ${facts.kernel.release} (>= 5.11)`;
    return { name: "overlayfs", reasons: [`rootless overlayfs works: ${basis}`], fuseOverlayfs: null };
  }
  const why = overlay.ok === false ? "rootless overlayfs does not work on this kernel" : "rootless overlayfs could not be confirmed";
  const fuse = facts.runtimes.fuseOverlayfs?.path ?? null;
  if (fuse && facts.features.devFuse) {
    if (runtime === "crio") {
      return { name: "fuse-overlayfs", reasons: [why, `fuse-overlayfs at ${fuse} with /dev/fuse`], fuseOverlayfs: fuse };
    }
    return {
      name: "native",
      reasons: [
        why,
        "containerd needs the separate fuse-overlayfs snapshotter plugin for fuse-overlayfs, which is not part of the version set",
      ],
      fuseOverlayfs: null,
    };
  }
  return { name: "native", reasons: [why, fuse ? "/dev/fuse is missing" : "fuse-overlayfs is not installed"], fuseOverlayfs: null };
}

/**
 * What dockerd's image store means for the add-ons' images, which the version set pins by digest:
 * the containerd store resolves a loaded image by its digest, the classic store only by pulling it.
 */
export function dockerImageStoreReasons(store: "containerd" | "classic" | null): string[] {
  if (store === "containerd")
    return [
      "dockerd's containerd image store keeps the digest of what `image load` gives it: add-on images pinned by digest can come from archives",
    ];
  if (store === "classic")
    return [
      "dockerd's classic image store keeps no registry digest for a loaded image: the add-ons' images, pinned by digest, are pulled from their registry, so offline their pods cannot start",
      `offline: ${DOCKER_CONTAINERD_STORE_FIX}`,
    ];
  return [];
}

/** dockerd on its systemd cgroup driver puts each container in its own docker-<id>.scope with its limits. */
export function dockerdLimitsContainers(rt: Pick<RuntimePlan, "docker">): boolean {
  return rt.docker?.cgroupDriver === "systemd";
}
