// The overlay agent's loop (`rootless-k8s overlay run`, the overlay unit, inside the node's
// namespaces): it watches the cluster's Nodes with the kubelet's own credential, puts this host's
// address on its own Node (rootless-k8s.io/public-ip), gives the namespace's VXLAN device the node's
// VTEP once the controller-manager gave the node its pod range, and keeps the device's routes,
// neighbour and forwarding entries at exactly one set per other node (cli/plan/overlay.ts decides
// them; `ip` and `bridge` make them). While another node exists, the VXLAN UDP port is published on
// the host through RootlessKit's port API. Nothing it meets is fatal: the API server, RootlessKit or
// a command failing leads to another pass (every few seconds, and on every change of a Node).
import { promises as fsp } from "node:fs";
import { connect } from "node:net";
import { messageOf } from "../errors";
import { type CommandResult, runCommand } from "./command";
import { readConfigFile, refuseBadFields } from "./config-file";
import { parseIpAddr, parseOverlayState } from "../host/parse/ip-json";
import {
  type OverlayNode,
  PUBLIC_IP_ANNOTATION,
  RP_FILTER,
  deviceCommands,
  deviceNeedsReplacing,
  keepSourcePlace,
  keepSourceRule,
  overlayChanges,
  peersOf,
  vtepAddress,
  vtepMac,
  type OverlayStateFile,
} from "../plan/overlay";
import type { PortSpec } from "../plan/ports";
import type { OverlayConfig } from "../render/overlay";
import { writeFileAtomic } from "../apply/files";
import { DEFAULT_TIMING, Informer, type LoopTiming, passLoop } from "../clients/informer";
import { type ApiClient, apiMessage, followingApiClient } from "../clients/kubernetes";
import { RootlessKitError, type RootlessKitClient, describePortSpec, rootlessKitClient } from "../clients/rootlesskit";

export type { CommandResult } from "./command";

/**
 * Whether a TCP connection to `host:port` opens within `timeoutMs` (inside the namespace: to a peer's
 * VTEP, so the SYN and its answer both cross the overlay); the error when it does not.
 */
export function tcpProbe(host: string, port: number, timeoutMs = 3000): Promise<string | null> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (error: string | null) => {
      s.destroy();
      resolve(error);
    };
    s.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs / 1000} s`));
    s.once("connect", () => done(null));
    s.once("error", (e) => done(e.message));
  });
}

export interface OverlayRuntime {
  api: ApiClient;
  rootlesskit: RootlessKitClient;
  /** Runs a command (argv) inside the namespace; never throws for a non-zero exit. */
  run(argv: string[]): Promise<CommandResult>;
  writeFile(file: string, text: string): Promise<void>;
  log(line: string): void;
  /** tcpProbe, inside the namespace. */
  probe(host: string, port: number): Promise<string | null>;
  now?: () => Date;
}

/**
 * The RootlessKit port spec of the overlay's UDP port: on this host's address, the one the other
 * nodes send to (not on every address of the host), delivered to the node's address inside.
 */
export function overlayPortSpec(c: Pick<OverlayConfig, "port" | "childIP"> & { publicIP: string }): PortSpec {
  return { proto: "udp", parentIP: c.publicIP, parentPort: c.port, childIP: c.childIP, childPort: c.port };
}

const sameSpec = (a: PortSpec, b: PortSpec) =>
  a.proto === b.proto &&
  (a.parentIP || "0.0.0.0") === (b.parentIP || "0.0.0.0") &&
  a.parentPort === b.parentPort &&
  a.childPort === b.childPort;

/**
 * Runs until `signal` aborts (SIGTERM: systemctl stop). What it made stays: the device goes with the
 * namespace, the published port with RootlessKit, and the next start resyncs both.
 */
export async function runOverlayAgent(
  config: OverlayConfig,
  rt: OverlayRuntime,
  signal: AbortSignal,
  timing = DEFAULT_TIMING,
): Promise<void> {
  const said = new Set<string>();
  /** A line once while its cause lasts (a pass that does not say it again clears it). */
  let saying = new Set<string>();
  const say = (line: string) => {
    saying.add(line);
    if (!said.has(line)) rt.log(line);
  };
  let device: { vtep: string } | null = null;
  let keepSource = false;
  /** The peers that answered in the last pass (a line when one starts answering). */
  let reached = new Set<string>();

  const must = async (argv: string[]): Promise<boolean> => {
    const r = await rt.run(argv);
    if (r.code !== 0) say(`${argv.join(" ")} failed (exit ${r.code}): ${r.stderr.trim().split("\n")[0] ?? ""}`);
    return r.code === 0;
  };

  const pass = async (): Promise<void> => {
    if (!nodes.synced) return;
    const all = [...nodes.items.values()];
    const self = all.find((n) => n.metadata.name === config.nodeName);
    if (!self) return say(`Node ${config.nodeName} is not registered yet`);

    // This host's address on the Node, where the other nodes' agents read it.
    if (config.publicIP && self.metadata.annotations?.[PUBLIC_IP_ANNOTATION] !== config.publicIP) {
      const r = await rt.api
        .mergePatch(`/api/v1/nodes/${encodeURIComponent(config.nodeName)}`, {
          metadata: { annotations: { [PUBLIC_IP_ANNOTATION]: config.publicIP } },
        })
        .catch((e: unknown) => ({ status: 0, body: messageOf(e) }));
      if (r.status === 200) rt.log(`Node ${config.nodeName}: ${PUBLIC_IP_ANNOTATION}=${config.publicIP}`);
      else say(`could not annotate Node ${config.nodeName} with ${PUBLIC_IP_ANNOTATION}: HTTP ${r.status} ${apiMessage(r.body)}`);
    }
    const podCidr = self.spec?.podCIDR;
    const vtep = podCidr ? vtepAddress(podCidr) : null;
    if (!vtep) return say(`Node ${config.nodeName} has no pod range yet (spec.podCIDR): the controller-manager gives it one`);

    // The device, with this node's VTEP (again if the range changed or someone removed it).
    let link = parseIpAddr((await rt.run(["ip", "-d", "-j", "addr", "show", "dev", config.device])).stdout);
    const replace = link && deviceNeedsReplacing(config, link);
    if (replace) {
      if (!(await must(["ip", "link", "del", config.device]))) return;
      rt.log(`${config.device}: deleted to be made anew: ${replace}`);
      link = null;
    }
    const right = link?.up && link.mac === vtepMac(vtep) && link.mtu === config.mtu && link.ipv4.includes(`${vtep}/32`);
    if (!right || device?.vtep !== vtep) {
      for (const stale of link?.ipv4.filter((a) => a !== `${vtep}/32`) ?? [])
        await must(["ip", "addr", "del", stale, "dev", config.device]);
      let ok = true;
      for (const argv of deviceCommands(config, vtep, link !== null)) if (!(await must(argv))) ok = false;
      if (!ok) return;
      await rt
        .writeFile(RP_FILTER.path(config.device), RP_FILTER.value)
        .catch((e: unknown) => say(`could not set loose reverse-path filtering on ${config.device}: ${messageOf(e)}`));
      if (device?.vtep !== vtep)
        rt.log(`${config.device}: VTEP ${vtep} (${vtepMac(vtep)}), VNI ${config.vni}, UDP ${config.port}, MTU ${config.mtu}`);
      device = { vtep };
    }

    // Pod to pod across nodes keeps its source: the first rule of nat POSTROUTING, ahead of the CNI
    // bridge's masquerade and of kube-proxy's (masqueradeAll marks every Service packet), which
    // kube-proxy inserts at the top when it starts after this agent: checked on every pass. A
    // masqueraded packet reaches the other node from this node's VTEP, and a NetworkPolicy there
    // that lets in a pod would not know it (upstream's Netpol tests on two nodes: issue 44).
    const rule = keepSourceRule(config.device, config.pods);
    const listing = await rt.run(["iptables", "-w", "-t", "nat", "-S", "POSTROUTING"]);
    const place = listing.code === 0 ? keepSourcePlace(listing.stdout) : "absent";
    if (place !== "first") {
      if (place === "behind") await must(["iptables", "-w", "-t", "nat", "-D", ...rule]);
      if (await must(["iptables", "-w", "-t", "nat", "-I", ...rule.slice(0, 1), "1", ...rule.slice(1)])) {
        if (keepSource || place === "behind") rt.log("pod to pod across nodes keeps its source: its nat rule is first again");
        keepSource = true;
      }
    }

    // One route, neighbour and forwarding entry per other node.
    const { peers, waiting } = peersOf(all, config.nodeName);
    for (const w of waiting) say(`not reached yet: ${w}`);
    const [routes, neigh, fdb] = await Promise.all([
      rt.run(["ip", "-j", "route", "show", "dev", config.device]),
      rt.run(["ip", "-j", "neigh", "show", "dev", config.device]),
      rt.run(["bridge", "-j", "fdb", "show", "dev", config.device]),
    ]);
    const changes = overlayChanges(config.device, peers, parseOverlayState(routes.stdout, neigh.stdout, fdb.stdout));
    for (const argv of changes) if (await must(argv)) rt.log(argv.join(" "));

    // Each peer's VTEP, on the kubelet's port: the connection's SYN and its answer both cross the overlay.
    const probed = await Promise.all(peers.map(async (p) => ({ ...p, error: await rt.probe(p.vtep, config.probePort) })));
    for (const p of probed) {
      const line =
        p.error === null
          ? `${p.node} answers through the overlay (${p.vtep})`
          : `${p.node} (${p.vtep}, host ${p.publicIP}) does not answer through the overlay: ${p.error}; is UDP ${config.port} open both ways between the hosts?`;
      if (p.error !== null) say(line);
      else if (!reached.has(p.node)) rt.log(line);
    }
    reached = new Set(probed.filter((p) => p.error === null).map((p) => p.node));
    const state: OverlayStateFile = {
      schemaVersion: 1,
      updated: (rt.now ?? (() => new Date()))().toISOString(),
      vtep,
      peers: probed.map((p) => ({
        node: p.node,
        podCidr: p.podCidr,
        vtep: p.vtep,
        publicIP: p.publicIP,
        reachable: p.error === null,
        error: p.error,
      })),
      waiting,
    };
    await writeFileAtomic(config.stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o644 }).catch((e: unknown) =>
      say(`could not write ${config.stateFile}: ${messageOf(e)}`),
    );

    // The UDP port on the host: while another node exists, and only then.
    if (!config.publicIP) return say("this host has no address besides loopback: the other nodes cannot reach this one's pods");
    try {
      const spec = overlayPortSpec({ ...config, publicIP: config.publicIP });
      const current = (await rt.rootlesskit.listPorts()).filter((p) => sameSpec(p.spec, spec));
      if (peers.length && !current.length) {
        await rt.rootlesskit.addPort(spec);
        rt.log(`published ${describePortSpec(spec)} (the overlay: ${peers.map((p) => p.node).join(", ")})`);
      } else if (!peers.length) {
        for (const p of current) {
          await rt.rootlesskit.removePort(p.id);
          rt.log(`unpublished ${describePortSpec(p.spec)}: no other node`);
        }
      }
    } catch (e) {
      if (!(e instanceof RootlessKitError)) throw e;
      say(`${e.message}; trying again every ${timing.resyncMs / 1000} s`);
    }
  };

  const loop = passLoop(pass, {
    signal,
    timing,
    log: (l) => rt.log(l),
    // What a pass did not say again has ended: it is said anew if it comes back.
    afterPass: () => {
      for (const line of said) if (!saying.has(line)) said.delete(line);
      for (const line of saying) said.add(line);
      saying = new Set();
    },
  });
  const nodes = new Informer<OverlayNode>("Nodes", "/api/v1/nodes", "", rt, timing, loop.changed);
  rt.log(
    `the pod network across nodes: ${config.device} (VNI ${config.vni}, UDP ${config.port}), this host's address ${config.publicIP ?? "(none)"}`,
  );
  await loop.run([nodes.run(signal)]);
}

// ---------------------------------------------------------------------------------------------
// Start-up: the config the plan rendered, the real clients.

/** Reads and checks config/overlay.json (cli/render/overlay.ts writes it); a bad one is refused in one line. */
export async function readOverlayConfig(file: string): Promise<OverlayConfig> {
  const fix = "re-run `rootless-k8s install` (or `join`), which writes it";
  const c = await readConfigFile<OverlayConfig>(file, "overlay", fix);
  const strings = ["kubeconfig", "rootlesskitSocket", "nodeName", "device", "pods", "childIP", "stateFile"] as const;
  const numbers = ["vni", "port", "mtu", "probePort"] as const;
  refuseBadFields(
    file,
    "overlay",
    [
      ...strings.filter((k) => typeof c[k] !== "string" || !c[k]),
      ...numbers.filter((k) => !Number.isInteger(c[k])),
      ...(c.publicIP === null || typeof c.publicIP === "string" ? [] : ["publicIP"]),
    ],
    fix,
  );
  return c as OverlayConfig;
}

/** `rootless-k8s overlay run`: the loop with the real clients, until the signal (SIGTERM) stops it. */
export async function overlayRun(configFile: string, log: (line: string) => void, signal: AbortSignal): Promise<void> {
  const config = await readOverlayConfig(configFile);
  const api = await followingApiClient(config.kubeconfig, log, signal);
  const rootlesskit = rootlessKitClient(config.rootlesskitSocket);
  await runOverlayAgent(
    config,
    { api, rootlesskit, run: (argv) => runCommand(argv), writeFile: (f, t) => fsp.writeFile(f, t), log, probe: (h, p) => tcpProbe(h, p) },
    signal,
  );
}

export type { LoopTiming };
