// The `systemctl --user` / `journalctl --user` driver. Every call has a timeout and never throws for
// a non-zero exit: callers decide. Where the user manager has no journal (no journald: containers,
// hosts without a systemd PID 1), unit output goes to log files, and `unitLogs` reads those instead.
import { promises as fsp } from "node:fs";
import * as path from "node:path";
import { UserError } from "../errors";
import { runCommand, type RunResult } from "../host/host";
import { LOG_GENERATIONS } from "../plan/logging";

export interface UnitState {
  unit: string;
  /** active, activating, deactivating, inactive, failed, reloading; "unknown" if not loaded. */
  activeState: string;
  subState: string;
  /** success, exit-code, signal, timeout, start-limit-hit, ... */
  result: string;
  loadState: string;
  mainPid: number;
  nRestarts: number;
  /** Set when the unit file changed on disk since it was loaded (daemon-reload needed). */
  needDaemonReload: boolean;
}

export interface LogTail {
  /** Where the lines came from: "journal", a log file path, or null when none was found. */
  source: string | null;
  lines: string[];
}

export interface SystemdUser {
  run(args: string[], timeoutMs?: number): Promise<RunResult>;
  /** Throws a UserError with the fix when no user manager answers. */
  ensureReachable(): Promise<void>;
  daemonReload(): Promise<void>;
  enable(units: string[]): Promise<void>;
  disable(units: string[]): Promise<void>;
  /** Queues start jobs and returns at once (`--no-block`); readiness is waited for separately. */
  start(units: string[]): Promise<void>;
  restart(units: string[]): Promise<void>;
  stop(units: string[]): Promise<void>;
  resetFailed(units: string[]): Promise<void>;
  state(unit: string): Promise<UnitState>;
  /** Last `lines` lines of the unit's output: the journal, else its log file. */
  unitLogs(unit: string, lines: number): Promise<LogTail>;
  /** Whether `journalctl --user` has entries for this manager (cached). */
  hasJournal(): Promise<boolean>;
}

export interface SystemdOptions {
  env?: NodeJS.ProcessEnv;
  /** Folder of per-unit log files (`<unit>.log`) used where there is no journal. */
  logDir?: string;
  /** Command names, for tests: systemctl and journalctl on PATH by default. */
  systemctl?: string;
  journalctl?: string;
}

const CALL_TIMEOUT_MS = 30_000;

export function systemdUser(opts: SystemdOptions = {}): SystemdUser {
  const env = opts.env ?? process.env;
  const systemctl = opts.systemctl ?? "systemctl";
  const journalctl = opts.journalctl ?? "journalctl";
  let journal: boolean | undefined;

  const run = (args: string[], timeoutMs = CALL_TIMEOUT_MS) => runCommand(systemctl, ["--user", ...args], { timeoutMs }, env);

  async function must(args: string[], what: string): Promise<RunResult> {
    const r = await run(args);
    if (r.notFound) {
      throw new UserError("systemctl is not installed", { fix: "install systemd; rootless-k8s runs the node in the user's systemd" });
    }
    if (r.code !== 0) {
      const detail = (r.stderr || r.stdout).trim().split("\n")[0] ?? "";
      throw new UserError(`systemctl --user ${what} failed${r.timedOut ? " (timed out)" : ""}: ${detail}`, {
        fix: "check `systemctl --user status` and `rootless-k8s doctor`",
      });
    }
    return r;
  }

  const self: SystemdUser = {
    run,
    async ensureReachable() {
      const r = await run(["show-environment"], 10_000);
      if (r.code === 0) return;
      if (r.notFound) throw new UserError("systemctl is not installed", { fix: "install systemd (apt-get install systemd)" });
      const why = (r.stderr || r.stdout).trim().split("\n")[0] || (r.timedOut ? "no answer within 10 s" : "no answer");
      throw new UserError(`the user's systemd manager does not answer (${why})`, {
        fix: env.XDG_RUNTIME_DIR
          ? "log in through a real session (ssh or a console login, not su/sudo), or as root: loginctl enable-linger $USER"
          : "XDG_RUNTIME_DIR is not set: log in through a real session (ssh, console), not su/sudo; or use `machinectl shell $USER@`",
      });
    },
    async daemonReload() {
      await must(["daemon-reload"], "daemon-reload");
    },
    async enable(units) {
      if (units.length) await must(["enable", ...units], `enable ${units.join(" ")}`);
    },
    async disable(units) {
      if (!units.length) return;
      const r = await run(["disable", ...units]);
      // A unit whose file is already gone cannot be disabled; its links are cleaned by the caller.
      if (r.code !== 0 && !/not loaded|does not exist|No such file/i.test(r.stderr)) {
        throw new UserError(`systemctl --user disable failed: ${r.stderr.trim().split("\n")[0] ?? ""}`);
      }
    },
    async start(units) {
      if (units.length) await must(["start", "--no-block", ...units], `start ${units.join(" ")}`);
    },
    async restart(units) {
      if (units.length) await must(["restart", "--no-block", ...units], `restart ${units.join(" ")}`);
    },
    async stop(units) {
      if (!units.length) return;
      const r = await run(["stop", ...units], 120_000);
      if (r.code !== 0 && !/not loaded/i.test(r.stderr)) {
        throw new UserError(`systemctl --user stop failed: ${r.stderr.trim().split("\n")[0] ?? ""}`);
      }
    },
    async resetFailed(units) {
      if (units.length) await run(["reset-failed", ...units]);
    },
    async state(unit) {
      const r = await run(["show", unit, "--property=ActiveState,SubState,Result,LoadState,MainPID,NRestarts,NeedDaemonReload"]);
      return parseUnitState(unit, r.code === 0 ? r.stdout : "");
    },
    async hasJournal() {
      if (journal === undefined) {
        const r = await runCommand(journalctl, ["--user", "-n", "1", "--no-pager", "-q"], { timeoutMs: 10_000 }, env);
        journal = r.code === 0 && r.stdout.trim() !== "";
      }
      return journal;
    },
    async unitLogs(unit, lines) {
      if (await self.hasJournal()) {
        const r = await runCommand(
          journalctl,
          ["--user", "-u", unit, "-n", String(lines), "--no-pager", "-q", "-o", "short-iso"],
          { timeoutMs: 10_000 },
          env,
        );
        const out = r.stdout.split("\n").filter((l) => l.trim() !== "");
        if (r.code === 0 && out.length) return { source: "journal", lines: out };
      }
      if (opts.logDir) {
        const file = unitLogFile(opts.logDir, unit);
        const tail = await lastLogLines(file, lines);
        if (tail) return { source: file, lines: tail };
      }
      return { source: null, lines: [] };
    },
  };
  return self;
}

/** `<logDir>/<unit>.log`: where a unit writes when there is no journal. */
export function unitLogFile(logDir: string, unit: string): string {
  return path.join(logDir, `${unit}.log`);
}

export function parseUnitState(unit: string, text: string): UnitState {
  const kv = new Map<string, string>();
  for (const line of text.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) kv.set(line.slice(0, i), line.slice(i + 1));
  }
  return {
    unit,
    activeState: kv.get("ActiveState") || "unknown",
    subState: kv.get("SubState") || "unknown",
    result: kv.get("Result") || "unknown",
    loadState: kv.get("LoadState") || "unknown",
    mainPid: Number(kv.get("MainPID") ?? 0) || 0,
    nRestarts: Number(kv.get("NRestarts") ?? 0) || 0,
    needDaemonReload: kv.get("NeedDaemonReload") === "yes",
  };
}

/** The live file and its rotated generations, newest first: x.log, x.log.1, x.log.2. */
export function logGenerations(file: string, keep = LOG_GENERATIONS): string[] {
  return [file, ...Array.from({ length: keep }, (_, i) => `${file}.${i + 1}`)];
}

/** The last `n` lines of a file, read backwards in chunks (a large file is never read whole for a few lines). */
async function lastLinesOf(file: string, n: number): Promise<string[] | null> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, "r");
  } catch {
    return null;
  }
  try {
    const { size } = await fh.stat();
    const chunks: Buffer[] = [];
    let pos = size;
    let newlines = 0;
    while (pos > 0 && newlines <= n) {
      const len = Math.min(pos, 1 << 20);
      pos -= len;
      const buf = Buffer.alloc(len);
      await fh.read(buf, 0, len, pos);
      chunks.unshift(buf);
      for (const b of buf) if (b === 10) newlines++;
    }
    const lines = Buffer.concat(chunks)
      .toString("utf8")
      .split("\n")
      .filter((l) => l.trim() !== "");
    // A first line cut by the chunk boundary is not whole: drop it unless the file starts there.
    if (pos > 0) lines.shift();
    return lines.slice(-n);
  } finally {
    await fh.close();
  }
}

/** The last `n` lines of a unit's log, across its rotated generations (oldest lines first); null when there is none. */
export async function lastLogLines(file: string, n: number, keep = LOG_GENERATIONS): Promise<string[] | null> {
  let out: string[] | null = null;
  for (const g of logGenerations(file, keep)) {
    const want = n - (out?.length ?? 0);
    if (want <= 0) break;
    const lines = await lastLinesOf(g, want);
    if (lines === null) continue;
    out = [...lines, ...(out ?? [])];
  }
  return out;
}
