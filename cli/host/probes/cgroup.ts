// cgroup layout: v1, hybrid (v1 controllers plus an empty unified hierarchy) or v2, and which
// controllers systemd delegates to user@UID.service (the condition for the `delegated` mode).
import { delegatesCore } from "../cgroups";
import type { CgroupFacts, CgroupMode } from "../facts";
import { parseControllers, parseProcSelfCgroup } from "../parse/procfs";
import type { ProbeContext } from "./context";

/**
 * v2 when /sys/fs/cgroup itself is the unified hierarchy; hybrid when a unified hierarchy sits
 * next to v1 ones (/sys/fs/cgroup/unified, or a "0::" line beside v1 lines); else v1.
 */
export function cgroupMode(procSelfCgroup: string | null, rootControllersFile: boolean, unifiedControllersFile: boolean): CgroupMode {
  if (rootControllersFile) return "v2";
  const p = parseProcSelfCgroup(procSelfCgroup);
  const v1Lines = p.lines.some((l) => l.id !== "0");
  if (unifiedControllersFile || (p.unifiedPath !== null && v1Lines)) return "hybrid";
  if (p.unifiedPath !== null && !v1Lines) return "v2";
  return "v1";
}

export async function cgroupFacts(ctx: ProbeContext): Promise<CgroupFacts> {
  const { host, user } = ctx;
  const [self, rootCtl, unifiedCtl] = await Promise.all([
    host.readText("/proc/self/cgroup"),
    host.readText("/sys/fs/cgroup/cgroup.controllers"),
    host.readText("/sys/fs/cgroup/unified/cgroup.controllers"),
  ]);
  const mode = cgroupMode(self, rootCtl !== null, unifiedCtl !== null);
  const v2Mount = mode === "v2" ? "/sys/fs/cgroup" : mode === "hybrid" && unifiedCtl !== null ? "/sys/fs/cgroup/unified" : null;
  const userServicePath = v2Mount ? `${v2Mount}/user.slice/user-${user.uid}.slice/user@${user.uid}.service` : null;
  const userControllers = userServicePath ? parseControllers(await host.readText(`${userServicePath}/cgroup.controllers`)) : null;
  return {
    mode,
    rootControllers: parseControllers(mode === "v2" ? rootCtl : unifiedCtl) ?? [],
    userServicePath,
    userControllers,
    delegated: delegatesCore(mode, userControllers),
    selfCgroup: parseProcSelfCgroup(self).unifiedPath,
    v2Mount,
  };
}
