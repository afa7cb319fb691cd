// Child processes for tests: find a command, run one to its end and collect what it printed.
import { spawn, spawnSync } from "node:child_process";

/** The path of `cmd` as a shell finds it on `path` (default this process's PATH), or "" when there is none. */
export function which(cmd: string, path = process.env.PATH ?? ""): string {
  return spawnSync("sh", ["-c", 'command -v "$1"', "sh", cmd], { encoding: "utf8", env: { PATH: path } }).stdout.trim();
}

export const hasCommand = (cmd: string) => which(cmd) !== "";

/** Polls `cond` (which may be async) every 100 ms; throws naming `what` after `ms`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, ms: number, what: string | (() => string)): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${typeof what === "string" ? what : what()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ProcessOptions {
  env: Record<string, string>;
  cwd: string;
  /** Written to stdin, which is then closed; without it, stdin is /dev/null. */
  input?: string;
  /** SIGKILL after this long (default 60 s). */
  timeoutMs?: number;
}

export function runProcess(cmd: string, args: string[], o: ProcessOptions): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: o.env, cwd: o.cwd, stdio: [o.input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => (stdout += d));
    child.stderr!.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    if (o.input !== undefined) child.stdin!.end(o.input);
  });
}
