// Which host port the API server gets: the one rule that doctor's "ports" check, install's answer to
// "which port?", the plan's validation and the refusal of --api-port all read, so doctor never
// fails what install works around. Who holds a port is decided by the socket (its owner's uid in
// /proc/net/tcp), never by a receipt: a port the installed node once had is "ours" only while this
// user holds it.
import type { NetworkFacts } from "../host/facts";
import type { Listener } from "../host/parse/procfs";

export type PortChoice =
  /** Nothing listens on the wanted port. */
  | { kind: "free"; port: number }
  /** The installed node holds it (this user's socket on one of the node's own ports). */
  | { kind: "ours"; port: number }
  /** Taken, and not chosen by the user: install moves to `port`, the first free one after `from`. */
  | { kind: "moved"; port: number; from: number; holders: number[] }
  /** Taken, and chosen by the user (--api-port): install refuses; `free` is the first free port after it. */
  | { kind: "taken"; port: number; holders: number[]; free: number };

export interface PortRequest {
  /** The port asked for: --api-port, else the installed node's, else 6443. */
  wanted: number;
  /** The user named it (--api-port): it never moves. */
  fixed: boolean;
  /** The installed node's own published ports (its receipt). */
  own: readonly number[];
  /** This user's uid: only its sockets can be the node's own. */
  uid: number;
}

/** The API port's request as the facts hold it (NetworkFacts: wanted, --api-port, the node's own ports), for this user. */
export function apiPortRequest(n: NetworkFacts, uid: number): PortRequest {
  return { wanted: n.wantedPorts[0] ?? 6443, fixed: n.apiPortFixed, own: n.ownPorts, uid };
}

/** The uids that listen on `port`, each once, in order. */
export function holdersOf(listeners: readonly Listener[], port: number): number[] {
  return [...new Set(listeners.filter((l) => l.port === port).map((l) => l.uid))].sort((a, b) => a - b);
}

/** The first port from `from` (inclusive) that nothing listens on and that is not in `avoid`. */
export function firstFreePort(listeners: readonly Listener[], from: number, avoid: readonly number[] = []): number {
  const busy = new Set([...listeners.map((l) => l.port), ...avoid]);
  let p = from;
  while (busy.has(p) && p < 65535) p++;
  return p;
}

/** The decision for one port. `avoid`: ports that must not be picked besides those held (a claim that failed). */
export function choosePort(listeners: readonly Listener[], req: PortRequest, avoid: readonly number[] = []): PortChoice {
  const holders = holdersOf(listeners, req.wanted);
  const claimedElsewhere = avoid.includes(req.wanted);
  if (!holders.length && !claimedElsewhere) return { kind: "free", port: req.wanted };
  if (!claimedElsewhere && req.own.includes(req.wanted) && holders.every((u) => u === req.uid)) return { kind: "ours", port: req.wanted };
  const free = firstFreePort(listeners, req.wanted + 1, avoid);
  if (req.fixed) return { kind: "taken", port: req.wanted, holders, free };
  return { kind: "moved", port: free, from: req.wanted, holders };
}

/** "uid 1006", "uids 1005 and 1006", or "another program" when no owner could be read. */
export function holderWords(holders: readonly number[], names: Readonly<Record<number, string>> = {}): string {
  const one = (u: number) => (names[u] ? `${names[u]} (uid ${u})` : `uid ${u}`);
  if (!holders.length) return "another program";
  if (holders.length === 1) return one(holders[0]!);
  return `${holders.slice(0, -1).map(one).join(", ")} and ${one(holders.at(-1)!)}`;
}
