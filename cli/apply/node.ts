// The node as systemd sees it: which units exist, in which order they start and stop, which must
// restart after a change, and the folders that belong to the tool (for the receipt and uninstall).
import * as path from "node:path";
import type { Plan } from "../plan/plan";
import type { RenderedFile } from "../render/index";
import { isSha256 } from "./files";
import type { OwnedRoots } from "./receipt";

/** Start order: the namespace owner, then etcd, the control plane, the kubelet, kube-proxy, the NetworkPolicy enforcer, the port publisher, the overlay, the approver. */
export function startOrder(plan: Plan): string[] {
  const u = plan.units;
  const own = plan.runtime.name !== "docker"; // with docker the owner is the user's docker.service
  return [
    ...(own ? [u.owner] : []),
    ...controlPlaneUnits(plan),
    ...(u.criDockerd ? [u.criDockerd] : []),
    u.kubelet,
    u.kubeProxy,
    ...(u.networkPolicy ? [u.networkPolicy] : []),
    ...(u.ports ? [u.ports] : []),
    ...(u.overlay ? [u.overlay] : []),
    ...(u.csrApprover ? [u.csrApprover] : []),
    ...(u.logRotate ? [u.logRotate] : []),
  ];
}

/** Units in the order the node starts them, each once (names not of this plan dropped). */
export function inStartOrder(plan: Plan, units: Iterable<string>): string[] {
  const want = new Set(units);
  return startOrder(plan).filter((u) => want.has(u));
}

/** etcd and the control plane, in start order: none on a worker. */
export function controlPlaneUnits(plan: Plan): string[] {
  const u = plan.units;
  return plan.role === "worker" ? [] : [u.etcd, u.apiServer, u.controllerManager, u.scheduler];
}

/** Every unit file of ours, target included. */
export function allUnits(plan: Plan): string[] {
  return [plan.units.target, ...startOrder(plan)];
}

/** The unit that runs each installed binary (helpers such as kubectl or crictl run none). */
export function unitOfBinary(plan: Plan, name: string, dir: string | null): string | null {
  const u = plan.units;
  if (dir === "cni") return plan.runtime.name === "docker" ? null : u.owner;
  const byName: Record<string, string | null> = {
    kubelet: u.kubelet,
    "kube-apiserver": u.apiServer,
    "kube-controller-manager": u.controllerManager,
    "kube-scheduler": u.scheduler,
    "kube-proxy": u.kubeProxy,
    etcd: u.etcd,
    "cri-dockerd": u.criDockerd,
  };
  if (name in byName) return startOrder(plan).includes(byName[name] ?? "") ? (byName[name] ?? null) : null;
  // Everything RootlessKit's child runs: the runtime, its shims and OCI runtimes, the network helper.
  const owner = [
    "rootlesskit",
    "rootlessctl",
    "slirp4netns",
    "containerd",
    "containerd-shim-runc-v2",
    "runc",
    "crun",
    "crio",
    "conmon",
    "conmonrs",
    "pinns",
  ];
  return owner.includes(name) && plan.runtime.name !== "docker" ? u.owner : null;
}

export interface SetBinary {
  path: string;
  sha256: string;
}

/** Units whose binary differs between two installed sets (compared by name and content). */
export function unitsWithNewBinaries(
  plan: Plan,
  from: readonly SetBinary[] | null,
  to: readonly SetBinary[],
  toBinDir: string,
  fromBinDir: string | null,
): Set<string> {
  const units = new Set<string>();
  const rel = (p: string, dir: string) => path.relative(dir, p);
  const old = new Map((from ?? []).map((b) => [rel(b.path, fromBinDir ?? ""), b.sha256]));
  for (const b of to) {
    const r = rel(b.path, toBinDir);
    if (from && isSha256(b.sha256) && old.get(r) === b.sha256) continue; // a malformed hash proves no sameness
    const unit = unitOfBinary(plan, path.basename(r), path.dirname(r) === "." ? null : path.dirname(r));
    if (unit) units.add(unit);
  }
  return units;
}

/**
 * The units to restart: a unit whose file changed, a unit that reads a changed file, a unit whose
 * binary changed; every unit when a target-wide input (CA, env) changed, or when the namespace
 * owner restarts (its namespace goes, and everything bound to it with it). In start order, so a
 * restart follows the dependencies: etcd, the API server, then the kubelet (never newer than it).
 */
export function restartsFor(
  plan: Plan,
  changed: readonly Pick<RenderedFile, "unit" | "kind">[],
  newBinaries: ReadonlySet<string>,
): string[] {
  const order = startOrder(plan);
  const hit = new Set<string>(newBinaries);
  for (const f of changed) {
    if (!f.unit) continue;
    if (f.unit === plan.units.target) {
      if (f.kind === "unit") continue; // the target's own file: a daemon-reload is enough
      return order;
    }
    hit.add(f.unit);
  }
  if (hit.has(plan.units.owner) && plan.runtime.name !== "docker") return order;
  return inStartOrder(plan, hit);
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

/** Units whose component version differs between two version sets (for a dry run, before any download). */
export function unitsWithNewVersions(plan: Plan, from: Record<string, string>, to: Record<string, string>): Set<string> {
  const u = plan.units;
  const own = plan.runtime.name !== "docker" ? [u.owner] : [];
  const byComponent: Record<string, string[]> = {
    kubernetes: [u.apiServer, u.controllerManager, u.scheduler, u.kubelet, u.kubeProxy],
    etcd: [u.etcd],
    "cri-dockerd": u.criDockerd ? [u.criDockerd] : [],
  };
  const out = new Set<string>();
  for (const c of new Set([...Object.keys(from), ...Object.keys(to)])) {
    if (from[c] === to[c]) continue;
    for (const unit of byComponent[c] ?? own) out.add(unit);
  }
  return out;
}
