// `rootless-k8s doctor --node`: checks on the node as it runs, which only an installed node can
// answer. The owner unit's cgroup and its subtree_control (delegated mode), the snapshotter the
// runtime really uses, the published ports answering from the host, the units, readiness, linger.
import { promises as fsp } from "node:fs";
import type { CheckResult, Status } from "../doctor/check";
import { delegateFix, lingerFix } from "../doctor/fixes";
import type { Plan } from "../plan/plan";
import type { Context } from "../context";
import { ExitCode } from "../errors";
import { criClient } from "../apply/cri";
import { apiClient, readKubeconfig } from "../apply/readiness";
import { requireReceipt } from "../apply/receipt";
import { nodeStatus, type NodeStatus } from "./status";
import { systemdUser, type SystemdUser } from "../apply/systemd";

export interface NodeCheckOutcome extends CheckResult {
  id: string;
  label: string;
}

const REQUIRED_CONTROLLERS = ["cpu", "memory", "pids"];

const result = (status: Status, summary: string, fix: CheckResult["fix"] = null, details?: string[]): CheckResult => ({ status, summary, fix, ...(details ? { details } : {}) });

/** The owner's cgroup (from its main pid) must have cpu, memory and pids, and pass them down. */
export async function checkOwnerCgroup(plan: Plan, systemd: SystemdUser, root = "/"): Promise<CheckResult> {
  if (plan.mode.name !== "delegated") return result("skip", "mode none: the node makes no cgroup writes, by design");
  // The unit's own cgroup: RootlessKit moves its processes to a leaf below it (--evacuate-cgroup2),
  // and the unit's cgroup passes the controllers down to the node's.
  const r = await systemd.run(["show", "-p", "ControlGroup", "--value", plan.units.owner]);
  const rel = r.code === 0 ? r.stdout.trim() : "";
  if (!rel) return result("fail", `${plan.units.owner} has no cgroup (is it running?)`, { root: [], user: [`systemctl --user start ${plan.units.target}`] });
  if (!(await fsp.stat(`${root}sys/fs/cgroup/cgroup.controllers`).catch(() => null))) return result("fail", "the host has no cgroup v2 hierarchy at /sys/fs/cgroup");
  const dir = `${root}sys/fs/cgroup${rel}`;
  const read = (f: string) => fsp.readFile(`${dir}/${f}`, "utf8").then((t) => t.trim().split(/\s+/).filter(Boolean), () => null);
  const [controllers, subtree] = await Promise.all([read("cgroup.controllers"), read("cgroup.subtree_control")]);
  const missing = REQUIRED_CONTROLLERS.filter((c) => !controllers?.includes(c));
  const fixDelegate = { root: delegateFix(null), user: ["# then log out and in again, and: rootless-k8s install"] };
  if (missing.length) return result("fail", `${rel} lacks ${missing.join(", ")} (has: ${controllers?.join(" ") || "none"})`, fixDelegate);
  const notPassed = REQUIRED_CONTROLLERS.filter((c) => !subtree?.includes(c));
  if (notPassed.length) {
    return result("fail", `${rel}/cgroup.subtree_control lacks ${notPassed.join(", ")}: the kubelet cannot create pod cgroups`, { root: [], user: [`systemctl --user restart ${plan.units.owner}   # RootlessKit's --evacuate-cgroup2 enables them at start`] });
  }
  return result("ok", `${rel}: controllers ${controllers!.join(" ")}, subtree_control ${subtree!.join(" ")}`);
}

/** The snapshotter the runtime reports (CRI Status, verbose) against the plan's. */
export async function checkSnapshotter(plan: Plan): Promise<CheckResult> {
  const want = plan.runtime.snapshotter?.name;
  if (!want) return result("skip", `${plan.runtime.name}: the storage driver is the runtime's own choice`);
  const c = criClient(plan.runtime.criSocket, 5000);
  try {
    const { info } = await c.status(true);
    const config = info.config ? (JSON.parse(info.config) as { containerd?: { snapshotter?: string }; snapshotter?: string }) : null;
    const used = config?.containerd?.snapshotter ?? config?.snapshotter ?? null;
    if (!used) return result("warn", `${plan.runtime.name} does not report its snapshotter (planned: ${want})`);
    if (used !== want) return result("fail", `${plan.runtime.name} uses ${used}, the plan says ${want}`, { root: [], user: ["rootless-k8s install   # rewrites the runtime's config and restarts it"] });
    return result("ok", `${plan.runtime.name} uses ${used}, as planned`);
  } catch (e) {
    return result("fail", `the runtime does not answer CRI on ${plan.runtime.criSocket}: ${(e as Error).message}`, { root: [], user: [`rootless-k8s logs rootlesskit`] });
  } finally {
    c.close();
  }
}

/** Every published port answers from the host: a TLS handshake with the admin cert and /readyz. */
export async function checkPorts(plan: Plan): Promise<CheckResult> {
  const creds = await readKubeconfig(plan.paths.adminKubeconfig).catch(() => null);
  if (!creds) return result("fail", `cannot read ${plan.paths.adminKubeconfig}`, { root: [], user: ["rootless-k8s install"] });
  const lines: string[] = [];
  let bad = 0;
  for (const p of plan.network.published) {
    const host = p.hostIP === "0.0.0.0" ? "127.0.0.1" : p.hostIP;
    const client = apiClient({ ...creds, server: `https://${host}:${p.hostPort}` });
    try {
      const r = await client.get("/readyz", 3000);
      lines.push(`${host}:${p.hostPort} → ${p.namespacePort}: HTTP ${r.status}`);
      if (r.status !== 200) bad++;
    } catch (e) {
      bad++;
      lines.push(`${host}:${p.hostPort} → ${p.namespacePort}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  if (!plan.network.published.length) return result("skip", "no port is published");
  return bad
    ? result("fail", `${bad} of ${plan.network.published.length} published ports do not answer: ${lines.join("; ")}`, { root: [], user: [`rootless-k8s logs rootlesskit   # the port driver`, `systemctl --user restart ${plan.units.owner}`] })
    : result("ok", lines.join("; "));
}

export async function checkLinger(plan: Plan): Promise<CheckResult> {
  const on = await fsp.stat(`/var/lib/systemd/linger/${plan.user.name}`).then(() => true, () => false);
  return on
    ? result("ok", `linger is on: the node keeps running after ${plan.user.name} logs out, and starts at boot`)
    : result("warn", `linger is off: the node stops when ${plan.user.name}'s last session ends, and does not start at boot`, { root: [lingerFix(plan.user.name)], user: [] });
}

function fromStatus(st: NodeStatus): NodeCheckOutcome[] {
  const down = st.units.filter((u) => u.activeState !== "active");
  const node = st.nodeView;
  return [
    { id: "node-units", label: "units", ...(down.length ? result("fail", `${down.map((u) => `${u.unit} ${u.activeState}`).join(", ")}`, { root: [], user: ["rootless-k8s logs", "systemctl --user start rootless-k8s.target"] }) : result("ok", `${st.units.length} units active`)) },
    {
      id: "node-ready",
      label: "readiness",
      ...(st.api.ready && node?.ready ? result("ok", `API server ready, node ${st.node} Ready`) : result("fail", st.problems.filter((p) => /API|node|Ready/.test(p)).join("; ") || "not ready", { root: [], user: ["rootless-k8s status", "rootless-k8s logs kubelet"] })),
    },
  ];
}

export async function nodeChecks(receipt: Awaited<ReturnType<typeof requireReceipt>>, env: NodeJS.ProcessEnv): Promise<NodeCheckOutcome[]> {
  const plan = receipt.plan;
  const systemd = systemdUser({ env });
  const st = await nodeStatus(receipt, env, systemd);
  const [cgroup, snap, ports, linger] = await Promise.all([checkOwnerCgroup(plan, systemd), checkSnapshotter(plan), checkPorts(plan), checkLinger(plan)]);
  return [
    ...fromStatus(st),
    { id: "node-cgroup", label: "owner cgroup", ...cgroup },
    { id: "node-snapshotter", label: "snapshotter in use", ...snap },
    { id: "node-ports", label: "published ports", ...ports },
    { id: "node-linger", label: "linger", ...linger },
  ];
}

/** `doctor --node`: exit 0 when nothing failed (warnings allowed), 1 otherwise. */
export async function nodeDoctor(ctx: Context, opts: { json: boolean; prefix?: string }): Promise<number> {
  const receipt = await requireReceipt(ctx.env, opts.prefix);
  const checks = await nodeChecks(receipt, ctx.env);
  const failed = checks.some((c) => c.status === "fail");
  if (opts.json) {
    ctx.out.out(JSON.stringify({ schemaVersion: 1, node: receipt.plan.node.name, mode: receipt.plan.mode.name, healthy: !failed, checks }, null, 2));
  } else {
    const s = ctx.out.style;
    const paint: Record<Status, (x: string) => string> = { ok: s.green, warn: s.yellow, fail: s.red, skip: s.dim };
    ctx.out.out(s.bold(`Node ${receipt.plan.node.name} (mode ${receipt.plan.mode.name})`));
    for (const c of checks) {
      ctx.out.out(`  ${paint[c.status](c.status.padEnd(4))}  ${c.label.padEnd(19)} ${c.summary}`);
      for (const l of c.fix?.root ?? []) ctx.out.out(`        fix (as root): ${l}`);
      for (const l of c.fix?.user ?? []) ctx.out.out(`        fix: ${l}`);
    }
  }
  return failed ? ExitCode.Failure : ExitCode.Ok;
}
