// One service under `rootless-k8s up`, run as systemd runs a unit of the same definition
// (cli/render/services.ts): ExecStartPre= commands in turn, then the main process in a process
// group of its own, ready at once or once its socket accepts, then ExecStartPost=; restarted when
// it fails (Restart=on-failure), after RestartSec doubled at each failure in a row (at most
// MAX_BACKOFF_S); and given up after startLimit.burst failures in a row that each ran less than
// startLimit.intervalSec. A stop sends SIGTERM (to the group, or to the main process for
// KillMode=mixed), waits stopTimeoutSec, then SIGKILLs the group.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, openSync, closeSync, promises as fsp, mkdirSync } from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { EventEmitter } from "node:events";
import type { NodeService } from "../render/services";
import { expandWords, readEnvironment } from "./environment";
import { killGroup } from "../clients/process-groups";

export const MAX_BACKOFF_S = 30;

export type ActiveState = "inactive" | "activating" | "active" | "deactivating" | "failed";

export interface ServiceState {
  unit: string;
  activeState: ActiveState;
  subState: string;
  result: string;
  mainPid: number;
  nRestarts: number;
}

/** Signals after which a process counts as ended cleanly (systemd.service(5), "Restart="). */
const CLEAN_SIGNALS = new Set(["SIGHUP", "SIGINT", "SIGTERM", "SIGPIPE"]);

export interface ServiceEvents {
  /** Its main process ended by itself (not stopped): `willRestart` when it starts again after a pause. */
  exited: [willRestart: boolean];
  active: [];
  /** Given up: failed startLimit.burst times in a row. */
  gaveUp: [];
  /** Its main process started or ended (the supervisor records the groups it runs). */
  main: [];
}

export class Service extends EventEmitter<ServiceEvents> {
  spec: NodeService;
  /** The definition a daemon-reload brought: used from the next start on, as systemd does. */
  next: NodeService | null = null;
  private st: ServiceState;
  private child: ChildProcess | null = null;
  private helper: ChildProcess | null = null;
  private restartTimer: NodeJS.Timeout | null = null;
  private failuresInARow = 0;
  private generation = 0;
  private exitWaiters: (() => void)[] = [];

  constructor(
    spec: NodeService,
    private readonly baseEnv: NodeJS.ProcessEnv,
  ) {
    super();
    this.spec = spec;
    this.st = { unit: spec.name, activeState: "inactive", subState: "dead", result: "success", mainPid: 0, nRestarts: 0 };
  }

  get state(): ServiceState {
    return { ...this.st };
  }

  get running(): boolean {
    return this.st.activeState === "active" || this.st.activeState === "activating" || this.st.activeState === "deactivating";
  }

  resetFailed(): void {
    this.failuresInARow = 0;
    if (this.st.activeState === "failed") this.set("inactive", "dead", "success");
  }

  private set(activeState: ActiveState, subState: string, result?: string): void {
    this.st = { ...this.st, activeState, subState, ...(result ? { result } : {}) };
    if (activeState === "active") this.emit("active");
  }

  /** Starts it unless it runs; resolves once it is active (true), or has failed or was skipped (false). */
  async start(): Promise<boolean> {
    // Still stopping (a part of the owner, taken down with it): it starts once it has stopped.
    if (this.st.activeState === "deactivating") await this.settled();
    if (this.st.activeState === "active") return true;
    if (this.st.activeState === "activating") return this.settled();
    if (this.next) {
      this.spec = this.next;
      this.next = null;
    }
    if (this.spec.condition && !existsSync(this.spec.condition)) {
      this.set("inactive", "dead", "success");
      return false;
    }
    // A start asked for counts its restarts from zero, as systemd's NRestarts does.
    this.st.nRestarts = 0;
    return this.run(++this.generation);
  }

  /** Resolves when the service leaves "activating": true when active. */
  private settled(): Promise<boolean> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.st.activeState === "activating" || this.st.activeState === "deactivating") return setTimeout(check, 50);
        resolve(this.st.activeState === "active");
      };
      check();
    });
  }

  private async run(gen: number): Promise<boolean> {
    const s = this.spec;
    this.set("activating", "start-pre");
    const started = Date.now();
    let env: NodeJS.ProcessEnv;
    let log: number | "ignore";
    try {
      env = { ...this.baseEnv, ...(await readEnvironment(s.envFiles)) };
      delete env.NOTIFY_SOCKET;
      log = openLog(s.log);
    } catch (e) {
      if (gen !== this.generation) return false;
      this.note(`cannot start: ${(e as Error).message}`);
      this.failed(gen, "resources", started);
      return false;
    }
    try {
      // A stop (or another start) since this one began: it goes no further, and spawns nothing.
      for (const cmd of s.pre) {
        if (gen !== this.generation) return false;
        const code = await this.runHelper(expandWords(cmd, env), env, log, s.startTimeoutSec);
        if (gen !== this.generation) return false;
        if (code !== 0) {
          this.note(`ExecStartPre ${String(cmd[0])} exited ${code}`);
          this.failed(gen, "exit-code", started);
          return false;
        }
      }
      if (gen !== this.generation) return false;
      const argv = expandWords(s.exec, env);
      const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ["ignore", log, log], detached: true });
      this.child = child;
      const spawnError = await new Promise<Error | null>((resolve) => {
        child.once("spawn", () => resolve(null));
        child.once("error", (e) => resolve(e));
      });
      if (spawnError) {
        this.child = null;
        this.note(`cannot run ${argv[0]}: ${spawnError.message}`);
        this.failed(gen, "exit-code", started);
        return false;
      }
      this.st.mainPid = child.pid ?? 0;
      this.emit("main");
      const pid = child.pid ?? 0;
      child.once("exit", (code, signal) => this.onExit(gen, started, pid, code, signal));
      if (s.ready) {
        this.set("activating", "start");
        const ok = await waitForSocket(
          s.ready.socket,
          () => this.child === child && gen === this.generation,
          (s.startTimeoutSec ?? 90) * 1000,
        );
        if (gen !== this.generation || this.child !== child) return false;
        if (!ok) {
          this.note(`${s.ready.socket} did not accept within ${s.startTimeoutSec ?? 90} s`);
          await this.killAll("SIGKILL");
          return false;
        }
      }
      this.set("active", "running", "success");
      const postEnv = { ...env, MAINPID: String(child.pid) };
      for (const cmd of s.post) {
        if (gen !== this.generation) break;
        const code = await this.runHelper(expandWords(cmd, postEnv), postEnv, log, s.startTimeoutSec);
        if (code !== 0) this.note(`ExecStartPost ${String(cmd[0])} exited ${code}`);
      }
      return this.st.activeState === "active";
    } finally {
      if (typeof log === "number") closeSync(log);
    }
  }

  private runHelper(argv: string[], env: NodeJS.ProcessEnv, log: number | "ignore", timeoutS: number | null): Promise<number> {
    return new Promise((resolve) => {
      const p = spawn(argv[0]!, argv.slice(1), { env, stdio: ["ignore", log, log], detached: true });
      this.helper = p;
      const timer = timeoutS ? setTimeout(() => killGroup(p.pid, "SIGKILL"), timeoutS * 1000) : null;
      const done = (code: number) => {
        if (timer) clearTimeout(timer);
        if (this.helper === p) this.helper = null;
        resolve(code);
      };
      p.once("error", () => done(127));
      p.once("exit", (code, signal) => done(code ?? (signal ? 128 : 1)));
    });
  }

  private onExit(gen: number, started: number, pid: number, code: number | null, signal: NodeJS.Signals | null): void {
    // Only the current run's process is the service's: an older one ending changes nothing of a newer.
    if (this.child?.pid === pid) {
      this.child = null;
      this.st.mainPid = 0;
    }
    this.emit("main");
    const waiters = this.exitWaiters.splice(0);
    for (const w of waiters) w();
    if (gen !== this.generation || this.st.activeState === "deactivating") return;
    const clean = code === 0 || (signal !== null && CLEAN_SIGNALS.has(signal));
    this.note(`main process ended (${signal ? `signal ${signal}` : `exit code ${code}`})`);
    // The rest of its group (a helper it left) goes with it, as systemd ends a unit's cgroup.
    killGroup(pid, "SIGKILL");
    if (clean) {
      this.set("inactive", "dead", "success");
      this.emit("exited", false);
      return;
    }
    this.emit("exited", this.failed(gen, signal ? "signal" : "exit-code", started));
  }

  /** Counts a failure; schedules the restart (true) or gives up (false). */
  private failed(gen: number, result: string, started: number): boolean {
    const s = this.spec;
    this.failuresInARow = Date.now() - started >= s.startLimit.intervalSec * 1000 ? 1 : this.failuresInARow + 1;
    if (this.failuresInARow >= s.startLimit.burst) {
      this.set("failed", "failed", result === "exit-code" || result === "signal" ? "start-limit-hit" : result);
      this.note(`gave up after ${this.failuresInARow} failed starts in a row`);
      this.emit("gaveUp");
      return false;
    }
    const delay = Math.min(s.restartSec * 2 ** (this.failuresInARow - 1), MAX_BACKOFF_S);
    this.set("activating", "auto-restart", result);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (gen !== this.generation || this.st.subState !== "auto-restart") return;
      this.st.nRestarts++;
      if (this.next) {
        this.spec = this.next;
        this.next = null;
      }
      void this.run(++this.generation);
    }, delay * 1000);
    return true;
  }

  /** Stops it (and whatever start or restart is under way); resolves once no process of it is left. */
  async stop(): Promise<void> {
    this.generation++;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    const s = this.spec;
    const child = this.child;
    const helper = this.helper;
    if (!child && !helper) {
      if (this.st.activeState !== "failed") this.set("inactive", "dead");
      return;
    }
    this.set("deactivating", "stop-sigterm");
    if (s.stopMarker) touch(s.stopMarker);
    try {
      if (helper) killGroup(helper.pid, "SIGKILL");
      if (child) {
        const gone = this.exited(child);
        if (s.killMode === "mixed") signalPid(child.pid, "SIGTERM");
        else killGroup(child.pid, "SIGTERM");
        const inTime = await within(gone, s.stopTimeoutSec * 1000);
        killGroup(child.pid, "SIGKILL");
        if (!inTime) await gone;
        this.set(inTime ? "inactive" : "failed", inTime ? "dead" : "failed", inTime ? "success" : "timeout");
      } else this.set("inactive", "dead");
    } finally {
      if (s.stopMarker) await fsp.rm(s.stopMarker, { force: true });
    }
  }

  private exited(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      this.exitWaiters.push(resolve);
      child.once("exit", () => resolve());
    });
  }

  /** SIGKILL to the main process's group and any helper: a start that must not go on. */
  private async killAll(sig: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (this.helper) killGroup(this.helper.pid, sig);
    if (child) {
      const gone = this.exited(child);
      killGroup(child.pid, sig);
      await gone;
    }
  }

  /** A line of the supervisor's own in the service's log, as systemd's journal has its own lines. */
  note(line: string): void {
    if (!this.spec.log) return;
    void fsp.appendFile(this.spec.log, `rootless-k8s up: ${this.spec.name}: ${line}\n`).catch(() => {});
  }
}

function openLog(file: string | null): number | "ignore" {
  if (!file) return "ignore";
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  return openSync(file, "a", 0o600);
}

function touch(file: string): void {
  try {
    closeSync(openSync(file, "w", 0o600));
  } catch {
    // Best effort: the watch then sees a stop as a fault, and the owner is restarted once more.
  }
}

function signalPid(pid: number | undefined, sig: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

/** Whether `p` settles within `ms`; the timer is cleared either way (a pending one would keep the supervisor alive after its last stop). */
async function within(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls until a unix socket accepts a connection (true), `alive()` turns false, or the time is up (false). */
async function waitForSocket(socket: string, alive: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end && alive()) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(socket);
      c.once("connect", () => {
        c.destroy();
        resolve(true);
      });
      c.once("error", () => resolve(false));
    });
    if (ok) return true;
    await sleep(100);
  }
  return false;
}
