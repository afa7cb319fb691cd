// What `status` says about published ports: every port RootlessKit publishes right now (its own
// list is the truth), each with its owner from the port publisher's state file (the Service or pod
// it was published for; the API server's own port), and every port asked for but not published,
// with the reason the publisher recorded (taken on the host, below ip_unprivileged_port_start,
// another owner, SCTP). Read-only. The state file, not a recomputation from the API, because only
// the publisher saw RootlessKit's refusals and the sysctl it judged by.
import { ANSWER_MS } from "./answer";
import * as path from "node:path";
import type { PortsState, UnpublishedPort } from "../agents/ports-controller";
import { describePortSpec, rootlessKitClient, type RootlessKitClient } from "../clients/rootlesskit";
import { messageOf } from "../errors";
import type { PortStatus } from "../plan/ports";
import type { Plan } from "../plan/plan";
import { layout } from "../render/layout";
import { readStateFile } from "./state-file";

export interface PublishedPortView {
  protocol: string;
  hostIP: string;
  hostPort: number;
  /** "10.0.2.100:30080", or "30080" to the driver's default address. */
  target: string;
  /** "Service shop/web", "Pod default/p", "the API server", or "not rootless-k8s's" (removed at the next pass). */
  owner: string;
}

export interface PortsStatus {
  /** The publisher's settings from the plan; null for a plan older than it. */
  publisher: { enabled: boolean; unit: string | null; bindAddress: string; keepsSourceIP: { tcp: boolean; udp: boolean } } | null;
  /** What RootlessKit publishes now; null when it was not asked (publisher off) or did not answer (see detail). */
  published: PublishedPortView[] | null;
  unpublished: UnpublishedPort[];
  /** When the state file was last written, and why its last pass could not finish, if so. */
  updated: string | null;
  detail: string | null;
}

/** Joins RootlessKit's list with the publisher's state: an owner for every entry (pure). */
export function publishedView(current: readonly PortStatus[], state: PortsState | null, apiPorts: readonly number[]): PublishedPortView[] {
  const key = (proto: string, ip: string | undefined, port: number) => `${proto}|${ip || "0.0.0.0"}|${port}`;
  const owners = new Map((state?.published ?? []).map((p) => [key(p.protocol, p.hostIP, p.hostPort), p.owner]));
  return [...current]
    .sort((a, b) => a.spec.parentPort - b.spec.parentPort || a.spec.proto.localeCompare(b.spec.proto))
    .map((c) => {
      const s = c.spec;
      const owner =
        owners.get(key(s.proto, s.parentIP, s.parentPort)) ??
        (apiPorts.includes(s.parentPort) ? "the API server" : "not rootless-k8s's (removed at the next pass)");
      return {
        protocol: s.proto,
        hostIP: s.parentIP || "0.0.0.0",
        hostPort: s.parentPort,
        target: describePortSpec(s).split(" → ")[1] ?? String(s.childPort),
        owner,
      };
    });
}

export async function portsStatus(plan: Plan, client?: RootlessKitClient): Promise<PortsStatus> {
  const p = plan.publish;
  const publisher = p
    ? { enabled: p.enabled, unit: plan.units.ports ?? null, bindAddress: p.bindAddress, keepsSourceIP: p.keepsSourceIP }
    : null;
  if (!p?.enabled) return { publisher, published: null, unpublished: [], updated: null, detail: null };
  const state = await readStateFile<PortsState>(layout(plan).run.portsState);
  const rk = client ?? rootlessKitClient(path.join(plan.paths.rootlesskitStateDir, "api.sock"), { timeoutMs: ANSWER_MS });
  const apiPorts = plan.network.published.map((x) => x.hostPort);
  let published: PublishedPortView[] | null = null;
  let detail: string | null = state ? state.error : `${plan.units.ports ?? "the ports unit"} has written no state yet`;
  try {
    published = publishedView(await rk.listPorts(), state, apiPorts);
  } catch (e) {
    detail = messageOf(e);
  }
  return { publisher, published, unpublished: state?.unpublished ?? [], updated: state?.updated ?? null, detail };
}
