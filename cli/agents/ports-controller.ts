// The port publisher's loop (`rootless-k8s ports run`, the ports unit): it lists and watches Services
// and the node's pods through the API server with its own certificate, decides the wanted host ports
// (cli/plan/ports.ts, pure), reads RootlessKit's list and makes the difference (cli/clients/rootlesskit.ts).
// A port RootlessKit refuses (taken on the host), skips or loses to another owner gets one Event on
// its Service or pod; a LoadBalancer Service gets status.loadBalancer.ingress; what was decided goes
// to a state file for `status`. Nothing it meets is fatal: the API server or RootlessKit not
// answering, RBAC not applied yet, a watch ending or expiring (410 Gone) all lead to another try.
// Changes are debounced (a deleted Service is unpublished well within 2 s) and everything is
// resynced every few seconds (a host port freed since, a sysctl changed, a port removed by hand).
import { promises as fsp } from "node:fs";
import { messageOf } from "../errors";
import {
  type PodObject,
  type PortConflict,
  type PortSpec,
  type PortStatus,
  portSpecOf,
  reconcilePorts,
  type ServiceObject,
  type SkippedPort,
  type WantedPort,
  wantedPorts,
} from "../plan/ports";
import type { PortsConfig } from "../render/ports";
import { warningEvent } from "../render/kube-objects";
import { writeFileAtomic } from "../apply/files";
import { readConfigFile, refuseBadFields } from "./config-file";
export { DEFAULT_TIMING, type LoopTiming } from "../clients/informer";
import { DEFAULT_TIMING, Informer, passLoop } from "../clients/informer";
import { type ApiClient, apiMessage, followingApiClient } from "../clients/kubernetes";
import { applyPortChanges, describePortSpec, RootlessKitError, type RootlessKitClient, rootlessKitClient } from "../clients/rootlesskit";

export const COMPONENT = "rootless-k8s-ports";

/** What a Service or a pod carries beyond what cli/plan/ports.ts reads: identity, version, LoadBalancer status. */
type Meta = { namespace?: string; name: string; uid?: string; resourceVersion?: string };
export type ServiceItem = ServiceObject & {
  metadata: Meta;
  spec?: { loadBalancerClass?: string };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
};
export type PodItem = PodObject & { metadata: Meta };

/** A port that is not published, and why: RootlessKit refused it, or it was skipped or lost a conflict. */
export interface UnpublishedPort {
  protocol: string;
  hostPort: number;
  owner: string;
  reason: string;
  /** "refused": RootlessKit said no (the host port is taken, ...); "skipped": not publishable; "conflict": another owner has it. */
  kind: "refused" | "skipped" | "conflict";
}

/** The state file (`status` reads it): what the last pass decided and reached. */
export interface PortsState {
  schemaVersion: 1;
  /** When the last pass ended (ISO 8601). */
  updated: string;
  bindAddress: string;
  /** Published by this publisher, with RootlessKit's id and the owner. */
  published: (WantedPort & { id: number })[];
  unpublished: UnpublishedPort[];
  /** Why the last pass could not finish (the API server or RootlessKit not answering); null when it did. */
  error: string | null;
}

export interface PortsRuntime {
  api: ApiClient;
  rootlesskit: RootlessKitClient;
  /** The host's net.ipv4.ip_unprivileged_port_start, read anew for each pass (a root fix takes effect at once). */
  unprivilegedPortStart(): Promise<number>;
  log(line: string): void;
  now?: () => Date;
}

// ---------------------------------------------------------------------------------------------
// Pure parts.

const nameOf = (m: Meta) => `${m.namespace ?? "default"}/${m.name}`;

/** The owner string cli/plan/ports.ts gives ("Service ns/name", "Pod ns/name") → the object. */
export function ownerIndex(
  services: readonly ServiceItem[],
  pods: readonly PodItem[],
): Map<string, { kind: "Service" | "Pod"; metadata: Meta }> {
  const index = new Map<string, { kind: "Service" | "Pod"; metadata: Meta }>();
  for (const s of services) index.set(`Service ${nameOf(s.metadata)}`, { kind: "Service", metadata: s.metadata });
  for (const p of pods) index.set(`Pod ${nameOf(p.metadata)}`, { kind: "Pod", metadata: p.metadata });
  return index;
}

/** Everything not published, one list: RootlessKit's refusals, then the skipped ports, then the conflicts. */
export function unpublishedPorts(
  refused: readonly { port: WantedPort; reason: string }[],
  skipped: readonly SkippedPort[],
  conflicts: readonly PortConflict[],
): UnpublishedPort[] {
  return [
    ...refused.map((r) => ({
      protocol: r.port.protocol,
      hostPort: r.port.hostPort,
      owner: r.port.owner,
      reason: r.reason,
      kind: "refused" as const,
    })),
    ...skipped.map((s) => ({ protocol: s.protocol, hostPort: s.hostPort, owner: s.owner, reason: s.reason, kind: "skipped" as const })),
    ...conflicts.map((c) => ({ protocol: c.protocol, hostPort: c.hostPort, owner: c.owner, reason: c.reason, kind: "conflict" as const })),
  ];
}

/** The Event's reason: PortPublishFailed when RootlessKit refused, PortNotPublished when the plan left the port out. */
export function eventReason(u: UnpublishedPort): "PortPublishFailed" | "PortNotPublished" {
  return u.kind === "refused" ? "PortPublishFailed" : "PortNotPublished";
}

/** One line: "host port tcp/30080 (0.0.0.0) not published: <reason>". */
export function eventMessage(u: UnpublishedPort, bindAddress: string): string {
  return `host port ${u.protocol}/${u.hostPort} (${bindAddress}) not published: ${u.reason}`;
}

/** A core/v1 Event on the owner of an unpublished port (kubectl describe shows it). */
export function portEvent(
  u: UnpublishedPort,
  owner: { kind: "Service" | "Pod"; metadata: Meta },
  bindAddress: string,
  nodeName: string,
  now: Date,
): Record<string, unknown> {
  return warningEvent(
    { apiVersion: "v1", kind: owner.kind, metadata: owner.metadata },
    { reason: eventReason(u), message: eventMessage(u, bindAddress), component: COMPONENT, nodeName, now },
  );
}

/**
 * The status patch that makes a LoadBalancer Service's ingress the host's addresses, or null when it
 * has them already, is no LoadBalancer, belongs to another implementation (spec.loadBalancerClass), or
 * `ips` is empty.
 */
export function ingressPatch(s: ServiceItem, ips: readonly string[]): Record<string, unknown> | null {
  // No addresses: this node's publisher does not write ingress (a worker: the control plane's does).
  if (!ips.length || s.spec?.type !== "LoadBalancer" || s.spec.loadBalancerClass) return null;
  const now = (s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? "");
  if (now.length === ips.length && now.every((ip, i) => ip === ips[i])) return null;
  return { status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } } };
}

const specKey = (s: PortSpec) => `${s.proto}|${s.parentIP || "0.0.0.0"}|${s.parentPort}|${s.childIP ?? ""}|${s.childPort}`;

/** The wanted ports RootlessKit lists now, each with its id (what is really published). */
export function publishedNow(wanted: readonly WantedPort[], current: readonly PortStatus[]): (WantedPort & { id: number })[] {
  const ids = new Map(current.map((c) => [specKey(c.spec), c.id]));
  return wanted.flatMap((w) => {
    const id = ids.get(specKey(portSpecOf(w)));
    return id === undefined ? [] : [{ ...w, id }];
  });
}

// ---------------------------------------------------------------------------------------------
// The loop.

/**
 * Runs until `signal` aborts (SIGTERM: systemctl stop), then returns once the pass in flight ended.
 * The published ports stay: they belong to RootlessKit, which goes with the namespace owner, and the
 * next start resyncs to exactly the wanted set.
 */
export async function runPortsController(
  config: PortsConfig,
  rt: PortsRuntime,
  signal: AbortSignal,
  timing = DEFAULT_TIMING,
): Promise<void> {
  const now = rt.now ?? (() => new Date());
  const nodeSelector = `fieldSelector=${encodeURIComponent(`spec.nodeName=${config.nodeName}`)}`;
  /** Events already written, by what they say: one per port and cause while it lasts. */
  let reported = new Set<string>();
  let lastError = "";
  /** Failures to write to the API server (no RBAC yet, ...): each line once while it keeps happening. */
  let said = new Set<string>();
  let saying = new Set<string>();
  const warn = (line: string) => {
    saying.add(line);
    if (!said.has(line)) rt.log(line);
  };

  const pass = async (): Promise<void> => {
    if (!services.synced || !pods.synced) return; // never reconcile against half a picture
    const svc = [...services.items.values()];
    const pod = [...pods.items.values()];
    const start = await rt.unprivilegedPortStart();
    const wanted = wantedPorts(svc, pod, {
      bindAddress: config.bindAddress,
      unprivilegedPortStart: start,
      reserved: config.reserved,
      childIP: config.childIP,
    });
    const owners = ownerIndex(svc, pod);
    let error: string | null = null;
    let refused: { port: WantedPort; reason: string }[] = [];
    let published: PortsState["published"] = [];
    try {
      const current = await rt.rootlesskit.listPorts();
      const changes = reconcilePorts(wanted, current);
      const results = await applyPortChanges(rt.rootlesskit, changes);
      const byKey = new Map(wanted.ports.map((w) => [specKey(portSpecOf(w)), w]));
      const byId = new Map(current.map((c) => [c.id, describePortSpec(c.spec)]));
      for (const r of results) {
        if (r.action === "remove") {
          const what = `${byId.get(r.id) ?? "port"} (id ${r.id})`;
          rt.log(r.error ? `could not unpublish ${what}: ${r.error}` : `unpublished ${what}`);
        } else {
          const w = byKey.get(specKey(r.spec));
          const who = w ? ` for ${w.owner}` : "";
          if (r.error === null) rt.log(`published ${describePortSpec(r.spec)}${who}`);
          else if (w) refused.push({ port: w, reason: r.error });
        }
      }
      published = publishedNow(wanted.ports, await rt.rootlesskit.listPorts());
    } catch (e) {
      if (!(e instanceof RootlessKitError)) throw e;
      error = e.message;
      refused = [];
    }
    if ((error ?? "") !== lastError)
      rt.log(error ? `${error}; trying again every ${timing.resyncMs / 1000} s` : "RootlessKit answers again");
    lastError = error ?? "";

    // One Event per unpublished port and cause, while it lasts (written again if it comes back later).
    const unpublished = unpublishedPorts(refused, wanted.skipped, wanted.conflicts);
    const still = new Set<string>();
    for (const u of unpublished) {
      const key = `${u.owner}|${u.protocol}/${u.hostPort}|${u.reason}`;
      const owner = owners.get(u.owner);
      if (!owner) continue;
      if (reported.has(key)) {
        still.add(key);
        continue;
      }
      if (u.kind === "refused") rt.log(`could not publish ${u.protocol}/${u.hostPort} for ${u.owner}: ${u.reason}`);
      const ev = portEvent(u, owner, config.bindAddress, config.nodeName, now());
      const r = await rt.api
        .post(`/api/v1/namespaces/${encodeURIComponent(owner.metadata.namespace ?? "default")}/events`, ev, 10_000)
        .catch((e: unknown) => ({
          status: 0,
          body: messageOf(e),
        }));
      if (r.status === 201 || r.status === 200) still.add(key);
      else warn(`could not write the Event for ${u.owner} (${u.protocol}/${u.hostPort}): HTTP ${r.status} ${apiMessage(r.body)}`);
    }
    reported = still;

    for (const s of svc) {
      const patch = ingressPatch(s, config.ingressIPs);
      if (!patch) continue;
      const path = `/api/v1/namespaces/${encodeURIComponent(s.metadata.namespace ?? "default")}/services/${encodeURIComponent(s.metadata.name)}/status`;
      const r = await rt.api.mergePatch(path, patch, 10_000).catch((e: unknown) => ({ status: 0, body: messageOf(e) }));
      if (r.status === 200) rt.log(`Service ${nameOf(s.metadata)}: load balancer ingress ${config.ingressIPs.join(", ")}`);
      else warn(`could not set the load balancer ingress of Service ${nameOf(s.metadata)}: HTTP ${r.status} ${apiMessage(r.body)}`);
    }
    said = saying;
    saying = new Set();

    const state: PortsState = {
      schemaVersion: 1,
      updated: now().toISOString(),
      bindAddress: config.bindAddress,
      published,
      unpublished,
      error,
    };
    await writeFileAtomic(config.stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o644 }).catch((e: unknown) =>
      rt.log(`could not write ${config.stateFile}: ${messageOf(e)}`),
    );
  };

  const loop = passLoop(pass, { signal, timing, log: (l) => rt.log(l) });
  const services = new Informer<ServiceItem>("Services", "/api/v1/services", "", rt, timing, loop.changed);
  const pods = new Informer<PodItem>("pods", "/api/v1/pods", nodeSelector, rt, timing, loop.changed);
  rt.log(`publishing Services' and pods' ports on ${config.bindAddress} through ${config.rootlesskitSocket}`);
  await loop.run([services.run(signal), pods.run(signal)]);
}

// ---------------------------------------------------------------------------------------------
// Start-up: the config the plan rendered, the host's sysctl, the clients.

/** Reads and checks config/ports.json (cli/render/ports.ts writes it); a bad one is refused in one line. */
export async function readPortsConfig(file: string): Promise<PortsConfig> {
  const fix = "re-run `rootless-k8s install`, which writes it";
  const c = await readConfigFile<PortsConfig>(file, "ports", fix);
  const strings = ["kubeconfig", "rootlesskitSocket", "childIP", "stateFile", "nodeName"] as const;
  refuseBadFields(
    file,
    "ports",
    [
      ...strings.filter((k) => typeof c[k] !== "string" || !c[k]),
      ...(c.bindAddress === "0.0.0.0" || c.bindAddress === "127.0.0.1" ? [] : ["bindAddress"]),
      ...(Array.isArray(c.reserved) && c.reserved.every((p) => Number.isInteger(p)) ? [] : ["reserved"]),
      ...(Array.isArray(c.ingressIPs) && c.ingressIPs.every((ip) => typeof ip === "string") ? [] : ["ingressIPs"]),
    ],
    fix,
  );
  return c as PortsConfig;
}

/** The host's net.ipv4.ip_unprivileged_port_start (1024 when it cannot be read: the kernel's default). */
export async function unprivilegedPortStart(file = "/proc/sys/net/ipv4/ip_unprivileged_port_start"): Promise<number> {
  const n = Number.parseInt(await fsp.readFile(file, "utf8").catch(() => "1024"), 10);
  return Number.isInteger(n) ? n : 1024;
}

/** `rootless-k8s ports run`: the loop with the real clients, until the signal (SIGTERM) stops it. */
export async function portsRun(configFile: string, log: (line: string) => void, signal: AbortSignal): Promise<void> {
  const config = await readPortsConfig(configFile);
  const api = await followingApiClient(config.kubeconfig, log, signal);
  const rootlesskit = rootlessKitClient(config.rootlesskitSocket);
  await runPortsController(config, { api, rootlesskit, unprivilegedPortStart: () => unprivilegedPortStart(), log }, signal);
}
