// What the pod network across hosts needs of this host (doctor --join, the join's preflight): the
// vxlan module (a user cannot load it; the namespace's device needs it), br_netfilter, the host's
// reverse-path filter, and the overlay's UDP port not held by another program. Read-only: files of
// /proc, /sys and /lib/modules through the host interface.
import type { Host } from "../host";
import { parseBoundUdpPorts, parseModulesBuiltin, parseProcModules } from "../parse/procfs";

/** flannel's defaults: VNI 1, the Linux VXLAN port 8472 (not IANA's 4789), the device named after the VNI. */
export const VXLAN = { vni: 1, port: 8472, device: "rk8s.1" } as const;

/** loaded/builtin: usable; available: a module file the kernel can load (root: modprobe); missing; unknown: no way to tell. */
export type OverlayModuleState = "loaded" | "builtin" | "available" | "missing" | "unknown";

export interface OverlayHostFacts {
  vxlan: OverlayModuleState;
  brNetfilter: OverlayModuleState;
  /** net.ipv4.conf.{all,default}.rp_filter of the host (a new network namespace starts from these); null when unreadable. */
  rpFilter: { all: number | null; default: number | null };
  /** The UDP ports bound on the host (/proc/net/udp, udp6). */
  boundUdpPorts: number[];
}

/** Where each module's file lies below /lib/modules/<release>/kernel, and a file that exists only once it is in the kernel. */
const MODULES = {
  vxlan: { dir: "drivers/net/vxlan", evidence: "/sys/module/vxlan" },
  br_netfilter: { dir: "net/bridge", evidence: "/proc/sys/net/bridge/bridge-nf-call-iptables" },
} as const;

async function moduleState(
  host: Host,
  name: keyof typeof MODULES,
  loaded: Set<string> | null,
  builtin: Set<string> | null,
  release: string,
): Promise<OverlayModuleState> {
  if (loaded?.has(name)) return "loaded";
  if (builtin?.has(name)) return "builtin";
  if (await host.stat(MODULES[name].evidence)) return "loaded";
  const files = (await host.readDir(`/lib/modules/${release}/kernel/${MODULES[name].dir}`)) ?? [];
  if (files.some((f) => f.startsWith(`${name}.ko`))) return "available";
  return loaded || builtin ? "missing" : "unknown";
}

export async function overlayHostFacts(host: Host): Promise<OverlayHostFacts> {
  const release = host.uname().release;
  const [procModules, builtinText, udp, udp6, all, def] = await Promise.all([
    host.readText("/proc/modules"),
    host.readText(`/lib/modules/${release}/modules.builtin`),
    host.readText("/proc/net/udp"),
    host.readText("/proc/net/udp6"),
    host.readText("/proc/sys/net/ipv4/conf/all/rp_filter"),
    host.readText("/proc/sys/net/ipv4/conf/default/rp_filter"),
  ]);
  const loaded = procModules === null ? null : parseProcModules(procModules);
  const builtin = builtinText === null ? null : parseModulesBuiltin(builtinText);
  const num = (t: string | null) => (t === null || !/^\d+$/.test(t.trim()) ? null : Number(t.trim()));
  return {
    vxlan: await moduleState(host, "vxlan", loaded, builtin, release),
    brNetfilter: await moduleState(host, "br_netfilter", loaded, builtin, release),
    rpFilter: { all: num(all), default: num(def) },
    boundUdpPorts: parseBoundUdpPorts(udp, udp6),
  };
}
