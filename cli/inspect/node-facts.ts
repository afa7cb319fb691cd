// What `doctor --node` judges (cli/doctor/checks/node.ts), read from the node as it runs: the
// units and readiness (as `status` reads them), the owner unit's cgroup files, the snapshotter the
// runtime reports over CRI, /readyz through every published port, and the linger flag. Changes nothing.
import { ANSWER_MS } from "./answer";
import { promises as fsp } from "node:fs";
import { serviceManager } from "../clients/supervisor";
import { selfCommand } from "../self-command";
import type { NodeFacts } from "../doctor/checks/node";
import type { Plan } from "../plan/plan";
import { criClient } from "../clients/cri";
import { apiClient, readKubeconfig } from "../clients/kubernetes";
import type { Receipt } from "../apply/receipt";
import type { SystemdUser } from "../clients/systemd";
import { nodeStatus } from "./status";

export async function nodeFacts(receipt: Receipt & { plan: Plan }, env: NodeJS.ProcessEnv, root = "/"): Promise<NodeFacts> {
  const plan = receipt.plan;
  const systemd = serviceManager(plan, { env, self: selfCommand() });
  const [st, ownerCgroup, snapshotter, ports, linger] = await Promise.all([
    nodeStatus(receipt, env, systemd),
    plan.mode.name === "delegated" ? readOwnerCgroup(plan, systemd, root) : null,
    readSnapshotter(plan),
    askPorts(plan),
    fsp.stat(`/var/lib/systemd/linger/${plan.user.name}`).then(
      () => true,
      () => false,
    ),
  ]);
  return {
    user: plan.user.name,
    node: plan.node.name,
    mode: plan.mode.name,
    units: { owner: plan.units.owner, target: plan.units.target, states: st.units, waiting: st.waitingForNodes },
    ready: { api: st.api.ready, node: st.nodeView?.ready === true, problems: st.problems },
    ownerCgroup,
    snapshotter,
    ports,
    nodePorts: st.nodePorts,
    clientAddress: plan.publish?.enabled
      ? { keeps: plan.publish.keepsSourceIP, reasons: plan.publish.reasons.filter((r) => /^(TCP|UDP): /.test(r)) }
      : null,
    linger,
    eviction: st.eviction ? { ...st.eviction, expected: plan.kubelet.localStorageCapacityIsolation } : null,
  };
}

/** The owner unit's cgroup (from systemd), with its controllers and subtree_control. */
async function readOwnerCgroup(plan: Plan, systemd: SystemdUser, root: string): Promise<NodeFacts["ownerCgroup"]> {
  const r = await systemd.run(["show", "-p", "ControlGroup", "--value", plan.units.owner]);
  const path = r.code === 0 ? r.stdout.trim() || null : null;
  const v2 = !!(await fsp.stat(`${root}sys/fs/cgroup/cgroup.controllers`).catch(() => null));
  if (!path || !v2) return { path, v2, controllers: null, subtreeControl: null };
  const read = (f: string) =>
    fsp.readFile(`${root}sys/fs/cgroup${path}/${f}`, "utf8").then(
      (t) => t.trim().split(/\s+/).filter(Boolean),
      () => null,
    );
  const [controllers, subtreeControl] = await Promise.all([read("cgroup.controllers"), read("cgroup.subtree_control")]);
  return { path, v2, controllers, subtreeControl };
}

/** The snapshotter the runtime reports (CRI Status, verbose), asked only when the plan chose one. */
async function readSnapshotter(plan: Plan): Promise<NodeFacts["snapshotter"]> {
  const base = {
    runtime: plan.runtime.name,
    criSocket: plan.runtime.criSocket,
    planned: plan.runtime.snapshotter?.name ?? null,
    used: null,
    error: null,
  };
  if (!base.planned) return base;
  const c = criClient(plan.runtime.criSocket, 5000);
  try {
    const { info } = await c.status(true);
    const config = info.config ? (JSON.parse(info.config) as { containerd?: { snapshotter?: string }; snapshotter?: string }) : null;
    return { ...base, used: config?.containerd?.snapshotter ?? config?.snapshotter ?? null };
  } catch (e) {
    return { ...base, error: (e as Error).message };
  } finally {
    c.close();
  }
}

/** Every published port asked for /readyz from the host: a TLS handshake with the admin certificate. */
async function askPorts(plan: Plan): Promise<NodeFacts["ports"]> {
  const kubeconfig = plan.paths.adminKubeconfig;
  const creds = await readKubeconfig(kubeconfig).catch(() => null);
  if (!creds) return { kubeconfig, answers: null };
  const answers = [];
  for (const p of plan.network.published) {
    const host = p.hostIP === "0.0.0.0" ? "127.0.0.1" : p.hostIP;
    const client = apiClient({ ...creds, server: `https://${host}:${p.hostPort}` });
    try {
      const r = await client.get("/readyz", ANSWER_MS);
      answers.push({ host, hostPort: p.hostPort, namespacePort: p.namespacePort, status: r.status, error: null });
    } catch (e) {
      answers.push({
        host,
        hostPort: p.hostPort,
        namespacePort: p.namespacePort,
        status: null,
        error: (e as NodeJS.ErrnoException).code ?? (e as Error).message,
      });
    }
  }
  return { kubeconfig, answers };
}
