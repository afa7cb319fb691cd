// IPv4 CIDR arithmetic for choosing the pod, service and namespace networks.

export interface Ipv4Net {
  /** Network address as an unsigned 32-bit number. */
  base: number;
  prefix: number;
}

export function parseIpv4(ip: string): number | null {
  const parts = ip.split(".");
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = n * 256 + Number(p);
  }
  return n;
}

export function formatIpv4(n: number): string {
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join(".");
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** "10.96.0.0/16" → {base, prefix}; host bits are cleared. Null when malformed. */
export function parseCidr(cidr: string): Ipv4Net | null {
  const m = /^([\d.]+)\/(\d{1,2})$/.exec(cidr.trim());
  if (!m) return null;
  const ip = parseIpv4(m[1]!);
  const prefix = Number(m[2]);
  if (ip === null || prefix > 32) return null;
  return { base: (ip & maskOf(prefix)) >>> 0, prefix };
}

export function formatCidr(net: Ipv4Net): string {
  return `${formatIpv4(net.base)}/${net.prefix}`;
}

export function overlaps(a: Ipv4Net, b: Ipv4Net): boolean {
  const prefix = Math.min(a.prefix, b.prefix);
  const mask = maskOf(prefix);
  return (a.base & mask) >>> 0 === (b.base & mask) >>> 0;
}

/** The n-th address of a network: nth(10.96.0.0/16, 1) = 10.96.0.1. */
export function nthAddress(cidr: string, n: number): string {
  const net = parseCidr(cidr);
  if (!net) throw new Error(`not an IPv4 CIDR: ${cidr}`);
  return formatIpv4((net.base + n) >>> 0);
}

/** The first candidate that overlaps none of `taken` (default routes excluded by the caller). */
export function firstFree(candidates: readonly string[], taken: readonly string[]): string | null {
  const nets = taken.map(parseCidr).filter((n): n is Ipv4Net => n !== null);
  for (const c of candidates) {
    const net = parseCidr(c);
    if (net && !nets.some((t) => overlaps(net, t))) return c;
  }
  return null;
}

/** Which of `taken` a network overlaps (for error messages). */
export function overlapping(cidr: string, taken: readonly string[]): string[] {
  const net = parseCidr(cidr);
  if (!net) return [];
  return taken.filter((t) => {
    const other = parseCidr(t);
    return other !== null && overlaps(net, other);
  });
}

/**
 * A network less some of its parts, as the fewest networks that cover exactly what remains
 * (a NetworkPolicy ipBlock's cidr less its except list): 10.0.0.0/24 less 10.0.0.0/26 is
 * 10.0.0.64/26 and 10.0.0.128/25. Parts outside the network take nothing away.
 */
export function subtractCidrs(net: Ipv4Net, parts: readonly Ipv4Net[]): Ipv4Net[] {
  const inside = parts.filter((p) => overlaps(p, net));
  if (!inside.length) return [net];
  if (inside.some((p) => p.prefix <= net.prefix)) return [];
  const half = net.prefix + 1;
  const size = 2 ** (32 - half);
  return [
    ...subtractCidrs({ base: net.base, prefix: half }, inside),
    ...subtractCidrs({ base: (net.base + size) >>> 0, prefix: half }, inside),
  ];
}
