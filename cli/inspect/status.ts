// The state of the installed node, read without changing anything: the receipt (what was
// installed), systemd (what runs), the API (readiness and the node's conditions) and the runtime
// (answering CRI). `status` prints it; `doctor --node` and upgrade build on it.
import { ANSWER_MS } from "./answer";
import { nodePortsOf, rangeText } from "../plan/node-ports";
import { supervisorOf, type SupervisorKind } from "../plan/supervisor";
import { serviceManager } from "../clients/supervisor";
import { selfCommand } from "../self-command";
import { workerClient } from "../apply/worker-ready";
import type { Plan } from "../plan/plan";
import { startOrder } from "../apply/node";
import { isStopped } from "../readiness/watch";
import { criClient } from "../clients/cri";
import { apiClient, parseNode, readKubeconfig, type NodeView } from "../clients/kubernetes";
import type { Receipt } from "../apply/receipt";
import { awaitingNodes } from "../apply/admits-nodes";
import { waitsForNodes } from "../doctor/checks/node";
import { addonReadiness, type AddonReadiness } from "../apply/addons";
import type { SystemdUser, UnitState } from "../clients/systemd";
import { portsStatus, type PortsStatus } from "./ports-status";
import { readOverlayState } from "../apply/worker-ready";
import type { OverlayStateFile } from "../plan/overlay";
import { evictionStatus, type EvictionStatus } from "./eviction-status";
import { networkPolicyView, readNetworkPolicyState, type NetworkPolicyStatus } from "./netpol-status";
import { localHost } from "../host/host";
import type { UserLimitFacts } from "../host/facts";
import { userLimitFacts } from "../host/probes/limits";

export interface NodeStatus {
  schemaVersion: 1;
  healthy: boolean;
  /** No unit of the node runs (each inactive or failed): stopped on purpose, or never started. */
  stopped: boolean;
  /** One line per thing that is wrong. */
  problems: string[];
  state: Receipt["state"];
  failedStep: string | null;
  node: string;
  mode: string;
  runtime: { name: string; version: string; cri: { answering: boolean; version: string | null; detail: string | null } };
  versions: { set: string | null; previous: string | null; components: Record<string, string> };
  api: { url: string; ready: boolean; detail: string };
  nodeView: NodeView | null;
  /** Whether the kubelet's eviction manager observes the node (its summary API); null on a worker or without an answer. */
  eviction: EvictionStatus | null;
  /** Each add-on that is on, and whether it runs (not part of `healthy`: the node works without). */
  addons: AddonReadiness[];
  /** The ports the plan publishes itself (the API server's; with pasta every node port). */
  ports: Plan["network"]["published"];
  /** Services' and pods' ports: each published one with its owner, each one not published with why. */
  publishing: PortsStatus;
  /** The range Services' NodePorts come from ("30000-32767"); null on a worker (its control plane's). */
  nodePorts: string | null;
  /** What the user holds now of the per-user limits a full node meets (doctor's pod-limits); null when not read. */
  limits: UserLimitFacts | null;
  /** The overlay agent's last pass: the other nodes and whether each answered through it; null without an overlay or state. */
  overlay: OverlayStateFile | null;
  /** Whether NetworkPolicies are enforced on this node, and with what, or why not. */
  networkPolicy: NetworkPolicyStatus;
  units: Pick<UnitState, "unit" | "activeState" | "subState" | "result" | "mainPid" | "nRestarts">[];
  /** The on-demand units that wait for the node to admit another node (`token create`), not a problem while they do. */
  waitingForNodes: string[];
  logs: { to: "journal" | "file"; where: string };
  /** What runs the services: the user's systemd, or `rootless-k8s up` (cli/plan/supervisor.ts). */
  supervisor: SupervisorKind;
}

export async function nodeStatus(
  receipt: Receipt & { plan: Plan },
  env: NodeJS.ProcessEnv,
  systemd: SystemdUser = serviceManager(receipt.plan, { env, self: selfCommand() }),
): Promise<NodeStatus> {
  const plan = receipt.plan;
  const problems: string[] = [];
  if (receipt.state !== "installed")
    problems.push(
      `the last install or upgrade did not finish (state ${receipt.state}${receipt.failedStep ? `, step "${receipt.failedStep}"` : ""}): re-run it`,
    );
  const units = await Promise.all([plan.units.target, ...startOrder(plan)].map((u) => systemd.state(u)));
  // A stopped node is one line and its fix, not a line for each unit and peer that does not answer.
  if (isStopped(units)) return stoppedStatus(receipt, units, problems);
  const waiting = await awaitingNodes(plan);
  for (const u of units)
    if (u.activeState !== "active" && !waitsForNodes(u, waiting))
      problems.push(`${u.unit} is ${u.activeState} (${u.subState}${u.result !== "success" ? `, ${u.result}` : ""})`);

  const api = { url: "", ready: false, detail: "" };
  let nodeView: NodeView | null = null;
  let eviction: EvictionStatus | null = null;
  let addons: AddonReadiness[] = [];
  try {
    // A worker sees its control plane with the node's own credential (it holds no admin one).
    const client = plan.role === "worker" ? await workerClient(plan) : apiClient(await readKubeconfig(plan.paths.adminKubeconfig));
    if (!client) throw new Error("the kubelet has no certificate yet (TLS bootstrap did not finish)");
    api.url = client.server;
    const r = await client.get("/readyz", ANSWER_MS);
    api.ready = r.status === 200;
    api.detail = api.ready ? "/readyz ok" : `/readyz HTTP ${r.status}: ${r.body.trim().split("\n").slice(-2).join(" ")}`;
    if (api.ready) {
      const n = await client.get(`/api/v1/nodes/${encodeURIComponent(plan.node.name)}`, ANSWER_MS);
      if (n.status === 200) nodeView = parseNode(n.body);
      else problems.push(`the node ${plan.node.name} is not registered (HTTP ${n.status})`);
      if (plan.role !== "worker") addons = await addonReadiness(client, plan);
      // A worker's own credential may not read its kubelet's summary (nodes/proxy).
      if (nodeView && plan.role !== "worker") eviction = await evictionStatus(client, plan.node.name);
    }
  } catch (e) {
    api.detail = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  }
  if (!api.ready) problems.push(`the API server is not ready (${api.detail})`);
  if (nodeView && !nodeView.ready) {
    const c = nodeView.conditions.find((x) => x.type === "Ready");
    problems.push(`the node is not Ready (${c ? `${c.reason ?? c.status}: ${c.message ?? ""}` : "no Ready condition"})`);
  }

  const cri = { answering: false, version: null as string | null, detail: null as string | null };
  if (plan.runtime.name !== "docker" || plan.runtime.criSocket) {
    const c = criClient(plan.runtime.criSocket, ANSWER_MS);
    try {
      const v = await c.version();
      cri.answering = true;
      cri.version = `${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion})`;
    } catch (e) {
      cri.detail = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      problems.push(`the runtime does not answer CRI on ${plan.runtime.criSocket} (${cri.detail})`);
    } finally {
      c.close();
    }
  }

  const publishing = await portsStatus(plan);
  const overlay = plan.overlay?.enabled ? await readOverlayState(plan) : null;
  for (const p of overlay?.peers ?? [])
    if (!p.reachable)
      problems.push(
        `pods do not reach node ${p.node}'s pods through the overlay (${p.vtep}, host ${p.publicIP}: ${p.error}): open UDP ${plan.overlay?.port} both ways between the hosts`,
      );

  const networkPolicy = networkPolicyView(
    plan,
    units.find((u) => u.unit === plan.units.networkPolicy) ?? null,
    await readNetworkPolicyState(plan),
  );
  if (networkPolicy.problem) problems.push(`NetworkPolicies are not enforced: ${networkPolicy.detail}`);

  return {
    schemaVersion: 1,
    healthy: problems.length === 0,
    stopped: false,
    problems,
    state: receipt.state,
    failedStep: receipt.failedStep ?? null,
    node: plan.node.name,
    mode: plan.mode.name,
    runtime: { name: plan.runtime.name, version: plan.runtime.version, cri },
    versions: { set: receipt.current, previous: receipt.previous, components: { ...plan.versions.components } },
    api,
    nodeView,
    eviction,
    addons,
    ports: plan.network.published,
    publishing,
    nodePorts: nodePortWords(plan),
    limits: await userLimits(plan),
    overlay,
    networkPolicy,
    ...unitsAndLogs(plan, units),
    waitingForNodes: waiting,
  };
}

/** The status of a node none of whose units runs: what was installed, and how to start it. */
function stoppedStatus(receipt: Receipt & { plan: Plan }, units: UnitState[], problems: string[]): NodeStatus {
  const plan = receipt.plan;
  const failed = units.filter((u) => u.activeState === "failed").map((u) => `${u.unit} (${u.result})`);
  return {
    schemaVersion: 1,
    healthy: false,
    stopped: true,
    problems: [
      ...problems,
      `the node is stopped${failed.length ? `; failed before it stopped: ${failed.join(", ")}` : ""}: start it with \`rootless-k8s start\``,
    ],
    state: receipt.state,
    failedStep: receipt.failedStep ?? null,
    node: plan.node.name,
    mode: plan.mode.name,
    runtime: { name: plan.runtime.name, version: plan.runtime.version, cri: { answering: false, version: null, detail: "stopped" } },
    versions: { set: receipt.current, previous: receipt.previous, components: { ...plan.versions.components } },
    api: { url: "", ready: false, detail: "stopped" },
    nodeView: null,
    eviction: null,
    addons: [],
    ports: plan.network.published,
    publishing: { publisher: null, published: null, unpublished: [], updated: null, detail: "stopped" },
    nodePorts: nodePortWords(plan),
    limits: null,
    overlay: null,
    networkPolicy: { enforced: false, detail: "the node is stopped", problem: false },
    ...unitsAndLogs(plan, units),
    waitingForNodes: [],
  };
}

/** The user's keys and threads against their limits, read as doctor reads them (host/probes/limits.ts). */
async function userLimits(plan: Plan): Promise<UserLimitFacts | null> {
  const user = { name: plan.user.name, uid: plan.user.uid, gid: plan.user.gid, home: null, other: false };
  return userLimitFacts({ host: localHost(), user }).catch(() => null);
}

function nodePortWords(plan: Plan): string | null {
  return plan.role === "worker" ? null : rangeText(nodePortsOf(plan));
}

/** The units' states and where their logs are: the same for a running and a stopped node. */
function unitsAndLogs(plan: Plan, units: UnitState[]): Pick<NodeStatus, "units" | "logs" | "supervisor"> {
  return {
    supervisor: supervisorOf(plan),
    units: units.map(({ unit, activeState, subState, result, mainPid, nRestarts }) => ({
      unit,
      activeState,
      subState,
      result,
      mainPid,
      nRestarts,
    })),
    logs: plan.logging.to === "file" ? { to: "file", where: plan.paths.logDir } : { to: "journal", where: "journalctl --user" },
  };
}
