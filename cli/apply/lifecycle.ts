// Day two (issue 41): `rootless-k8s start`, `stop` and `restart` of an installed node, through the
// user's systemd. start clears the failed state (and with it systemd's start count) of the node's
// units, starts the target and waits for Ready as install does; stop stops every unit in one
// transaction (systemd orders it in reverse of the start order) and returns once none is left
// running; restart is stop, then start. Each runs under the install lock, so it never races an
// install, upgrade or uninstall of the same user. The restarts an install or upgrade owed when it
// was cut short (the receipt's restartsOwed) are made by the next start, even of a running node.
import { unitsToRun } from "./admits-nodes";
import { supervisorOf } from "../plan/supervisor";
import { serviceManager } from "../clients/supervisor";
import { selfCommand } from "../self-command";
import { ExitCode, InterruptedError, UserError, refuseRoot } from "../errors";
import type { Context } from "../context";
import { acquireInstallLock } from "../fetch/index";
import type { Plan } from "../plan/plan";
import { createProgress, type Progress } from "../ui/progress";
import { allUnits } from "./node";
import { apiClient, readKubeconfig } from "../clients/kubernetes";
import { phaseWords, waitForReady } from "../readiness/readiness";
import { readReceipt, receiptLocation, requireReceipt, writeReceipt } from "./receipt";
import type { SystemdUser } from "../clients/systemd";
import { lostPortError, portsHeldByOthers } from "./port-claim";
import { describeUnitFailure, isStopped, unitProbe, unitStates, waitForUnitsActive } from "../readiness/watch";
import { markKubeletStopping } from "./node-object";
import { waitForWorkerReady, workerClient } from "./worker-ready";
import { bootstrapReadiness } from "./bootstrap-marker";

export interface LifecycleOptions {
  prefix?: string;
  timeoutSeconds: number;
}

interface Node {
  plan: Plan;
  systemd: SystemdUser;
  /** The receipt's file, and the restarts it owes (units that still run on files an earlier run replaced). */
  receiptFile: string;
  owed: string[];
}

async function openNode(ctx: Context, command: string, prefix?: string): Promise<Node> {
  refuseRoot(command);
  const receipt = await requireReceipt(ctx.env, prefix).catch((e: unknown) => {
    if (!(e instanceof UserError)) throw e;
    throw new UserError(e.message, { exitCode: ExitCode.Refused, fix: e.fix });
  });
  const plan = receipt.plan;
  const systemd = serviceManager(plan, { env: ctx.env, self: selfCommand() });
  await systemd.ensureReachable();
  return { plan, systemd, receiptFile: receiptLocation(ctx.env, prefix), owed: receipt.restartsOwed ?? [] };
}

async function underLock<T>(ctx: Context, command: string, fn: () => Promise<T>): Promise<T> {
  const lock = await acquireInstallLock({ env: ctx.env, purpose: `rootless-k8s ${command}` });
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}

export async function startNode(ctx: Context, o: LifecycleOptions): Promise<number> {
  const node = await openNode(ctx, "start", o.prefix);
  const states = await unitStates(node.systemd, await unitsToRun(node.plan));
  if (states.every((s) => s.activeState === "active") && node.owed.length === 0) {
    ctx.out.out(`The node ${node.plan.node.name} is already running (every unit active); \`rootless-k8s status\` shows its health.`);
    return ExitCode.Ok;
  }
  return underLock(ctx, "start", async () => {
    const progress = await createProgress(ctx.out);
    const ms = await start(ctx, node, progress, o.timeoutSeconds * 1000);
    ctx.out.out(`The node ${node.plan.node.name} is Ready: ${(ms / 1000).toFixed(1)} s from start.`);
    return ExitCode.Ok;
  });
}

export async function stopNode(ctx: Context, o: Pick<LifecycleOptions, "prefix">): Promise<number> {
  const node = await openNode(ctx, "stop", o.prefix);
  if (isStopped(await unitStates(node.systemd, allUnits(node.plan)))) {
    ctx.out.out(`The node ${node.plan.node.name} is already stopped; start it with \`rootless-k8s start\`.`);
    return ExitCode.Ok;
  }
  return underLock(ctx, "stop", async () => {
    const progress = await createProgress(ctx.out);
    const ms = await stop(node, progress);
    ctx.out.out(`The node ${node.plan.node.name} is stopped (${(ms / 1000).toFixed(1)} s); start it again with \`rootless-k8s start\`.`);
    return ExitCode.Ok;
  });
}

export async function restartNode(ctx: Context, o: LifecycleOptions): Promise<number> {
  const node = await openNode(ctx, "restart", o.prefix);
  return underLock(ctx, "restart", async () => {
    const progress = await createProgress(ctx.out);
    if (!isStopped(await unitStates(node.systemd, allUnits(node.plan)))) await stop(node, progress);
    const ms = await start(ctx, node, progress, o.timeoutSeconds * 1000);
    ctx.out.out(`The node ${node.plan.node.name} is Ready again: ${(ms / 1000).toFixed(1)} s from start.`);
    return ExitCode.Ok;
  });
}

/**
 * Stops every unit in one `systemctl --user stop` (systemd stops them in reverse of their After=
 * order, the namespace owner last) and checks that none runs afterwards. Returns the milliseconds it took.
 */
async function stop({ plan, systemd }: Node, progress: Progress): Promise<number> {
  const t0 = Date.now();
  await progress.step(
    "stop",
    `Stopping the node (${supervisorOf(plan) === "up" ? "rootless-k8s up" : "systemctl --user stop"})`,
    async (h) => {
      const units = allUnits(plan);
      // While the API server still answers: the Node is no longer Ready (node-object.ts).
      if ((await unitStates(systemd, [plan.units.kubelet]))[0]?.activeState === "active") {
        const client =
          plan.role === "worker" ? await workerClient(plan) : await readKubeconfig(plan.paths.adminKubeconfig).then(apiClient, () => null);
        if (client) await markKubeletStopping(client, plan.node.name);
      }
      await systemd.stop([...units].reverse());
      const after = await unitStates(systemd, units);
      const left = after.filter((s) => s.activeState !== "inactive" && s.activeState !== "failed");
      if (left.length)
        throw new UserError(`the node did not stop: ${left.map((s) => `${s.unit} is ${s.activeState}`).join(", ")}`, {
          fix:
            supervisorOf(plan) === "up"
              ? "see `rootless-k8s logs COMPONENT` and `rootless-k8s logs up`"
              : "see `rootless-k8s logs COMPONENT`; `systemctl --user kill --signal=KILL UNIT` ends one that hangs",
        });
      const failed = after.filter((s) => s.activeState === "failed");
      h.update(
        failed.length
          ? `stopped; ${failed.map((s) => (s.result === "timeout" ? `${s.unit} did not stop within its TimeoutStopSec and was killed` : `${s.unit} ended ${s.result}`)).join(", ")}`
          : `${units.length} units stopped, no process left`,
      );
    },
  );
  return Date.now() - t0;
}

/** reset-failed, start the target, wait for Ready and every unit active. Returns the milliseconds to Ready. */
async function start(ctx: Context, node: Node, progress: Progress, timeoutMs: number): Promise<number> {
  const { plan, systemd } = node;
  const t0 = Date.now();
  const order = await unitsToRun(plan);
  // Owed restarts (read again under the lock): of the units that run, those still on files an earlier run replaced.
  const owed = (await readReceipt(node.receiptFile))?.restartsOwed ?? [];
  const live = (s: { activeState: string }) => s.activeState === "active" || s.activeState === "activating";
  const restart = (await unitStates(systemd, owed)).filter(live).map((s) => s.unit);
  // A kubelet started now posts a new Ready; the one in the API may be from before the stop.
  const kubeletRunning = (await unitStates(systemd, [plan.units.kubelet]))[0]?.activeState === "active";
  const freshSince = kubeletRunning && !restart.includes(plan.units.kubelet) ? undefined : t0;
  try {
    await progress.step(
      "start",
      `Starting the node (${supervisorOf(plan) === "up" ? "rootless-k8s up --detach" : "systemctl --user start"})`,
      async (h) => {
        // Clears a unit's failed state and its start count, so an old failure never stops this start.
        await systemd.resetFailed(allUnits(plan));
        // The run that owes them may have written unit files too: the manager reads them first.
        if (owed.length) await systemd.daemonReload();
        if (restart.length) await systemd.restart(restart);
        await systemd.start([plan.units.target]);
        // Asked of the manager (what did not run starts now on the new files): no longer owed.
        if (owed.length) {
          const r = await readReceipt(node.receiptFile);
          const left = (r?.restartsOwed ?? []).filter((u) => !owed.includes(u));
          if (r) await writeReceipt(node.receiptFile, { ...r, restartsOwed: left.length ? left : undefined });
          h.update(restart.length ? `restarted ${restart.join(", ")}, which an unfinished run owed` : "started");
        }
      },
    );
    await progress.step("ready", `Waiting for the node to be Ready (up to ${Math.round(timeoutMs / 1000)} s)`, async (h) => {
      const probe = unitProbe(systemd, order);
      const w = { timeoutMs, signal: ctx.signal, probe, freshSince, onPhase: (p: string) => h.update(p) };
      const bootstrap = await bootstrapReadiness(plan);
      if (plan.role === "worker") await waitForWorkerReady(plan, w);
      else
        await waitForReady({
          client: apiClient(await readKubeconfig(plan.paths.adminKubeconfig)),
          nodeName: plan.node.name,
          readyz: bootstrap.readyz,
          // The API server and the kubelet that answer are the plan's (a start after an interrupted
          // upgrade may find the old ones), so the bootstrap recorded below is that version's.
          expectVersion: plan.versions.components.kubernetes,
          ...w,
          onPhase: (p) => h.update(phaseWords(p, plan.node.name)),
        });
      h.update("every unit active");
      await waitForUnitsActive(systemd, order, Math.max(1000, timeoutMs - (Date.now() - t0)), ctx.signal);
      await bootstrap.record();
    });
  } catch (e) {
    if (!(e instanceof InterruptedError) && !ctx.signal.aborted) {
      for (const l of await describeUnitFailure(systemd, order, e)) ctx.out.err(l);
      // A port another user took while the node was stopped: say so, and how to move on.
      const [lost] = await portsHeldByOthers(plan).catch(() => []);
      if (lost) throw lostPortError(plan, lost);
    }
    throw e;
  }
  return Date.now() - t0;
}
