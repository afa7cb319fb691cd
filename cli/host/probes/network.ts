// Network and disk facts: routes (for CIDR collisions), listening ports, addresses, hostname, and
// the free space and file system type of the data folder.
import type { DiskFacts, NetworkFacts } from "../facts";
import { parsePasswd } from "../parse/passwd";
import { parseListeners, parseLocalAddresses, parseRoutes } from "../parse/procfs";
import type { ProbeContext } from "./context";

export async function networkFacts(ctx: ProbeContext): Promise<NetworkFacts> {
  const r = (p: string) => ctx.host.readText(p);
  const [route, fib, hostname, { listeners, listenerNames }] = await Promise.all([
    r("/proc/net/route"),
    r("/proc/net/fib_trie"),
    r("/proc/sys/kernel/hostname"),
    readListeners(r),
  ]);
  return {
    routes: parseRoutes(route),
    listeners,
    listenerNames,
    hostname: hostname?.trim() || null,
    addresses: parseLocalAddresses(fib),
    wantedPorts: ctx.ports,
    apiPortFixed: ctx.apiPortFixed,
    ownPorts: ctx.ownPorts,
  };
}

/** The host's listening TCP sockets with their owners' uids, and those owners' names from /etc/passwd. */
export async function readListeners(
  read: (p: string) => Promise<string | null>,
): Promise<Pick<NetworkFacts, "listeners" | "listenerNames">> {
  const [tcp, tcp6, passwd] = await Promise.all([read("/proc/net/tcp"), read("/proc/net/tcp6"), read("/etc/passwd")]);
  const listeners = parseListeners(tcp, tcp6);
  const uids = new Set(listeners.map((l) => l.uid));
  const listenerNames: Record<number, string> = {};
  for (const e of parsePasswd(passwd)) if (uids.has(e.uid)) listenerNames[e.uid] ??= e.name;
  return { listeners, listenerNames };
}

/** statfs f_type magics worth naming (linux/magic.h). */
const FS_TYPES: Record<number, string> = {
  0x6969: "nfs",
  0xff534d42: "cifs",
  0xfe534d42: "smb2",
  0x01021994: "tmpfs",
  0x794c7630: "overlay",
  0x65735546: "fuse",
  0xef53: "ext4",
  0x58465342: "xfs",
  0x9123683e: "btrfs",
  0x2fc12fc1: "zfs",
  0x47504653: "gpfs",
  0x0bd00bd0: "lustre",
  0x6a656a63: "fakeowner",
};

export async function diskFacts(ctx: ProbeContext): Promise<DiskFacts> {
  const s = await ctx.host.statfs(ctx.dataDir);
  return {
    dataDir: ctx.dataDir,
    freeBytes: s?.freeBytes ?? null,
    fsType: s ? (FS_TYPES[s.type >>> 0] ?? null) : null,
    devMajor: s?.devMajor ?? null,
  };
}
