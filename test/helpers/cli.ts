// Runs the bundled CLI (built by global-setup) as a real child process.
import { join } from "node:path";
import { runProcess, type ProcessResult } from "./process";

export const REPO = join(import.meta.dirname, "..", "..");
/** The bundle built by global-setup for this test run. */
export const CLI_BUNDLE = process.env.RK8S_TEST_CLI ?? join(REPO, "dist", "cli.cjs");

export type CliResult = ProcessResult;

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
  return runProcess(process.execPath, [CLI_BUNDLE, ...args], {
    env,
    cwd: opts.cwd ?? REPO,
    input: opts.input ?? "",
    timeoutMs: opts.timeoutMs ?? 30_000,
  });
}
