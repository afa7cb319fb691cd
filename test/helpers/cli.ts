// Runs the bundled CLI (built by global-setup) as a real child process.
import { spawn } from "node:child_process";
import { join } from "node:path";

export const REPO = join(import.meta.dirname, "..", "..");
/** The bundle built by global-setup for this test run. */
export const CLI_BUNDLE = process.env.RK8S_TEST_CLI ?? join(REPO, "dist", "cli.cjs");

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  input?: string;
  /** Replace the whole environment instead of extending process.env. */
  cleanEnv?: boolean;
  timeoutMs?: number;
}

export function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  const base = opts.cleanEnv ? {} : process.env;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...base, NO_COLOR: "1", ROOTLESS_K8S_NO_UPDATE_CHECK: "1", ...opts.env })) {
    if (v !== undefined) env[k] = v;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_BUNDLE, ...args], { env, cwd: opts.cwd ?? REPO, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(opts.input ?? "");
  });
}
