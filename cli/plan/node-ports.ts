// The range Services' NodePorts come from (the API server's --service-node-port-range), chosen with
// install --node-port-range: on a shared host, users who give their nodes ranges of their own never
// ask for the same host port. Pure: the parsing rule (exit 2 for bad input is the caller's) and the
// default, which is upstream's.
import type { Plan } from "./plan";

export interface PortRange {
  first: number;
  last: number;
}

/** The API server's own default (kube-apiserver --service-node-port-range). */
export const DEFAULT_NODE_PORTS: PortRange = { first: 30000, last: 32767 };

/** The lowest first port: below 1024 a user cannot publish (net.ipv4.ip_unprivileged_port_start's default). */
export const NODE_PORTS_FLOOR = 1024;

/**
 * "A-B" into a range, or why not: malformed, reversed, below 1024, above 65535, or holding the API
 * server's port (its NodePorts would be published over it).
 */
export function parseNodePortRange(text: string, apiPort: number): PortRange | string {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(text.trim());
  if (!m) return "a range FIRST-LAST, e.g. 30000-32767";
  const first = Number(m[1]);
  const last = Number(m[2]);
  if (last > 65535) return `${last} is above 65535`;
  if (first > last) return `it is reversed: ${first} is above ${last}`;
  if (first < NODE_PORTS_FLOOR) return `it starts below ${NODE_PORTS_FLOOR}, where an ordinary user cannot publish`;
  if (apiPort >= first && apiPort <= last)
    return `it holds the API server's port ${apiPort}; choose a range without it, or another --api-port`;
  return { first, last };
}

export function rangeText(r: PortRange): string {
  return `${r.first}-${r.last}`;
}

/** The node's range: the plan's, or upstream's default for a plan written before it had one. */
export function nodePortsOf(plan: Pick<Plan, "network">): PortRange {
  return plan.network.nodePorts ?? DEFAULT_NODE_PORTS;
}
