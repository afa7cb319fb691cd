// Which /readyz a start waits for (issue 41): one rule for the units' start gates and for the
// readiness wait of install, upgrade and start.
//
// Two of the API server's bootstrap hooks poll once a second with the first try after a second
// (wait.Poll in k8s.io/kubernetes pkg/registry/rbac/rest/storage_rbac.go and
// pkg/registry/scheduling/rest/storage_scheduling.go), so /readyz is never ok within a second of
// the server starting to serve: on this host about 1.0 to 1.3 s of a 4.5 s warm start. What they
// do is create the bootstrap RBAC roles and bindings and the system priority classes, if missing.
// Once a start at this Kubernetes version has passed the whole /readyz, this node's etcd holds
// them: a later start at the same version waits for /readyz without those two hooks (everything
// else, the informers' sync included, still counts), and the hooks finish a second later, with
// nothing to add. The marker beside etcd's data says at which version that happened and for which
// etcd data (its member folder's inode); a new version (an upgrade, a rollback), new etcd data (made
// anew or restored) or a marker that cannot be read means the whole /readyz. The units' gates
// compare it with the version the API server itself reports (/version), the readiness wait with the
// plan's, which it also requires of /version.
import { promises as fsp } from "node:fs";

/** The bootstrap hooks that only re-create what a bootstrapped node's etcd already holds. */
export const POLLED_BOOTSTRAP_HOOKS = [
  "poststarthook/rbac/bootstrap-roles",
  "poststarthook/scheduling/bootstrap-system-priority-classes",
] as const;

/** The readiness path: the whole /readyz, or, on a node bootstrapped at this version, without the polled hooks. */
export function readyzPath(bootstrapped: boolean): string {
  return bootstrapped ? `/readyz?${POLLED_BOOTSTRAP_HOOKS.map((h) => `exclude=${h}`).join("&")}` : "/readyz";
}

/** What the marker records: the version, and which etcd data passed it (its member folder and inode). */
export interface BootstrapRecord {
  version: string;
  /** etcd's member folder (data/etcd/member): a new or restored etcd has another inode. */
  etcdMember: string;
  ino: number;
}

/** The marker's content: one line, "VERSION INODE PATH". */
export function bootstrapMarkerText(r: BootstrapRecord): string {
  return `${r.version} ${r.ino} ${r.etcdMember}\n`;
}

/** The record of `version` for etcd's member folder as it is now; null when etcd has no data yet. */
export async function bootstrapRecordNow(version: string, etcdMember: string): Promise<BootstrapRecord | null> {
  const st = await fsp.stat(etcdMember).catch(() => null);
  return st ? { version, etcdMember, ino: st.ino } : null;
}

/**
 * True when `marker` records a bootstrap at `version` by the etcd data that is there now; false when
 * it is missing, unreadable, another version's, or etcd's member folder was made anew since.
 */
export async function bootstrappedAt(marker: string, version: string): Promise<boolean> {
  const text = await fsp.readFile(marker, "utf8").catch(() => "");
  const m = /^(\S+) (\d+) (\/.+)\n$/.exec(text);
  if (!m || m[1] !== version) return false;
  const now = await bootstrapRecordNow(version, m[3] as string);
  return now !== null && now.ino === Number(m[2]);
}
