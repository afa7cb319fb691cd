// iproute2's JSON output (`ip -j`, `bridge -j`, iproute2 4.13 and later) for the overlay's device:
// its link and addresses, and the routes, neighbours and forwarding entries it holds. Pure; a field
// that is missing or of the wrong type is read as absent, and output that is not JSON as nothing.

/** What the overlay's device holds now: its routes, neighbour entries and forwarding (fdb) entries. */
export interface OverlayState {
  routes: { dst: string; gateway: string | null }[];
  neighbours: { dst: string; lladdr: string | null }[];
  fdb: { mac: string; dst: string | null }[];
}

function jsonArray(text: string): Record<string, unknown>[] {
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => typeof x === "object" && x !== null) : [];
  } catch {
    return [];
  }
}

const str = (v: unknown): string | null => (typeof v === "string" && v ? v : null);

/**
 * A device as `ip -d -j addr show dev NAME` lists it: its MAC, MTU, whether it is up, its IPv4
 * addresses (a/len) and, for a VXLAN device, its VNI, UDP port and whether it sums its UDP
 * (udpCsum null: this iproute2 does not say).
 */
export interface LinkView {
  mac: string | null;
  mtu: number | null;
  up: boolean;
  ipv4: string[];
  vxlan: { vni: number | null; port: number | null; udpCsum: boolean | null } | null;
}

const num = (v: unknown): number | null => (typeof v === "number" ? v : null);

function vxlanOf(linkinfo: unknown): LinkView["vxlan"] {
  const li = linkinfo as { info_kind?: unknown; info_data?: Record<string, unknown> } | undefined;
  if (li?.info_kind !== "vxlan") return null;
  const d = li.info_data ?? {};
  return { vni: num(d.id), port: num(d.port), udpCsum: typeof d.udp_csum === "boolean" ? d.udp_csum : null };
}

export function parseIpAddr(text: string): LinkView | null {
  const link = jsonArray(text)[0];
  if (!link) return null;
  const flags = Array.isArray(link.flags) ? link.flags : [];
  const info = Array.isArray(link.addr_info) ? (link.addr_info as Record<string, unknown>[]) : [];
  return {
    mac: str(link.address)?.toLowerCase() ?? null,
    mtu: typeof link.mtu === "number" ? link.mtu : null,
    up: flags.includes("UP"),
    ipv4: info.filter((a) => a.family === "inet" && str(a.local)).map((a) => `${a.local as string}/${String(a.prefixlen ?? 32)}`),
    vxlan: vxlanOf(link.linkinfo),
  };
}

/** `ip -j route show dev D`, `ip -j neigh show dev D` and `bridge -j fdb show dev D`, read together. */
export function parseOverlayState(routes: string, neighbours: string, fdb: string): OverlayState {
  return {
    routes: jsonArray(routes).flatMap((r) => {
      const dst = str(r.dst);
      return dst ? [{ dst, gateway: str(r.gateway) }] : [];
    }),
    neighbours: jsonArray(neighbours).flatMap((n) => {
      const dst = str(n.dst);
      return dst ? [{ dst, lladdr: str(n.lladdr)?.toLowerCase() ?? null }] : [];
    }),
    fdb: jsonArray(fdb).flatMap((f) => {
      const mac = str(f.mac);
      return mac ? [{ mac: mac.toLowerCase(), dst: str(f.dst) }] : [];
    }),
  };
}
