// The distribution and kernel, and the kernel features a rootless node leans on: rootless overlayfs,
// /dev/fuse and /dev/net/tun, modules (root must load them), sysctls, swap, SELinux.
import type { DeviceFacts, DistroFacts, KernelFacts, KernelFeatureFacts, ModuleState } from "../facts";
import { distroFromOsRelease } from "../parse/os-release";
import { kernelVersion, versionAtLeast, wslVersion } from "../parse/kernel";
import { meminfoKiB, parseIntOrNull, parseModulesBuiltin, parseProcModules } from "../parse/procfs";
import { findTool, probeRun, type ProbeContext } from "./context";

export async function distroFacts(ctx: ProbeContext): Promise<DistroFacts> {
  const etc = await ctx.host.readText("/etc/os-release");
  if (etc !== null) return distroFromOsRelease(etc, "/etc/os-release");
  const usr = await ctx.host.readText("/usr/lib/os-release");
  return distroFromOsRelease(usr, usr === null ? null : "/usr/lib/os-release");
}

export async function kernelFacts(ctx: ProbeContext): Promise<KernelFacts> {
  const u = ctx.host.uname();
  const [procVersion, cmdline, osrelease] = await Promise.all([
    ctx.host.readText("/proc/version"),
    ctx.host.readText("/proc/cmdline"),
    ctx.host.readText("/proc/sys/kernel/osrelease"),
  ]);
  // Under --root the image's /proc (if any) describes it better than this machine's uname.
  const release = ctx.host.canRun || !osrelease ? u.release : osrelease.trim();
  return {
    sysname: u.sysname,
    release,
    version: kernelVersion(release),
    wsl: wslVersion(procVersion, release),
    cmdline: cmdline?.trim() ?? null,
  };
}

/** Modules the node's networking needs. Root must load them: a user cannot modprobe. */
export const NEEDED_MODULES = [
  "overlay",
  "tun",
  "bridge",
  "veth",
  "br_netfilter",
  "x_tables",
  "ip_tables",
  "ip6_tables",
  "iptable_nat",
  "ip6table_nat",
  "iptable_filter",
  "ip6table_filter",
  "xt_MASQUERADE",
  "xt_addrtype",
  "xt_comment",
  "xt_conntrack",
  "xt_mark",
  "xt_multiport",
  "xt_nat",
  "xt_tcpudp",
] as const;

/** Files that exist only when a module is loaded or built in (for kernels without /proc/modules). */
const EVIDENCE: Record<string, string> = {
  tun: "/sys/class/misc/tun",
  br_netfilter: "/proc/sys/net/bridge/bridge-nf-call-iptables",
  x_tables: "/proc/net/ip_tables_matches",
  ip_tables: "/proc/net/ip_tables_names",
  ip6_tables: "/proc/net/ip6_tables_names",
};

async function moduleStates(
  ctx: ProbeContext,
  release: string,
): Promise<{ states: Record<string, ModuleState>; source: KernelFeatureFacts["modulesSource"] }> {
  const { host } = ctx;
  const [procModules, builtinText, filesystems] = await Promise.all([
    host.readText("/proc/modules"),
    host.readText(`/lib/modules/${release}/modules.builtin`),
    host.readText("/proc/filesystems"),
  ]);
  const loaded = procModules === null ? null : parseProcModules(procModules);
  const builtin = builtinText === null ? null : parseModulesBuiltin(builtinText);
  const fsTypes = new Set((filesystems ?? "").split("\n").map((l) => l.trim().split(/\s+/).pop()!));
  const states: Record<string, ModuleState> = {};
  await Promise.all(
    NEEDED_MODULES.map(async (name) => {
      if (loaded?.has(name)) return void (states[name] = "loaded");
      if (builtin?.has(name)) return void (states[name] = "builtin");
      const evidence = name === "overlay" ? fsTypes.has("overlay") : !!(await host.stat(EVIDENCE[name] ?? `/sys/module/${name}`));
      if (evidence) return void (states[name] = "builtin");
      states[name] = loaded || builtin ? "missing" : "unknown";
    }),
  );
  return { states, source: loaded || builtin ? "proc-modules" : "evidence" };
}

async function device(ctx: ProbeContext, p: string): Promise<DeviceFacts> {
  const st = await ctx.host.stat(p);
  if (!st || st.type !== "char") return { exists: false, usable: false, mode: null };
  const mode = st.mode & 0o777;
  const usable =
    ctx.user.other || !ctx.host.canRun
      ? (mode & 0o006) === 0o006 || (st.uid === ctx.user.uid && (mode & 0o600) === 0o600)
      : await ctx.host.writable(p);
  return { exists: true, usable, mode };
}

/**
 * Rootless overlayfs: upstream since 5.11 (Ubuntu kernels since 2015). Older kernels get a real
 * mount in a throw-away user+mount namespace, in a temporary folder removed afterwards.
 */
async function overlayRootless(ctx: ProbeContext, kernel: KernelFacts, distroId: string): Promise<KernelFeatureFacts["overlayRootless"]> {
  if (versionAtLeast(kernel.version, [5, 11]) || (distroId === "ubuntu" && versionAtLeast(kernel.version, [3, 18])))
    return { ok: true, basis: "kernel-version" };
  const unshare = ctx.host.canRun && !ctx.user.other && ctx.host.ids.uid !== 0 ? await findTool(ctx.host, "unshare") : null;
  if (!unshare) return { ok: null, basis: "unknown" };
  const script =
    'd=$(mktemp -d) || exit 2; mkdir "$d/l" "$d/u" "$d/w" "$d/m"; ' +
    'mount -t overlay overlay -o "lowerdir=$d/l,upperdir=$d/u,workdir=$d/w" "$d/m"; rc=$?; umount "$d/m" 2>/dev/null; rm -rf "$d"; exit $rc';
  const r = await probeRun(ctx, unshare, ["--user", "--map-root-user", "--mount", "sh", "-c", script], 1500);
  if (r.notFound || r.timedOut || r.code === 2) return { ok: null, basis: "unknown" };
  return { ok: r.code === 0, basis: "mount-test" };
}

function selinuxMode(enforce: string | null, sysFs: boolean): KernelFeatureFacts["selinux"] {
  if (enforce !== null) return enforce.trim() === "1" ? "enforcing" : "permissive";
  return sysFs ? "disabled" : null;
}

export async function featureFacts(ctx: ProbeContext, kernel: KernelFacts, distroId: string): Promise<KernelFeatureFacts> {
  const { host } = ctx;
  const r = (p: string) => host.readText(p);
  const [overlay, fuse, tun, mods, ipf, ups, watches, instances, meminfo, enforce, sysFs, dmesg, ping] = await Promise.all([
    overlayRootless(ctx, kernel, distroId),
    device(ctx, "/dev/fuse"),
    device(ctx, "/dev/net/tun"),
    moduleStates(ctx, kernel.release),
    r("/proc/sys/net/ipv4/ip_forward"),
    r("/proc/sys/net/ipv4/ip_unprivileged_port_start"),
    r("/proc/sys/fs/inotify/max_user_watches"),
    r("/proc/sys/fs/inotify/max_user_instances"),
    r("/proc/meminfo"),
    r("/sys/fs/selinux/enforce"),
    host.stat("/sys/fs"),
    r("/proc/sys/kernel/dmesg_restrict"),
    r("/proc/sys/net/ipv4/ping_group_range"),
  ]);
  const pm = ping ? /^\s*(\d+)\s+(\d+)/.exec(ping) : null;
  return {
    overlayRootless: overlay,
    devFuse: fuse.exists,
    devNetTun: tun.exists,
    devices: { fuse, netTun: tun },
    modules: mods.states,
    modulesSource: mods.source,
    ipForward: parseIntOrNull(ipf),
    ipUnprivilegedPortStart: parseIntOrNull(ups),
    inotifyMaxUserWatches: parseIntOrNull(watches),
    inotifyMaxUserInstances: parseIntOrNull(instances),
    swapTotalKiB: meminfoKiB(meminfo, "SwapTotal"),
    memTotalKiB: meminfoKiB(meminfo, "MemTotal"),
    selinux: selinuxMode(enforce, !!sysFs),
    dmesgRestrict: parseIntOrNull(dmesg),
    pingGroupRange: pm ? [Number(pm[1]), Number(pm[2])] : null,
  };
}
