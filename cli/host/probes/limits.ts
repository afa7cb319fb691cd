// The per-user limits a node charges to one uid (issue 45): keys (kernel.keys.maxkeys), processes
// and threads (RLIMIT_NPROC, ulimit -u), and what the user holds of them now. inotify's limits are
// read with the kernel's features (kernel.ts). Read-only; a value that cannot be read is null.
import type { UserLimitFacts } from "../facts";
import { parseKeyUsers, parseMaxProcesses, threadsOf } from "../parse/limits";
import { parseIntOrNull } from "../parse/procfs";
import type { ProbeContext } from "./context";

export async function userLimitFacts(ctx: Pick<ProbeContext, "host" | "user">): Promise<UserLimitFacts> {
  const { host, user } = ctx;
  const r = (p: string) => host.readText(p);
  const [keyUsers, maxkeys, limits, threadsMax] = await Promise.all([
    r("/proc/key-users"),
    r(user.uid === 0 ? "/proc/sys/kernel/keys/root_maxkeys" : "/proc/sys/kernel/keys/maxkeys"),
    // RLIMIT_NPROC is this process's (the user's login); another user's (doctor --user) is not known here.
    user.other ? Promise.resolve(null) : r("/proc/self/limits"),
    r("/proc/sys/kernel/threads-max"),
  ]);
  const keys = parseKeyUsers(keyUsers, user.uid);
  const max = parseIntOrNull(maxkeys);
  const nproc = parseMaxProcesses(limits);
  return {
    keys: max === null ? null : { used: keys?.used ?? 0, max },
    nproc: nproc === undefined ? null : (nproc ?? "unlimited"),
    threads: await userThreads(ctx),
    threadsMax: parseIntOrNull(threadsMax),
    pidsMax: await userPidsMax(ctx),
  };
}

/**
 * The lowest pids.max of user.slice, user-UID.slice and user@UID.service, where the pids controller
 * is: the v2 hierarchy (/sys/fs/cgroup), or v1's pids one (/sys/fs/cgroup/pids, on v1 and hybrid
 * hosts, whose unified hierarchy carries no controller). "max" is no bound.
 */
async function userPidsMax(ctx: Pick<ProbeContext, "host" | "user">): Promise<UserLimitFacts["pidsMax"]> {
  const uid = ctx.user.uid;
  let lowest: { max: number; cgroup: string } | null = null;
  for (const root of ["/sys/fs/cgroup", "/sys/fs/cgroup/pids"]) {
    for (const cg of ["/user.slice", `/user.slice/user-${uid}.slice`, `/user.slice/user-${uid}.slice/user@${uid}.service`]) {
      const max = parseIntOrNull(await ctx.host.readText(`${root}${cg}/pids.max`));
      if (max !== null && (!lowest || max < lowest.max)) lowest = { max, cgroup: cg.split("/").at(-1) as string };
    }
  }
  return lowest;
}

/** The threads the user's processes run now (their Threads: lines), or null when /proc cannot be listed. */
async function userThreads(ctx: Pick<ProbeContext, "host" | "user">): Promise<number | null> {
  const pids = (await ctx.host.readDir("/proc"))?.filter((p) => /^\d+$/.test(p));
  if (!pids) return null;
  let n = 0;
  for (const pid of pids) {
    const st = await ctx.host.stat(`/proc/${pid}`);
    if (st?.uid !== ctx.user.uid) continue;
    n += threadsOf(await ctx.host.readText(`/proc/${pid}/status`));
  }
  return n;
}
