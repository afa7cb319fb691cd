// Network and disk: the ports the node publishes must be free, the data folder must have room and
// sit on a local file system (NFS and friends cannot chown to subordinate ids).
import { fsStats } from "../../host/fs-stats";
import { fail, ok, skip, warn, type Check } from "../check";

const GiB = 1024 ** 3;
const NETWORK_FS = new Set(["nfs", "cifs", "smb2", "lustre", "gpfs"]);

export const networkChecks: Check[] = [
  {
    id: "ports",
    group: "network",
    label: "free ports",
    run: (f) => {
      const n = f.network;
      if (!n.wantedPorts.length) return skip("no ports to check");
      if (!n.busyPorts.length) return ok(`${n.wantedPorts.join(", ")} free`);
      return fail(`${n.busyPorts.join(", ")} already in use on this host`, {
        user: n.busyPorts.map((p) => `ss -ltnp 'sport = :${p}'   # shows what listens on ${p}`),
      });
    },
  },
  {
    id: "disk",
    group: "network",
    label: "data folder",
    run: (f) => {
      const d = f.disk;
      const fs = d.fsType ? ` (${d.fsType})` : "";
      if (d.fsType && NETWORK_FS.has(d.fsType)) {
        return fail(
          `${d.dataDir} is on ${d.fsType}: files cannot be chowned to subordinate ids there ("lchown: operation not permitted")`,
          {
            user: ["# choose a data folder on a local disk; check it with: rootless-k8s doctor --data-dir DIR"],
          },
        );
      }
      // cAdvisor keeps statistics only for ext*, xfs, btrfs, zfs, overlay, tmpfs and nfs (fs/fs.go processMounts): elsewhere the
      // kubelet's /stats/summary fails ("failed to get rootFs stats"), and with it evictions and `kubectl top` (docs/upstream-notes.md, item 7).
      if (d.fsType === "fuse") {
        return warn(
          `${d.dataDir} is on fuse: the kubelet (cAdvisor) keeps no statistics for it, so /stats/summary fails, and with it evictions and \`kubectl top\``,
          {
            user: ["# choose a data folder on ext4, xfs or btrfs; check it with: rootless-k8s doctor --data-dir DIR"],
          },
        );
      }
      if (d.fsType === "tmpfs") {
        return warn(`${d.dataDir} is on tmpfs: the node's data (etcd, images, volumes) lives in memory and is gone after a reboot`, {
          user: ["# choose a data folder on a disk; check it with: rootless-k8s doctor --data-dir DIR"],
        });
      }
      if (d.freeBytes === null) return skip(`${d.dataDir}: free space unknown`);
      const free = `${(d.freeBytes / GiB).toFixed(1)} GiB free in ${d.dataDir}${fs}`;
      if (d.freeBytes < 2 * GiB) return fail(`only ${free}: the node needs at least 2 GiB (binaries, images, etcd)`);
      if (d.freeBytes < 10 * GiB) return warn(`${free}: images fill this quickly; 10 GiB or more is comfortable`);
      return ok(free);
    },
  },
  {
    id: "eviction",
    group: "network",
    label: "eviction",
    run: (f) => {
      const s = fsStats(f.disk);
      if (s.readable) return ok(`the kubelet's eviction manager can observe memory, disk and PIDs: ${s.reason}`);
      if (f.disk.devMajor === null) return skip(s.reason);
      return warn(
        `${s.reason}: the kubelet runs with localStorageCapacityIsolation false and its eviction manager never runs (no eviction on memory, disk or PID pressure; ephemeral-storage limits not enforced)`,
        { user: ["# choose a data folder on a local disk (ext4, xfs); check it with: rootless-k8s doctor --data-dir DIR"] },
      );
    },
  },
];
