// The node as systemd sees it: which units exist, in which order they start and stop, which must
// restart after a change, and the folders that belong to the tool (for the receipt and uninstall).
import * as path from "node:path";
import type { Plan } from "../plan/plan";
import type { RenderedFile } from "../render/index";
import type { OwnedRoots } from "./receipt";

/** Start order: the namespace owner, then etcd, the control plane, the kubelet, kube-proxy. */
export function startOrder(plan: Plan): string[] {
  const u = plan.units;
  const own = plan.runtime.name !== "docker"; // with docker the owner is the user's docker.service
  return [
    ...(own ? [u.owner] : []),
    u.etcd,
    u.apiServer,
    u.controllerManager,
    u.scheduler,
    ...(u.criDockerd ? [u.criDockerd] : []),
    u.kubelet,
    u.kubeProxy,
  ];
}

/** Every unit file of ours, target included. */
export function allUnits(plan: Plan): string[] {
  return [plan.units.target, ...startOrder(plan)];
}

/**
 * The units to restart after `changed` files were written: a unit whose file changed, a unit that
 * reads a changed file, every unit when the target-wide inputs (CA, env) or the binaries changed.
 * In start order, so a restart follows the dependencies.
 */
export function restartsFor(plan: Plan, changed: readonly Pick<RenderedFile, "unit" | "kind">[], binariesChanged: boolean): string[] {
  const order = startOrder(plan);
  if (binariesChanged) return order;
  const hit = new Set<string>();
  for (const f of changed) {
    if (!f.unit) continue;
    if (f.unit === plan.units.target) {
      if (f.kind === "unit") continue; // the target's own file: a daemon-reload is enough
      return order;
    }
    hit.add(f.unit);
  }
  // A restarted owner takes the namespace with it: everything bound to it restarts too.
  if (hit.has(plan.units.owner) && plan.runtime.name !== "docker") return order;
  return order.filter((u) => hit.has(u));
}

/** The folders that are the tool's own (uninstall may remove below them). */
export function rootsOf(plan: Plan): OwnedRoots {
  const p = plan.paths;
  return {
    state: p.shareDir,
    data: p.dataDir,
    config: p.configDir,
    pki: p.pkiDir,
    runtime: p.runtimeDir,
    versions: p.versionsDir,
    logs: p.logDir,
    libexec: p.libexecDir,
  };
}

/** Folders created outside the owned roots that uninstall may remove again when empty. */
export function sharedParents(plan: Plan): string[] {
  return [plan.paths.unitDir, path.dirname(plan.paths.logDir)];
}
