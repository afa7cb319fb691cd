// The NetworkPolicy enforcer's loop (`rootless-k8s netpol run`, rootless-k8s-netpol.service, inside
// the node's namespaces): it watches the cluster's pods, Namespaces and NetworkPolicies with the
// kubelet's credential and keeps the rules for this node's pods at exactly what
// cli/plan/netpol-rules.ts compiles from them, one transaction per change (iptables-restore, or nft).
// Fail closed: rules that iptables refuses leave the selected pods isolated with nothing allowed
// (an Event on each policy says so), and a stop leaves the last rules in place (the next start
// replaces them); only a pass that could not read the cluster yet changes nothing.
// What it enforces, or why not, goes to the state file `status` reads.
import { promises as fsp } from "node:fs";
import { messageOf } from "../errors";
import {
  type CompiledRules,
  type NamespaceObject,
  type NetworkPolicyObject,
  type PodObject,
  type PolicyProblem,
  compileNetworkPolicies,
} from "../plan/netpol-rules";
import { parseSavedFilter, removalText, restoreText } from "../plan/netpol-iptables";
import { nftRemovalText, nftText } from "../plan/netpol-nftables";
import type { NetworkPolicyBackend } from "../plan/network-policy";
import type { NetworkPolicyConfig } from "../render/network-policy";
import { warningEvent } from "../render/kube-objects";
import { writeFileAtomic } from "../apply/files";
import { DEFAULT_TIMING, Informer, type LoopTiming, passLoop } from "../clients/informer";
import { type ApiClient, apiMessage, followingApiClient } from "../clients/kubernetes";
import { type CommandResult, runCommand } from "./command";
import { readConfigFile, refuseBadFields } from "./config-file";

export const COMPONENT = "rootless-k8s-netpol";
/** The sysctl br_netfilter makes per network namespace: 1 sends bridged packets through iptables. */
export const BRIDGE_SYSCTL = "/proc/sys/net/bridge/bridge-nf-call-iptables";

/** What the last pass did (the runtime folder's netpol-state.json, read by `status`). */
export interface NetworkPolicyState {
  schemaVersion: 1;
  updated: string;
  /** The rules of the last pass are in place. */
  enforced: boolean;
  /** Why not (enforced false), or what holds back part of it (a rule iptables refused: its pods allow nothing). */
  why: string | null;
  policies: number;
  isolated: { ingress: number; egress: number };
  rules: number;
  /** Parts of policies that match nothing (each also an Event on its policy). */
  problems: PolicyProblem[];
}

export interface NetworkPolicyRuntime {
  api: ApiClient;
  /** Runs a command in the node's namespace, with `input` on its standard input; never throws. */
  run(argv: string[], input?: string): Promise<CommandResult>;
  readText(file: string): Promise<string | null>;
  writeText(file: string, text: string): Promise<void>;
  writeState(file: string, text: string): Promise<void>;
  log(line: string): void;
  now?: () => Date;
}

const firstLine = (r: CommandResult) => (r.stderr || r.stdout).trim().split("\n")[0] ?? `exit ${r.code}`;

/** Writes compiled rules into the namespace, and takes them out: one per back end. */
export interface RuleWriter {
  /** null once the rules are in place, else what refused them. */
  apply(compiled: CompiledRules): Promise<string | null>;
  remove(): Promise<string | null>;
}

/** iptables: read the filter table, then one iptables-restore --noflush (skipped when it would change nothing). */
export function iptablesWriter(rt: Pick<NetworkPolicyRuntime, "run">): RuleWriter {
  let lastText = "";
  const save = () => rt.run(["iptables-save", "-t", "filter"]);
  return {
    async apply(compiled) {
      const saved = await save();
      if (saved.code !== 0) return `iptables-save failed: ${firstLine(saved)}`;
      const text = restoreText(compiled, parseSavedFilter(saved.stdout));
      if (text === lastText) return null;
      const r = await rt.run(["iptables-restore", "-w", "5", "--noflush"], text);
      if (r.code !== 0) return `iptables-restore refused the rules: ${firstLine(r)}`;
      lastText = text;
      return null;
    },
    async remove() {
      const saved = await save();
      const ours = parseSavedFilter(saved.stdout);
      if (saved.code !== 0 || !ours.chains.length) return null;
      const r = await rt.run(["iptables-restore", "-w", "5", "--noflush"], removalText(ours));
      return r.code === 0 ? null : firstLine(r);
    },
  };
}

/** nftables: our own table, replaced whole in one `nft -f -` transaction every pass (which also repairs it). */
export function nftablesWriter(rt: Pick<NetworkPolicyRuntime, "run">): RuleWriter {
  return {
    async apply(compiled) {
      const r = await rt.run(["nft", "-f", "-"], nftText(compiled));
      return r.code === 0 ? null : `nft refused the rules: ${firstLine(r)}`;
    },
    async remove() {
      const r = await rt.run(["nft", "-f", "-"], nftRemovalText());
      return r.code === 0 ? null : firstLine(r);
    },
  };
}

export function ruleWriter(backend: NetworkPolicyBackend, rt: Pick<NetworkPolicyRuntime, "run">): RuleWriter {
  return backend === "nftables" ? nftablesWriter(rt) : iptablesWriter(rt);
}

/** Bridged packets pass iptables in this namespace: the sysctl is 1, or is made 1; else why not. */
export async function bridgeThroughIptables(rt: Pick<NetworkPolicyRuntime, "readText" | "writeText">): Promise<string | null> {
  const v = (await rt.readText(BRIDGE_SYSCTL))?.trim();
  if (v === undefined)
    return "br_netfilter is not loaded (no net.bridge.bridge-nf-call-iptables): packets between two pods on the node's bridge skip iptables";
  if (v === "1") return null;
  try {
    await rt.writeText(BRIDGE_SYSCTL, "1\n");
    return null;
  } catch (e) {
    return `net.bridge.bridge-nf-call-iptables is ${v} in the node's namespace and could not be set to 1 (${messageOf(e)})`;
  }
}

export async function runNetworkPolicyAgent(
  config: NetworkPolicyConfig,
  rt: NetworkPolicyRuntime,
  signal: AbortSignal,
  timing: LoopTiming = DEFAULT_TIMING,
): Promise<void> {
  const now = rt.now ?? (() => new Date());
  const writer = ruleWriter(config.backend, rt);
  let lastSummary = "";
  let lastWhy = "";
  let reported = new Set<string>();

  const writeState = async (s: Omit<NetworkPolicyState, "schemaVersion" | "updated">) => {
    const state: NetworkPolicyState = { schemaVersion: 1, updated: now().toISOString(), ...s };
    await rt
      .writeState(config.stateFile, `${JSON.stringify(state, null, 2)}\n`)
      .catch((e: unknown) => rt.log(`could not write ${config.stateFile}: ${messageOf(e)}`));
  };
  const say = (why: string) => {
    if (why !== lastWhy) rt.log(why);
    lastWhy = why;
  };

  /** One Event per problem of a policy, while it lasts. */
  const report = async (problems: PolicyProblem[], policies: Map<string, NetworkPolicyObject>) => {
    const still = new Set<string>();
    for (const p of problems) {
      const key = `${p.policy}|${p.message}`;
      const policy = policies.get(p.policy);
      if (!policy) continue;
      if (reported.has(key)) {
        still.add(key);
        continue;
      }
      rt.log(`NetworkPolicy ${p.policy}: ${p.message}`);
      const ev = warningEvent(
        { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: policy.metadata },
        { reason: "PolicyNotFullyEnforced", message: p.message, component: COMPONENT, nodeName: config.nodeName, now: now() },
      );
      const ns = encodeURIComponent(policy.metadata.namespace ?? "default");
      const r = await rt.api.post(`/api/v1/namespaces/${ns}/events`, ev, 10_000).catch((e: unknown) => ({ status: 0, body: messageOf(e) }));
      if (r.status === 201 || r.status === 200) still.add(key);
      else rt.log(`could not write the Event for NetworkPolicy ${p.policy}: HTTP ${r.status} ${apiMessage(r.body)}`);
    }
    reported = still;
  };

  const pass = async () => {
    if (!pods.synced || !namespaces.synced || !policies.synced) return;
    const bridge = await bridgeThroughIptables(rt);
    const input = {
      nodeName: config.nodeName,
      pods: [...pods.items.values()],
      namespaces: [...namespaces.items.values()],
      policies: [...policies.items.values()],
    };
    let compiled = compileNetworkPolicies(input);
    const refused = await writer.apply(compiled);
    let why = bridge;
    if (refused) {
      // Fail closed: the selected pods keep their isolation, with nothing allowed.
      const closed = compileNetworkPolicies(input, { denyOnly: true });
      const again = await writer.apply(closed);
      if (again) {
        say(`${refused}; and without allow rules: ${again}`);
        await writeState({
          enforced: false,
          why: refused,
          policies: compiled.policies,
          isolated: compiled.counts,
          rules: 0,
          problems: compiled.problems,
        });
        return;
      }
      compiled = {
        ...closed,
        problems: [
          ...compiled.problems,
          ...[...policies.items.keys()].map((policy) => ({
            policy,
            message: `${refused}: the pods it selects allow nothing until that is fixed`,
          })),
        ],
      };
      why = `${refused}: the pods that policies select allow nothing until that is fixed`;
    }
    if (why) say(why);
    else lastWhy = "";
    const summary = `${compiled.policies} NetworkPolicies: ${compiled.counts.ingress} of this node's pods isolated for ingress, ${compiled.counts.egress} for egress (${compiled.rules} ${config.backend} rules)`;
    if (summary !== lastSummary) rt.log(`enforcing ${summary}`);
    lastSummary = summary;
    await report(compiled.problems, policies.items);
    await writeState({
      enforced: bridge === null,
      why,
      policies: compiled.policies,
      isolated: compiled.counts,
      rules: compiled.rules,
      problems: compiled.problems,
    });
  };

  const loop = passLoop(pass, { signal, timing, log: (l) => rt.log(l) });
  const pods = new Informer<PodObject>("pods", "/api/v1/pods", "", rt, timing, loop.changed);
  const namespaces = new Informer<NamespaceObject>("Namespaces", "/api/v1/namespaces", "", rt, timing, loop.changed);
  const policies = new Informer<NetworkPolicyObject>(
    "NetworkPolicies",
    "/apis/networking.k8s.io/v1/networkpolicies",
    "",
    rt,
    timing,
    loop.changed,
  );
  rt.log(`enforcing NetworkPolicies for the pods of node ${config.nodeName}`);
  await loop.run([pods.run(signal), namespaces.run(signal), policies.run(signal)]);
}

// ---------------------------------------------------------------------------------------------
// Start-up: the config the plan rendered, the real clients.

export async function readNetworkPolicyConfig(file: string): Promise<NetworkPolicyConfig> {
  const fix = "re-run `rootless-k8s install` (or `join`), which writes it";
  const c = await readConfigFile<NetworkPolicyConfig>(file, "NetworkPolicy", fix);
  refuseBadFields(
    file,
    "NetworkPolicy",
    [
      ...(["kubeconfig", "nodeName", "stateFile"] as const).filter((k) => typeof c[k] !== "string" || !c[k]),
      ...(c.backend === "iptables" || c.backend === "nftables" ? [] : ["backend"]),
    ],
    fix,
  );
  return c as NetworkPolicyConfig;
}

/** The real runtime: the namespace's iptables or nft (the commands kube-proxy finds on PATH). */
export function namespaceRuntime(api: ApiClient, log: (line: string) => void): NetworkPolicyRuntime {
  return {
    api,
    run: (argv, input) => runCommand(argv, { timeoutMs: 30_000, input }),
    readText: (f) => fsp.readFile(f, "utf8").catch(() => null),
    writeText: (f, t) => fsp.writeFile(f, t),
    writeState: (f, t) => writeFileAtomic(f, t, { mode: 0o644 }),
    log,
  };
}

/** `rootless-k8s netpol remove`: every rule of ours out of this namespace (null when done, or nothing was there). */
export async function removeNetworkPolicyRules(backend: NetworkPolicyBackend, log: (line: string) => void): Promise<string | null> {
  const rt = { run: (argv: string[], input?: string) => runCommand(argv, { timeoutMs: 30_000, input }) };
  const failed = await ruleWriter(backend, rt).remove();
  if (!failed) log(`NetworkPolicy rules removed (${backend})`);
  return failed;
}

/** `rootless-k8s netpol run`: the loop with the real clients, until the signal (SIGTERM) stops it. */
export async function networkPolicyRun(configFile: string, log: (line: string) => void, signal: AbortSignal): Promise<void> {
  const config = await readNetworkPolicyConfig(configFile);
  const api = await followingApiClient(config.kubeconfig, log, signal);
  await runNetworkPolicyAgent(config, namespaceRuntime(api, log), signal);
  // A stop leaves the rules: the next start replaces them. A plan that turns enforcement off has
  // install remove them (cli/apply/network-policy.ts, `netpol remove`).
  log("stopping: the rules stay in place until the next start");
}
