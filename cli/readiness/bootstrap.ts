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
// nothing to add. The marker beside etcd's data says at which version that happened; a new
// version (an upgrade, a rollback) or a marker that cannot be read means the whole /readyz.
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

/** The marker's content for `version`: one line. */
export function bootstrapMarkerText(version: string): string {
  return `${version}\n`;
}

/** True when `marker` records a bootstrap at `version`; false when it is missing, unreadable or another version's. */
export async function bootstrappedAt(marker: string, version: string): Promise<boolean> {
  try {
    return (await fsp.readFile(marker, "utf8")) === bootstrapMarkerText(version);
  } catch {
    return false;
  }
}
