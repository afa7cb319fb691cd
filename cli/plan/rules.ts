// The version floors the plan enforces, each with where it comes from.
import { FLOORS } from "../doctor/checks/runtimes";
import { atLeast, versionTuple } from "../host/parse/versions";
import type { Mode, NetworkDriver, RuntimeName } from "./plan";

export { atLeast };

export interface Floor {
  version: string;
  why: string;
}

/**
 * Minimum runtime versions per mode. `none`: running without any cgroup permission
 * (kubernetes/enhancements#1084: Docker 19.03 moby#38050, containerd 1.3 containerd/cri#970,
 * CRI-O 1.12 cri-o#1729). `delegated`: cgroup v2 limits (kubelet-in-userns docs: containerd 1.4,
 * CRI-O 1.22). Docker in both: 23.0, the least cri-dockerd talks to (rootless Docker itself needs
 * 19.03, and 20.10 for cgroup v2 limits).
 * The versions are the doctor's (cli/doctor/checks/runtimes.ts), so doctor and plan never disagree.
 */
/** Why Docker's floor is the same in both modes: what cri-dockerd talks to. */
const CRI_DOCKERD_NEEDS = "cri-dockerd needs Docker API 1.42, which Docker serves from 23.0 (Mirantis/cri-dockerd#346)";

export const RUNTIME_FLOORS: Record<RuntimeName, Record<Mode, Floor>> = {
  containerd: {
    none: { version: FLOORS.containerd.none, why: "rootless containerd without cgroups needs 1.3 (containerd/cri#970)" },
    delegated: { version: FLOORS.containerd.delegated, why: "rootless cgroup v2 support arrived in containerd 1.4" },
  },
  crio: {
    none: { version: FLOORS.crio.none, why: "CRI-O ignores cgroups when rootless from 1.12 (cri-o/cri-o#1729)" },
    delegated: { version: FLOORS.crio.delegated, why: "CRI-O enforces limits rootless from 1.22 (cri-o/cri-o#4528)" },
  },
  docker: {
    none: { version: FLOORS.docker.none, why: CRI_DOCKERD_NEEDS },
    delegated: { version: FLOORS.docker.delegated, why: CRI_DOCKERD_NEEDS },
  },
};

/**
 * The kubelet since 1.26 speaks only CRI v1 (runtime.v1), which containerd serves from 1.6 on
 * (Kubernetes 1.26 release notes: "containerd 1.6.0 or later is required").
 */
export const CONTAINERD_CRI_V1: Floor = {
  version: "1.6.0",
  why: "the kubelet (>= 1.26) speaks only CRI v1, which containerd serves from 1.6",
};

/**
 * SIG Node made Kubernetes 1.35 the last release that supports containerd 1.x (KEP-4033; the
 * kubelet learns its cgroup driver from the runtime's RuntimeConfig, which containerd serves from
 * 2.0, and the fallback to its own setting is on its way out: kubernetes#136846). containerd's
 * RELEASES.md lists only 2.x for Kubernetes 1.36. See docs/upstream-notes.md.
 */
export const CONTAINERD_2_FOR_KUBERNETES = {
  since: "1.36.0",
  version: "2.0.0",
  why: "Kubernetes 1.35 was the last release to support containerd 1.x (SIG Node, KEP-4033)",
} as const;

/** RootlessKit versions that have each network driver. */
export const ROOTLESSKIT_NETWORK_FLOORS: Record<NetworkDriver, Floor> = {
  slirp4netns: { version: "0.1.0", why: "slirp4netns is RootlessKit's original driver" },
  pasta: { version: "2.0.0", why: "RootlessKit's pasta driver arrived in 2.0" },
  builtin: { version: "3.0.0", why: "RootlessKit 3 has gvisor-tap-vsock built in" },
};

/**
 * Since 1.34 (KubeletCgroupDriverFromCRI GA, KEP-4033) the kubelet asks the runtime for its cgroup
 * driver (RuntimeConfig) and overwrites its own setting with the answer, which is only ever
 * "systemd" or "cgroupfs"; any other answer, or an error, stops the kubelet
 * (cmd/kubelet/app/server.go getCgroupDriverFromCRI). See docs/upstream-notes.md.
 */
export const KUBELET_CGROUP_DRIVER_FROM_CRI = "1.34.0";

/**
 * Since 1.36 (ExtendWebSocketsToKubelet, beta and on, a feature the node declares) the API server
 * hands kubectl's WebSocket exec and attach to the kubelet, whose translator dials the runtime's
 * streaming URL. cri-dockerd's URL has no scheme ("//[::]:PORT/cri/exec/TOKEN", a relative BaseURL
 * from dockershim's days) and is dialled as https: "server gave HTTP response to HTTPS client"
 * (Mirantis/cri-dockerd#560, #569; seen on the e2e's VM). With the gate off in the kubelet the node
 * does not declare it, and the API server translates, as before 1.36.
 */
export const KUBELET_WEBSOCKETS_SINCE = "1.36.0";

/**
 * The API server takes anonymous.conditions in --authentication-config (AnonymousAuthConfigurableEndpoints,
 * GA and locked on in 1.34; apiserver.config.k8s.io/v1 AuthenticationConfiguration, GA in 1.34).
 */
export const ANONYMOUS_CONDITIONS_SINCE = "1.34.0";

/** Kubelet >= 1.35 refuses cgroup v1 unless failCgroupV1 is false (kubernetes/kubernetes#134298). */
export const FAIL_CGROUP_V1_SINCE = "1.35.0";

export function majorOf(version: string): number {
  return versionTuple(version)?.[0] ?? 0;
}

/**
 * How a user turns on dockerd's containerd image store, which keeps the registry digest of what
 * `docker load` reads (an OCI archive's manifest digest); the classic store keeps none. Measured
 * with rootless Docker 26.1.5 (Debian 13) on Debian 12's containerd 1.6.20, 2026-12-08: a loaded
 * image answered `docker image inspect NAME@DIGEST` only with this feature on. Docker 29 turns it on
 * for new installs.
 */
export const DOCKER_CONTAINERD_STORE_FIX =
  'turn on dockerd\'s containerd image store: "features": {"containerd-snapshotter": true} in ~/.config/docker/daemon.json, then systemctl --user restart docker (images kept in the classic store stay there, unseen until you switch back)';
