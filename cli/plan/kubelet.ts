// Kubelet settings per mode (docs/design.md, "Mode none"). `none` is built from stock kubelet settings because
// upstream never merged a "none" cgroup driver; a patched kubelet that accepts
// `--cgroup-driver=none` is used as such, but only when probed, never assumed, and only before
// 1.34: from then on the kubelet takes its cgroup driver from the runtime.
import type { Facts } from "../host/facts";
import { fsStats } from "../host/fs-stats";
import { KUBELET_MAX_PODS, podBoundOfLimits } from "../doctor/checks/limits";
import { evictionDecision } from "./eviction";
import type { KubeletPlan, Mode, PlanOptions, VersionSet } from "./plan";
import { FAIL_CGROUP_V1_SINCE, KUBELET_CGROUP_DRIVER_FROM_CRI, KUBELET_WEBSOCKETS_SINCE, atLeast } from "./rules";

/** maxPods, when the user's limits allow fewer than the kubelet's 110 pods for this runtime; with its reason. */
function maxPodsDecision(facts: Facts, runtime: string): { maxPods?: number; reasons: string[] } {
  const bound = podBoundOfLimits(facts.limits, runtime);
  if (!bound) return { reasons: [] };
  return {
    maxPods: bound.pods,
    reasons: [
      `maxPods: ${bound.pods}, not the kubelet's ${KUBELET_MAX_PODS}: ${bound.words}; past it a pod's containers would fail to start, so it waits as "Too many pods" instead (doctor's pod-limits check gives the fix)`,
    ],
  };
}

export function decideKubelet(facts: Facts, mode: Mode, options: PlanOptions, versions: VersionSet, runtime: string): KubeletPlan {
  const featureGates: Record<string, boolean> = { KubeletInUserNamespace: true };
  const reasons = ["KubeletInUserNamespace: the kubelet runs in a user namespace (KEP-2033)"];
  const probe: KubeletPlan["probe"] = options.kubelet ? "probed" : "not-installed";
  const onV1 = facts.cgroup.mode !== "v2";
  const k8s = versions.components.kubernetes ?? "0";
  const failCgroupV1 = onV1 ? false : null;
  const stats = fsStats(facts.disk);
  const { eviction, reasons: evictionReasons } = evictionDecision(options);
  reasons.push(...evictionReasons);
  const { maxPods, reasons: maxPodsReasons } = maxPodsDecision(facts, runtime);
  reasons.push(...maxPodsReasons);
  const pods = maxPods === undefined ? {} : { maxPods };
  if (runtime === "docker" && atLeast(options.kubelet?.version ?? k8s, KUBELET_WEBSOCKETS_SINCE)) {
    featureGates.ExtendWebSocketsToKubelet = false;
    reasons.push(
      "ExtendWebSocketsToKubelet: false: the kubelet would dial cri-dockerd's streaming URL, which has no scheme, as https and kubectl exec and attach would fail (Mirantis/cri-dockerd#560); the API server translates them instead",
    );
  }
  const localStorageCapacityIsolation = stats.readable;
  reasons.push(
    stats.readable
      ? `localStorageCapacityIsolation: true: ${stats.reason}, so the eviction manager observes memory, disk and PIDs, and ephemeral-storage limits hold`
      : `localStorageCapacityIsolation: false: ${stats.reason} (on a file system without a block device the kubelet does not start with it on); so the eviction manager never runs: no eviction on memory, disk or PID pressure, and ephemeral-storage limits are not enforced`,
  );
  if (onV1) {
    reasons.push(
      atLeast(k8s, FAIL_CGROUP_V1_SINCE)
        ? `failCgroupV1: false, because kubelet ${k8s} refuses cgroup v1 otherwise (kubernetes#134298)`
        : "failCgroupV1: false, so a later kubelet (>= 1.35) keeps running on cgroup v1",
    );
  }
  if (mode === "delegated") {
    reasons.push(
      "cgroupfs driver on the delegated subtree, inside RootlessKit's cgroup namespace",
      "cgroupsPerQOS: true: pods get QoS and per-pod cgroups",
    );
    return {
      cgroupDriver: "cgroupfs",
      cgroupsPerQOS: true,
      enforceNodeAllocatable: [],
      failCgroupV1,
      featureGates,
      localStorageCapacityIsolation,
      probe,
      eviction,
      ...pods,
      reasons,
    };
  }
  const kubeletVersion = options.kubelet?.version ?? k8s;
  const driverFromCri = atLeast(kubeletVersion, KUBELET_CGROUP_DRIVER_FROM_CRI);
  const patched = options.kubelet?.cgroupDriverNone === true && !driverFromCri;
  if (options.kubelet?.cgroupDriverNone && driverFromCri) {
    reasons.push(
      `the kubelet at ${options.kubelet.path} accepts --cgroup-driver=none (a patched kubelet), but kubelet ${kubeletVersion} takes its cgroup driver from the runtime (KubeletCgroupDriverFromCRI, GA in 1.34), so "none" cannot take effect: stock settings (cgroupsPerQOS: false, enforceNodeAllocatable: [])`,
    );
  } else if (patched) {
    reasons.push(`the kubelet at ${options.kubelet?.path} accepts --cgroup-driver=none (a patched kubelet): using it`);
    if (options.kubelet?.supportNoneCgroupDriverGate) featureGates.SupportNoneCgroupDriver = true;
  } else {
    reasons.push(
      probe === "probed"
        ? `the kubelet at ${options.kubelet?.path} has no "none" cgroup driver: stock settings (cgroupsPerQOS: false, enforceNodeAllocatable: [])`
        : 'stock kubelet settings for no cgroup writes (cgroupsPerQOS: false, enforceNodeAllocatable: []); the kubelet is probed for a "none" driver once installed',
    );
  }
  reasons.push("failSwapOn: false: swap is left to the host");
  return {
    cgroupDriver: patched ? "none" : "cgroupfs",
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    failCgroupV1,
    featureGates,
    localStorageCapacityIsolation,
    probe,
    eviction,
    ...pods,
    reasons,
  };
}
