// The client of `rootless-k8s up` (cli/supervisor/): the same calls as the systemd driver
// (clients/systemd.ts), over the supervisor's control socket, HTTP on a unix socket in the node's
// 0700 runtime folder. Where no supervisor runs, every unit is inactive, a stop has nothing to do,
// and a start runs `rootless-k8s up --detach`, which starts the whole node. `serviceManager` picks
// the driver a plan's supervisor needs: every command drives the node through it.
import { spawn } from "node:child_process";
import { closeSync, lstatSync, mkdirSync, openSync } from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { ExitCode, UserError } from "../errors";
import { upRuntimeBase } from "../xdg";
import type { RunResult } from "../host/host";
import type { Plan } from "../plan/plan";
import { supervisorOf, upPaths, type UpPaths } from "../plan/supervisor";
import { lastLogLines, systemdUser, unitLogFile, type SystemdUser, type UnitState } from "./systemd";
import { endLeftovers } from "./process-groups";

/** What GET /v1/units answers. */
export interface UpUnits {
  pid: number;
  units: Omit<UnitState, "loadState" | "needDaemonReload">[];
}

/** The bodies of the POST calls: /v1/start, /v1/stop, /v1/restart, /v1/reset-failed; /v1/reload has none. */
export interface UpUnitsRequest {
  units: string[];
}

/** What POST /v1/stop answers: whether nothing runs any more, so that the supervisor (pid) exits. */
export interface UpStopAnswer {
  exiting: boolean;
  pid: number;
}

export const UP_API = {
  units: "/v1/units",
  start: "/v1/start",
  stop: "/v1/stop",
  restart: "/v1/restart",
  resetFailed: "/v1/reset-failed",
  reload: "/v1/reload",
} as const;

export interface UpCallResult {
  status: number;
  body: string;
}

/** One call on the control socket; null when nothing listens there. */
export function upCall(
  socket: string,
  method: "GET" | "POST",
  p: string,
  body?: unknown,
  timeoutMs = 130_000,
): Promise<UpCallResult | null> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        socketPath: socket,
        method,
        path: p,
        headers: data ? { "content-type": "application/json", "content-length": Buffer.byteLength(data) } : {},
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer from ${socket} within ${timeoutMs / 1000} s`)));
    req.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT" || e.code === "ECONNREFUSED") resolve(null);
      else
        reject(
          new UserError(`rootless-k8s up did not answer ${method} ${p}: ${e.message}`, {
            fix: `see \`rootless-k8s logs up\`; \`rootless-k8s stop\` ends a node whose supervisor is gone`,
          }),
        );
    });
    req.end(data);
  });
}

export interface UpClientOptions {
  plan: Pick<Plan, "paths" | "units">;
  /** The command that runs this binary (argv before `up`). */
  self: string[];
  env?: NodeJS.ProcessEnv;
}

/** How long a stop of the whole node may take: longer than every service's stop timeout in a row. */
const STOP_ANSWER_MS = 600_000;

/** How long a supervisor whose services all stopped may take to exit. */
const SUPERVISOR_EXIT_MS = 10_000;

/** Resolves once `pid` is gone, or after `ms`. */
async function gone(pid: number, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** How long `up --detach` may take to answer on its socket before the start is called failed. */
const DETACH_WAIT_MS = 30_000;

/**
 * The runtime folder of a node run by `up` in /tmp (cli/xdg.ts) is used only as a real folder of
 * the user's own that nobody else may enter: a link someone planted there would hand them the
 * control socket and the groups the next stop ends. Elsewhere (XDG_RUNTIME_DIR) it is the session's.
 */
export function checkUpRuntime(runtimeDir: string): void {
  const base = path.dirname(runtimeDir);
  if (base !== upRuntimeBase(process.getuid?.() ?? -1)) return;
  const why = privateFolderProblem(base);
  if (why)
    throw new UserError(`refusing to use ${base}: it is ${why}, not a private folder of yours`, {
      exitCode: ExitCode.Refused,
      fix: `check what put it there, remove it (rm -r ${base}), then \`rootless-k8s start\``,
    });
}

/** Why `dir` is not a real folder (never a link) of this user's that nobody else may enter; null when it is, or is not there. */
export function privateFolderProblem(dir: string): string | null {
  const uid = process.getuid?.() ?? -1;
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(dir);
  } catch {
    return null; // not there: nothing of the node runs, nothing to reach
  }
  if (st.isSymbolicLink()) return "a symbolic link";
  if (!st.isDirectory()) return "not a folder";
  if (st.uid !== uid) return `uid ${st.uid}'s`;
  return st.mode & 0o077 ? "open to others" : null;
}

export function upClient(o: UpClientOptions): SystemdUser {
  const paths: UpPaths = upPaths(o.plan.paths);
  checkUpRuntime(o.plan.paths.runtimeDir);
  const logDir = o.plan.paths.logDir;
  const prefix = o.plan.paths.prefix ? ["--prefix", o.plan.paths.prefix] : [];
  /** A POST to the supervisor: its answer, or null when none runs; a refusal is an error. */
  const call = async (p: string, units?: string[], timeoutMs?: number): Promise<UpCallResult | null> => {
    const r = await upCall(paths.socket, "POST", p, units ? ({ units } satisfies UpUnitsRequest) : {}, timeoutMs);
    if (r !== null && r.status >= 300)
      throw new UserError(`rootless-k8s up refused ${p}: ${r.body.trim().split("\n")[0] ?? r.status}`, { fix: `see ${paths.log}` });
    return r;
  };
  const detach = async () => {
    const r = await runUpDetached(o.self, prefix, paths, o.env ?? process.env);
    if (r.code !== 0) {
      const tail = (await lastLogLines(paths.log, 15)) ?? [];
      const why =
        tail
          .filter((l) => l.startsWith("error:"))
          .at(-1)
          ?.replace(/^error:\s*/, "") ??
        tail.at(-1) ??
        "no output";
      throw new UserError(`rootless-k8s up --detach failed (exit ${r.code}): ${why}`, {
        fix: `see ${paths.log}, or run \`rootless-k8s up\` in the foreground`,
      });
    }
  };
  const self: SystemdUser = {
    async run(args) {
      return {
        code: 1,
        stdout: "",
        stderr: `no systemctl under rootless-k8s up (${args.join(" ")})`,
        notFound: false,
        timedOut: false,
      } as RunResult;
    },
    async ensureReachable() {},
    async daemonReload() {
      await call(UP_API.reload);
    },
    async enable() {},
    async disable() {},
    async start(units) {
      if (!units.length) return;
      if ((await call(UP_API.start, units)) === null) await detach();
    },
    async restart(units) {
      if (!units.length) return;
      if ((await call(UP_API.restart, units)) === null) await detach();
    },
    async stop(units) {
      if (!units.length) return;
      // A stop runs each service's stop timeout in turn (about 4 minutes at most for a whole node).
      const r = await call(UP_API.stop, units, STOP_ANSWER_MS);
      if (r === null) {
        // No supervisor answers: what one that is gone (killed, or its terminal closed) left running ends here.
        await endLeftovers(paths.groups);
        return;
      }
      // Nothing of the node runs any more: the supervisor exits too, and the stop ends once it has.
      const a = JSON.parse(r.body) as Partial<UpStopAnswer>;
      if (a.exiting && a.pid && a.pid !== process.pid) await gone(a.pid, SUPERVISOR_EXIT_MS);
    },
    async resetFailed(units) {
      if (units.length) await call(UP_API.resetFailed, units);
    },
    async state(unit) {
      const r = await upCall(paths.socket, "GET", UP_API.units, undefined, 10_000);
      const known = r && r.status === 200 ? (JSON.parse(r.body) as UpUnits).units.find((u) => u.unit === unit) : undefined;
      return {
        unit,
        activeState: known?.activeState ?? "inactive",
        subState: known?.subState ?? "dead",
        result: known?.result ?? "success",
        loadState: "loaded",
        mainPid: known?.mainPid ?? 0,
        nRestarts: known?.nRestarts ?? 0,
        needDaemonReload: false,
      };
    },
    async hasJournal() {
      return false;
    },
    async unitLogs(unit, lines) {
      const file = unitLogFile(logDir, unit);
      const tail = await lastLogLines(file, lines);
      return tail ? { source: file, lines: tail } : { source: null, lines: [] };
    },
  };
  return self;
}

/**
 * Runs `rootless-k8s up --detach --no-wait` and waits for it: it returns once its supervisor
 * answers on the control socket (exit 0), or fails with the reason in its log.
 */
async function runUpDetached(self: string[], prefix: string[], paths: UpPaths, env: NodeJS.ProcessEnv): Promise<RunResult> {
  mkdirSync(path.dirname(paths.log), { recursive: true, mode: 0o700 });
  const out = openSync(paths.log, "a", 0o600);
  try {
    const child = spawn(self[0]!, [...self.slice(1), "up", "--detach", "--no-wait", ...prefix], { env, stdio: ["ignore", out, out] });
    const code = await new Promise<number>((resolve) => {
      const timer = setTimeout(() => resolve(124), DETACH_WAIT_MS + 5000);
      child.once("error", () => resolve(127));
      child.once("exit", (c) => {
        clearTimeout(timer);
        resolve(c ?? 1);
      });
    });
    return { code, stdout: "", stderr: "", notFound: code === 127, timedOut: code === 124 } as RunResult;
  } finally {
    closeSync(out);
  }
}

export interface ServiceManagerOptions {
  env: NodeJS.ProcessEnv;
  /** The command that runs this binary (for `up --detach`). */
  self: string[];
}

/** The driver of the plan's supervisor: the user's systemd, or `rootless-k8s up`. */
export function serviceManager(plan: Plan, o: ServiceManagerOptions): SystemdUser {
  if (supervisorOf(plan) === "up") return upClient({ plan, self: o.self, env: o.env });
  // A receipt's plan is read as it is (an old or damaged one may lack logging).
  return systemdUser({ env: o.env, logDir: plan.logging?.to === "file" ? plan.paths?.logDir : undefined });
}
