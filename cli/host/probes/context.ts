// What every probe gets: the host, the resolved options and user, and a place to note what could
// not be read (shown by doctor, never fatal).
import * as path from "node:path";
import { which, type Host, type RunResult } from "../host";

export interface EvaluatedUser {
  name: string;
  uid: number;
  gid: number;
  home: string | null;
  /** The evaluated user is not the one running this process (doctor --user). */
  other: boolean;
}

export interface ProbeContext {
  host: Host;
  user: EvaluatedUser;
  /** Folder the node's data would live in. */
  dataDir: string;
  /** The ports the node needs on the host, the API server's first. */
  ports: number[];
  /** The user chose the API port (--api-port). */
  apiPortFixed: boolean;
  /** The installed node's own published ports. */
  ownPorts: number[];
  rootlesskitPath: string;
  note(message: string): void;
}

/** Directories searched after PATH: sbin folders are often missing from a user's PATH. */
export const SYSTEM_BIN_DIRS = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

export function findTool(host: Host, name: string): Promise<string | null> {
  return which(host, name, SYSTEM_BIN_DIRS);
}

/** Timeout of one command probe. Every probe is bounded; the slowest bounds doctor's run time. */
export const PROBE_TIMEOUT_MS = 2000;

/** Runs a probe command; a timeout is noted, an absent command is not. */
export async function probeRun(ctx: ProbeContext, cmd: string, args: string[], timeoutMs = PROBE_TIMEOUT_MS): Promise<RunResult> {
  const r = await ctx.host.run(cmd, args, { timeoutMs });
  if (r.timedOut) ctx.note(`\`${[path.basename(cmd), ...args].join(" ")}\` gave no answer within ${timeoutMs} ms`);
  return r;
}

/** stdout and stderr together, the way a user pastes a command's output. */
export function outputOf(r: RunResult): string {
  return `${r.stdout}\n${r.stderr}`;
}
