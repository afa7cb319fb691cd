// Subordinate id ranges: /etc/subuid and /etc/subgid lines "owner:start:count", where owner is a
// user name or a numeric UID (newuidmap accepts both), and the output of `getsubids [-g] USER`
// (shadow >= 4.11: "0: user 100000 65536"), which also covers ranges served by NSS (SSSD, LDAP).
import type { SubIdRange } from "../facts";

export interface SubIdEntry {
  owner: string;
  start: number;
  count: number;
}

export function parseSubIdFile(text: string | null): SubIdEntry[] {
  const out: SubIdEntry[] = [];
  for (const raw of (text ?? "").split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const m = /^([^:\s]+):(\d+):(\d+)$/.exec(line);
    if (m) out.push({ owner: m[1]!, start: Number(m[2]), count: Number(m[3]) });
  }
  return out;
}

export function parseGetsubids(text: string): SubIdEntry[] {
  const out: SubIdEntry[] = [];
  for (const line of text.split("\n")) {
    const m = /^\s*\d+:\s+(\S+)\s+(\d+)\s+(\d+)\s*$/.exec(line);
    if (m) out.push({ owner: m[1]!, start: Number(m[2]), count: Number(m[3]) });
  }
  return out;
}

export function isOwnEntry(e: SubIdEntry, name: string, id: number): boolean {
  return e.owner === name || e.owner === String(id);
}

export function rangesOverlap(a: SubIdRange, b: SubIdRange): boolean {
  return a.count > 0 && b.count > 0 && a.start < b.start + b.count && b.start < a.start + a.count;
}

export function inRanges(id: number, ranges: readonly SubIdRange[]): boolean {
  return ranges.some((r) => id >= r.start && id < r.start + r.count);
}
