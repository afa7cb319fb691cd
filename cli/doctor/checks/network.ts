// Network and disk: the ports the node publishes must be free, the data folder must have room and
// sit on a local file system (NFS and friends cannot chown to subordinate ids).
import { fsStats } from "../../host/fs-stats";
import { networkPolicyHostBlocker } from "../../host/network-policy";
import { networkPolicyFix } from "../fixes";
import type { NetworkFacts } from "../../host/facts";
import { fail, ok, skip, warn, type Check, type CheckResult } from "../check";
import { apiPortRequest, choosePort, holdersOf, holderWords } from "../port-choice";

const GiB = 1024 ** 3;
const NETWORK_FS = new Set(["nfs", "cifs", "smb2", "lustre", "gpfs"]);

export const networkChecks: Check[] = [
  {
    id: "ports",
    group: "network",
    label: "free ports",
    run: (f) => portsOutcome(f.network, f.user.uid),
  },
  {
    id: "network-policy",
    group: "network",
    label: "NetworkPolicy enforcement",
    run: (f) => {
      const b = networkPolicyHostBlocker(f);
      if (!b)
        return ok(
          `${f.runtimes.iptables?.path ? "iptables" : "nft"} present, br_netfilter not known to be missing: NetworkPolicies are enforced (rootless-k8s-netpol.service)`,
        );
      // Without iptables and nft kube-proxy has no backend either: the iptables check says so, with the same fix.
      if (b.needs === "iptables") return skip(`${b.why}; see the iptables check, whose fix covers this too`);
      return warn(`not possible: ${b.why}; the API server would accept policies and nothing would hold them`, networkPolicyFix(f, b.needs));
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
      const free = (bytes: number) => `${(bytes / GiB).toFixed(1)} GiB free in ${d.dataDir}${fs}`;
      // Too little room fails on any file system, fuse and tmpfs too (install would stop half-way with ENOSPC).
      if (d.freeBytes !== null && d.freeBytes < 2 * GiB)
        return fail(`only ${free(d.freeBytes)}: the node needs at least 2 GiB (binaries, images, etcd)`);
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
      if (d.freeBytes < 10 * GiB) return warn(`${free(d.freeBytes)}: images fill this quickly; 10 GiB or more is comfortable`);
      return ok(free(d.freeBytes));
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

/**
 * The API port by the one rule install uses (port-choice.ts): free or the node's own is ok; taken
 * without --api-port is a warning that says where install will publish it; taken with --api-port
 * fails, as install refuses it. The other ports (a worker's kubelet, 10250) cannot move: taken,
 * they are a warning, for only joining as a worker needs them.
 */
function portsOutcome(n: NetworkFacts, uid: number): CheckResult {
  const [api, ...others] = n.wantedPorts;
  if (api === undefined) return skip("no ports to check");
  const who = (holders: number[]) => holderWords(holders, n.listenerNames);
  const c = choosePort(n.listeners, apiPortRequest(n, uid));
  const said: string[] = [];
  const user: string[] = [];
  let worst: "ok" | "warn" | "fail" = "ok";
  if (c.kind === "free") said.push(`${api} free`);
  else if (c.kind === "ours") said.push(`${api} is held by your node's API server`);
  else {
    user.push(`ss -ltnp 'sport = :${api}'   # shows what listens on ${api}`);
    if (c.kind === "moved") {
      worst = "warn";
      said.push(`${api} is taken by ${who(c.holders)}; install will publish the API server on ${c.port}, or choose one with --api-port`);
    } else {
      worst = "fail";
      said.push(`--api-port ${api} is taken by ${who(c.holders)}: install refuses it; ${c.free} is free`);
      user.unshift(`rootless-k8s install --api-port ${c.free}`);
    }
  }
  for (const p of others) {
    const holders = holdersOf(n.listeners, p);
    if (!holders.length || n.ownPorts.includes(p)) continue;
    if (worst === "ok") worst = "warn";
    said.push(
      `${p} is taken by ${who(holders)}: a control plane installs, but this host cannot join a cluster as a worker while it is (the control plane reaches a worker's kubelet there)`,
    );
    user.push(`ss -ltnp 'sport = :${p}'   # shows what listens on ${p}`);
  }
  const summary = said.join("; ");
  if (worst === "ok") return ok(summary);
  return worst === "warn" ? warn(summary, { user }) : fail(summary, { user });
}
