// `rootless-k8s up` of an installed node whose plan runs under the tool's own supervisor
// (cli/plan/supervisor.ts): in the foreground until Ctrl-C or SIGTERM, which stop every service in
// reverse order and leave no process behind; `--detach --no-wait` starts that same supervisor in a
// session of its own, with its output in its log, and returns once it answers on its socket.
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import * as path from "node:path";
import type { Context } from "../context";
import { ExitCode, UserError, refuseRoot } from "../errors";
import { requireReceipt } from "../apply/receipt";
import { ensureRuntimeDir } from "../apply/runtime-dir";
import { upCall, UP_API } from "../clients/supervisor";
import { lastLogLines } from "../clients/systemd";
import { apiClient, readKubeconfig } from "../clients/kubernetes";
import { waitForReady } from "../readiness/readiness";
import type { Plan } from "../plan/plan";
import { supervisorOf, upPaths } from "../plan/supervisor";
import { selfCommand } from "../self-command";
import { alreadyRunning, claimPidFile, isSupervisor, readPid } from "./pid-file";
import { sleep } from "./service";
import { killGroup } from "../clients/process-groups";
import { createSupervisor } from "./supervisor";
import { endLeftovers } from "../clients/process-groups";

export async function upPlan(ctx: Context, command: string, prefix?: string): Promise<Plan> {
  refuseRoot(command);
  const receipt = await requireReceipt(ctx.env, prefix).catch((e: unknown) => {
    if (!(e instanceof UserError)) throw e;
    throw new UserError(e.message, { exitCode: ExitCode.Refused, fix: e.fix });
  });
  const plan = receipt.plan;
  if (supervisorOf(plan) !== "up")
    throw new UserError(`the node ${plan.node.name} runs in your systemd user manager, not under rootless-k8s up`, {
      exitCode: ExitCode.Refused,
      fix: "use `rootless-k8s start` (or re-install with --supervisor up to run it without systemd)",
    });
  return plan;
}

/** The supervisor in this process, until a signal or a stop ends it; returns its exit status. */
export async function runUp(ctx: Context, plan: Plan): Promise<number> {
  await ensureRuntimeDir(plan.paths.runtimeDir);
  const paths = upPaths(plan.paths);
  const claim = await claimPidFile(paths.pidFile, plan.node.name);
  const say = (line: string) => ctx.out.out(`${new Date().toISOString()} rootless-k8s up: ${line}`);
  const readyWatch = new AbortController();
  let lastResort: (() => void) | null = null;
  // A failure of the supervisor's own (a spawn refused, a log folder gone) is said, never a crash
  // that would leave the services unwatched.
  const onRejection = (e: unknown) => say(`error: ${e instanceof Error ? e.message : String(e)}`);
  process.on("unhandledRejection", onRejection);
  try {
    if (claim.stale !== null) say(`removed the pid file of a supervisor that is gone (pid ${claim.stale || "unreadable"})`);
    // A supervisor killed outright left its services running, unwatched: they end before anything starts.
    const left = await endLeftovers(paths.groups);
    if (left.length) say(`ended what a supervisor that was killed left running: ${left.join(", ")}`);
    const supervisor = await createSupervisor({
      dir: plan.paths.unitDir,
      target: plan.units.target,
      socket: paths.socket,
      groups: paths.groups,
      env: { ...ctx.env, NOTIFY_SOCKET: undefined },
      say,
    });
    // A second Ctrl-C ends this process at once (cli/main.ts): no service outlives it.
    lastResort = () => {
      for (const u of supervisor.units().units) if (u.mainPid && u.mainPid !== process.pid) killGroup(u.mainPid, "SIGKILL");
    };
    process.on("exit", lastResort);
    await supervisor.listen();
    const stop = (why: string) => {
      say(`${why}: stopping every service (in reverse order)`);
      void supervisor.stopAll();
    };
    // Ctrl-C and SIGTERM abort ctx.signal (cli/main.ts); a closed terminal sends SIGHUP.
    const onAbort = () => stop("interrupted");
    const onHup = () => stop("SIGHUP (the terminal closed)");
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    process.on("SIGHUP", onHup);
    try {
      if (ctx.signal.aborted) stop("interrupted before the start");
      else {
        say(`running the node ${plan.node.name} (pid ${process.pid}); Ctrl-C or SIGTERM stops it`);
        const t0 = Date.now();
        supervisor.startAll();
        // Ended with the supervisor: a wait left pending would keep this process alive after its last stop.
        void sayWhenReady(plan, AbortSignal.any([ctx.signal, readyWatch.signal]), t0, say);
      }
      const code = await supervisor.done;
      say(code === 0 ? "stopped: no service of the node runs" : "stopped after a failure");
      return code;
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
      process.off("SIGHUP", onHup);
    }
  } finally {
    readyWatch.abort();
    if (lastResort) process.off("exit", lastResort);
    process.off("unhandledRejection", onRejection);
    await claim.release();
  }
}

/** How long the supervisor waits to say the node is Ready (a line of its output, nothing more). */
const SAY_READY_WITHIN_MS = 600_000;

/** One line once the node is Ready (a server: the API server's /readyz and the Node), or that it was not. */
async function sayWhenReady(plan: Plan, signal: AbortSignal, t0: number, say: (l: string) => void): Promise<void> {
  if (plan.role === "worker") return;
  try {
    const client = apiClient(await readKubeconfig(plan.paths.adminKubeconfig));
    await waitForReady({ client, nodeName: plan.node.name, timeoutMs: SAY_READY_WITHIN_MS, signal, freshSince: t0 });
    say(`the node ${plan.node.name} is Ready, ${((Date.now() - t0) / 1000).toFixed(1)} s after the start`);
  } catch (e) {
    if (!signal.aborted) say(`the node ${plan.node.name} is not Ready: ${(e as Error).message}`);
  }
}

/** How long `up --detach --no-wait` waits for the supervisor it started to answer. */
const ANSWER_WITHIN_MS = 30_000;

/** Starts the supervisor in a session of its own; returns its pid once it answers on its socket. */
export async function detachUp(ctx: Context, plan: Plan): Promise<number> {
  await ensureRuntimeDir(plan.paths.runtimeDir);
  const paths = upPaths(plan.paths);
  const running = await readPid(paths.pidFile);
  if (running !== null && isSupervisor(running)) throw alreadyRunning(plan.node.name, running);
  mkdirSync(path.dirname(paths.log), { recursive: true, mode: 0o700 });
  const out = openSync(paths.log, "a", 0o600);
  const self = selfCommand();
  const prefix = plan.paths.prefix ? ["--prefix", plan.paths.prefix] : [];
  const child = spawn(self[0]!, [...self.slice(1), "up", ...prefix], { env: ctx.env, stdio: ["ignore", out, out], detached: true });
  closeSync(out);
  let exited: number | null = null;
  child.once("exit", (c) => (exited = c ?? 1));
  child.unref();
  const end = Date.now() + ANSWER_WITHIN_MS;
  while (Date.now() < end && exited === null) {
    const r = await upCall(paths.socket, "GET", UP_API.units, undefined, 2000).catch(() => null);
    if (r?.status === 200 && (await readPid(paths.pidFile)) === child.pid) return child.pid;
    await sleep(100);
  }
  // Not started within the time, or ended: nothing of it may go on starting the node unseen.
  if (exited === null) killGroup(child.pid, "SIGKILL");
  const tail = (await lastLogLines(paths.log, 5)) ?? [];
  throw new UserError(
    `rootless-k8s up did not start${exited !== null ? ` (exit ${exited})` : ` within ${ANSWER_WITHIN_MS / 1000} s`}: ${tail.at(-1) ?? "no output"}`,
    { fix: `see ${paths.log}, or run \`rootless-k8s up\` in the foreground` },
  );
}
