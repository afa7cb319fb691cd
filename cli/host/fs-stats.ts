// Whether the kubelet's cAdvisor can read the usage of the file system the node's data lives on:
// the one rule the plan (the kubelet's localStorageCapacityIsolation) and doctor share.
//
// cAdvisor finds a file system by the device number of the folder it is asked about (st_dev) among
// the mounts that have a device. One without a block device (device major 0: tmpfs, NFS, fuse,
// ZFS, btrfs subvolumes) is not found; with localStorageCapacityIsolation on, the kubelet then does
// not start ("failed to get rootfs info", usernetes PR #157). With it off, cAdvisor collects no disk
// usage at all (DiskUsageMetrics, pkg/kubelet/cadvisor), every stat of the node's file systems
// fails ("cannot find filesystem info for device"), and the eviction manager stops before it
// observes anything (kubernetes/kubernetes#141119): no eviction on memory, disk or PID pressure.
import type { DiskFacts } from "./facts";

export interface FsStats {
  readable: boolean;
  reason: string;
}

export function fsStats(disk: Pick<DiskFacts, "dataDir" | "fsType" | "devMajor">): FsStats {
  const fs = disk.fsType ? `${disk.fsType}, ` : "";
  if (disk.devMajor === null)
    return { readable: false, reason: `the device of ${disk.dataDir} is unknown, so the kubelet may not find its file system` };
  if (disk.devMajor === 0)
    return {
      readable: false,
      reason: `${disk.dataDir} is on a file system without a block device (${fs}device major 0), which the kubelet's cAdvisor does not find`,
    };
  return {
    readable: true,
    reason: `${disk.dataDir} is on a block device (${fs}device major ${disk.devMajor}), whose usage the kubelet's cAdvisor reads`,
  };
}
