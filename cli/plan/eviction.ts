// The kubelet's eviction thresholds (issue 43). In mode none the eviction manager is all that stands
// between a runaway pod and the user's machine: no cgroup limit holds a pod back. The defaults are
// sized for a node that shares its machine with its user: the node acts only when the machine is
// nearly out (100 MiB of memory, 5 % of the disk, 5 % of its inodes), since the user's own files
// and programs count against the same disk and memory, and the kubelet's own defaults (10 % of the
// disk, 15 % of the image file system) would evict pods for the user's data on a disk that is
// merely well used. `install --eviction-hard` and `--eviction-soft` change them, signal by signal,
// in the kubelet's own syntax (`memory.available<1Gi,nodefs.available<10%`); a signal set to 0%
// is off. Parsing follows the kubelet's (pkg/kubelet/eviction/helpers.go,
// parseThresholdStatement), so what install accepts the kubelet accepts.
import type { EvictionPlan } from "./plan";

/** The kubelet's signals (pkg/kubelet/eviction/api/types.go). */
export const EVICTION_SIGNALS = [
  "memory.available",
  "allocatableMemory.available",
  "nodefs.available",
  "nodefs.inodesFree",
  "imagefs.available",
  "imagefs.inodesFree",
  "containerfs.available",
  "containerfs.inodesFree",
  "pid.available",
] as const;

export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = {
  "memory.available": "100Mi",
  "nodefs.available": "5%",
  "nodefs.inodesFree": "5%",
  "imagefs.available": "5%",
};

/** How long a soft threshold must hold before the kubelet evicts (upstream's own examples use 1m30s). */
export const DEFAULT_SOFT_GRACE = "1m30s";

const QUANTITY = /^(\d+(\.\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/;
const UNIT: Record<string, number> = {
  "": 1,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/** Bytes (or a count) of a quantity such as 100Mi or 1G; null when it is a percentage or not one. */
export function quantityOf(value: string): number | null {
  const m = QUANTITY.exec(value);
  return m ? Number(m[1]) * (UNIT[m[3] ?? ""] ?? 1) : null;
}

/**
 * `signal<value,...` as the kubelet's --eviction-hard takes it, into { signal: value }; or the
 * one-line reason it is not one. A value is a positive quantity (100Mi, 1Gi, 1000) or a
 * percentage from 0% (off) to 100%.
 */
export function parseEvictionSpec(text: string): Record<string, string> | string {
  const out: Record<string, string> = {};
  const parts = text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!parts.length) return "it names no threshold (write signal<value, e.g. memory.available<500Mi)";
  for (const part of parts) {
    const m = /^([A-Za-z.]+)\s*<\s*(\S+)$/.exec(part);
    if (!m) return `"${part}" is not signal<value (e.g. memory.available<500Mi or nodefs.available<10%)`;
    const [, signal, value] = m as unknown as [string, string, string];
    if (!(EVICTION_SIGNALS as readonly string[]).includes(signal))
      return `"${signal}" is not an eviction signal of the kubelet (${EVICTION_SIGNALS.join(", ")})`;
    if (value.endsWith("%")) {
      const p = Number(value.slice(0, -1));
      if (!/^\d+(\.\d+)?%$/.test(value) || p > 100) return `${signal}<${value}: a percentage is 0% (off) to 100%`;
    } else if (!quantityOf(value)) {
      return `${signal}<${value}: the value is a positive quantity (100Mi, 1Gi) or a percentage (10%)`;
    }
    if (signal in out) return `${signal} is given twice`;
    out[signal] = value;
  }
  return out;
}

/** A duration as the kubelet takes it (Go's time.ParseDuration): 90s, 1m30s, 2h. */
export function isGoDuration(text: string): boolean {
  return /^(\d+(\.\d+)?(h|m|s|ms))+$/.test(text) && !/^0+(\.0+)?[hms]+$/.test(text);
}

export interface EvictionOptions {
  evictionHard?: Record<string, string>;
  evictionSoft?: Record<string, string>;
  /** One grace period for every soft threshold (default 1m30s). */
  evictionSoftGrace?: string;
}

/** The thresholds the kubelet gets: the defaults with the user's signals over them; soft ones with their grace. */
export function decideEviction(o: EvictionOptions): EvictionPlan {
  return evictionDecision(o).eviction;
}

/** decideEviction, and why, in the plan's words. */
export function evictionDecision(o: EvictionOptions): { eviction: EvictionPlan; reasons: string[] } {
  const hard = { ...DEFAULT_EVICTION_HARD, ...(o.evictionHard ?? {}) };
  const soft = { ...(o.evictionSoft ?? {}) };
  const grace = o.evictionSoftGrace ?? DEFAULT_SOFT_GRACE;
  const softGracePeriod = Object.fromEntries(Object.keys(soft).map((s) => [s, grace]));
  const text = (m: Record<string, string>) =>
    Object.entries(m)
      .map(([s, v]) => `${s}<${v}`)
      .join(",");
  const reasons = [
    o.evictionHard
      ? `eviction hard ${text(hard)}: --eviction-hard over the defaults (${text(DEFAULT_EVICTION_HARD)})`
      : `eviction hard ${text(hard)}: the node shares its machine with its user, so it evicts only when the machine is nearly out (the kubelet's own 10% and 15% of the disk would evict pods for the user's files); --eviction-hard changes them`,
  ];
  if (Object.keys(soft).length) reasons.push(`eviction soft ${text(soft)} after ${grace}: --eviction-soft`);
  return { eviction: { hard, soft, softGracePeriod }, reasons };
}

/**
 * Why the kubelet would refuse these thresholds on this machine, or null: a hard memory threshold
 * is reserved from the node's capacity, and the kubelet does not start when the reservation is
 * larger ("invalid Node Allocatable configuration", pkg/kubelet/cm validateNodeAllocatable).
 */
export function evictionProblem(e: EvictionPlan, memTotalBytes: number | null): string | null {
  const mem = e.hard["memory.available"];
  const bytes = mem ? quantityOf(mem) : null;
  if (bytes !== null && memTotalBytes !== null && bytes > memTotalBytes)
    return `the hard eviction threshold memory.available<${mem} is more than this machine's memory (${Math.floor(memTotalBytes / 2 ** 20)} MiB): the kubelet reserves it from the node's capacity and would not start`;
  return null;
}

/** The options that give `e` again (an upgrade keeps the thresholds chosen at install): only what differs from the defaults. */
export function evictionOptions(e: EvictionPlan | undefined): EvictionOptions {
  if (!e) return {};
  const hard = Object.fromEntries(Object.entries(e.hard).filter(([s, v]) => DEFAULT_EVICTION_HARD[s] !== v));
  const soft = e.soft;
  const grace = Object.values(e.softGracePeriod)[0];
  return {
    ...(Object.keys(hard).length ? { evictionHard: hard } : {}),
    ...(Object.keys(soft).length ? { evictionSoft: soft, ...(grace ? { evictionSoftGrace: grace } : {}) } : {}),
  };
}
