// Small /proc and /sys formats: sysctls, meminfo, routes, listening sockets, modules, fib_trie.
import type { Controller, Route } from "../facts";

export function parseIntOrNull(text: string | null): number | null {
  if (text === null) return null;
  const t = text.trim();
  return /^-?\d+$/.test(t) ? Number(t) : null;
}

/** /proc/meminfo "SwapTotal:  2097148 kB" -> KiB. */
export function meminfoKiB(text: string | null, key: string): number | null {
  const m = text ? new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(text) : null;
  return m ? Number(m[1]) : null;
}

function hexToIpv4(hex: string): string {
  const n = parseInt(hex, 16);
  return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, (n >>> 24) & 255].join(".");
}

function maskBits(hex: string): number {
  let n = parseInt(hex, 16) >>> 0;
  let bits = 0;
  while (n) {
    bits += n & 1;
    n >>>= 1;
  }
  return bits;
}

/** /proc/net/route: Iface Destination Gateway Flags ... Mask (little-endian hex). Up routes only. */
export function parseRoutes(text: string | null): Route[] {
  const out: Route[] = [];
  for (const line of (text ?? "").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8) continue;
    const flags = parseInt(f[3]!, 16);
    if (!(flags & 1)) continue;
    out.push({ cidr: `${hexToIpv4(f[1]!)}/${maskBits(f[7]!)}`, iface: f[0]! });
  }
  return out;
}

/** A TCP socket in LISTEN on the host: its port, the uid that owns it and the address it is bound to. */
export interface Listener {
  port: number;
  uid: number;
  /** "127.0.0.1", "0.0.0.0", "::", "::1" or another address, as /proc/net/tcp and tcp6 give it. */
  address: string;
}

/**
 * /proc/net/tcp and tcp6: the sockets in LISTEN (state 0A), each with its owner's uid (the 8th
 * field): who holds a port, not only whether it is held (proc_net_tcp(5)).
 */
export function parseListeners(...texts: (string | null)[]): Listener[] {
  const out: Listener[] = [];
  const seen = new Set<string>();
  for (const text of texts) {
    for (const line of (text ?? "").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 8 || f[3] !== "0A") continue;
      const [hexAddr = "", hexPort = ""] = f[1]!.split(":");
      const port = parseInt(hexPort, 16);
      const uid = Number(f[7]);
      if (!Number.isFinite(port) || !Number.isInteger(uid)) continue;
      const address = procAddress(hexAddr);
      const key = `${address}|${port}|${uid}`;
      if (seen.has(key)) continue; // SO_REUSEPORT groups list one line per socket
      seen.add(key);
      out.push({ port, uid, address });
    }
  }
  return out.sort((a, b) => a.port - b.port || a.uid - b.uid);
}

/** An address of /proc/net/tcp (8 hex digits) or tcp6 (32), each 32-bit word in host (little-endian) order. */
function procAddress(hex: string): string {
  const words = hex.match(/.{8}/g) ?? [];
  const bytes = words.flatMap((w) => [6, 4, 2, 0].map((i) => parseInt(w.slice(i, i + 2), 16)));
  if (bytes.length === 4) return bytes.join(".");
  if (bytes.length !== 16) return hex;
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12).join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return groups
    .join(":")
    .replace(/(^|:)0(:0)+(:|$)/, "::")
    .replace(/:{3,}/, "::");
}

/** /proc/net/udp and udp6: every bound local UDP port (UDP has no listening state: any socket holds its port). */
export function parseBoundUdpPorts(...texts: (string | null)[]): number[] {
  const ports = new Set<number>();
  for (const text of texts) {
    for (const line of (text ?? "").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 4) continue;
      const port = parseInt(f[1]!.split(":").pop()!, 16);
      if (Number.isFinite(port) && port > 0) ports.add(port);
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** /proc/net/fib_trie: the host's own (LOCAL /32) IPv4 addresses, loopback excluded. */
export function parseLocalAddresses(text: string | null): string[] {
  const out = new Set<string>();
  const lines = (text ?? "").split("\n");
  for (let i = 1; i < lines.length; i++) {
    if (/\/32 host LOCAL/.test(lines[i]!)) {
      const m = /([\d.]+)\s*$/.exec(lines[i - 1]!);
      if (m && !m[1]!.startsWith("127.")) out.add(m[1]!);
    }
  }
  return [...out];
}

/** Names of loaded modules in /proc/modules ("name size refcount ..."). */
export function parseProcModules(text: string): Set<string> {
  return new Set(
    text
      .split("\n")
      .map((l) => l.split(" ")[0]!)
      .filter(Boolean),
  );
}

/** modules.builtin lists paths ("kernel/net/ipv4/netfilter/ip_tables.ko"); module names use "_" for "-". */
export function parseModulesBuiltin(text: string): Set<string> {
  return new Set(
    text
      .split("\n")
      .map((l) => /([^/]+)\.ko(?:\.\w+)?$/.exec(l.trim())?.[1]?.replace(/-/g, "_"))
      .filter((x): x is string => !!x),
  );
}

const CONTROLLERS: readonly Controller[] = ["cpu", "cpuset", "io", "memory", "pids", "hugetlb", "rdma", "misc"];

/** cgroup.controllers: space-separated names; unknown names are dropped. */
export function parseControllers(text: string | null): Controller[] | null {
  if (text === null) return null;
  return text
    .trim()
    .split(/\s+/)
    .filter((c): c is Controller => (CONTROLLERS as readonly string[]).includes(c));
}

export interface ProcSelfCgroup {
  /** "hierarchy-id:controllers:path" lines. */
  lines: { id: string; controllers: string; path: string }[];
  /** Path of the v2 ("0::") line, if any. */
  unifiedPath: string | null;
}

export function parseProcSelfCgroup(text: string | null): ProcSelfCgroup {
  const lines: ProcSelfCgroup["lines"] = [];
  for (const l of (text ?? "").split("\n")) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(l.trim());
    if (m) lines.push({ id: m[1]!, controllers: m[2]!, path: m[3]! });
  }
  const u = lines.find((l) => l.id === "0" && l.controllers === "");
  return { lines, unifiedPath: u ? u.path : null };
}

/** getcap output, libcap >= 2.41 "/usr/bin/newuidmap cap_setuid=ep", older "/usr/bin/newuidmap = cap_setuid+ep". */
export function parseGetcap(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^(\/\S+)\s+(?:=\s+)?(cap_\S+)\s*$/.exec(line.trim());
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

/** True if a getcap capability text grants cap (in the effective+permitted sets). */
export function capabilityGranted(caps: string | null, cap: string): boolean {
  if (!caps) return false;
  return caps.split(/\s+/).some((clause) => {
    const m = /^([a-z_,]+)([=+][a-z]*)/.exec(clause);
    return !!m && m[1]!.split(",").some((c) => c === cap || c === "all") && /[ep]/.test(m[2]!);
  });
}
