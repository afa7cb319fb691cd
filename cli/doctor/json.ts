// `doctor --json`: the stable, documented contract (docs/doctor-json.md), schemaVersion 1.
// Additive changes only; anything that renames or removes a field bumps schemaVersion.
import type { Facts, ToolFacts } from "../host/facts";
import type { Diagnosis } from "./index";

export const SCHEMA_VERSION = 1;

/** The tools reported under host.runtimes, always all of them (null when absent). */
export const JSON_TOOLS = ["docker", "containerd", "crio", "runc", "crun", "rootlesskit", "slirp4netns"] as const;

function tool(t: ToolFacts | null): { version: string | null; path: string | null; raw: string | null } | null {
  return t && { version: t.version, path: t.path, raw: t.raw };
}

export function doctorJson(facts: Facts, d: Diagnosis): object {
  const r = facts.runtimes;
  const runtimes: Record<string, object | null> = {};
  for (const name of JSON_TOOLS) runtimes[name] = tool(r[name]);
  if (r.docker) {
    runtimes.docker = {
      ...tool(r.docker),
      rootless: r.docker.rootless,
      cgroupDriver: r.docker.cgroupDriver,
      imageStore: r.docker.imageStore ?? null,
      clientVersion: r.docker.clientVersion,
      serverVersion: r.docker.serverVersion,
      namespaceAddress: r.docker.namespaceAddress ?? null,
    };
  }
  const c = facts.cgroup;
  return {
    schemaVersion: SCHEMA_VERSION,
    mode: d.mode,
    reasons: d.reasons,
    givesUp: d.givesUp,
    host: {
      distro: {
        id: facts.distro.id,
        versionId: facts.distro.versionId,
        idLike: facts.distro.idLike,
        prettyName: facts.distro.prettyName,
        family: facts.distro.family,
      },
      kernel: { release: facts.kernel.release, wsl: facts.kernel.wsl },
      arch: facts.arch,
      cgroup: { mode: c.mode, delegatedControllers: c.mode === "v2" ? (c.userControllers ?? []) : [] },
      user: { name: facts.user.name, uid: facts.user.uid, subuid: facts.user.subuid.ranges, subgid: facts.user.subgid.ranges },
      systemd: { version: facts.systemd.version, userManager: facts.systemd.userManager, linger: facts.systemd.linger === true },
      runtimes,
    },
    checks: d.outcomes.map((o) => ({
      id: o.id,
      status: o.status,
      summary: o.summary,
      fix: o.fix && o.fix.root.length + o.fix.user.length > 0 ? { root: o.fix.root, user: o.fix.user } : null,
    })),
    notes: facts.notes,
  };
}
