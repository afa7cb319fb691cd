// The agents' commands inside the node's namespace (ip, bridge, iptables, nft): an argv run with
// host/host.ts's runCommand (a hard timeout, never a throw), its result as the agents read it: an
// exit code always (127 for a missing command, 1 for one killed at its timeout).
import { runCommand as runOnHost } from "../host/host";

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `argv` with `input` on its standard input (if any), for at most `timeoutMs`. */
export async function runCommand(argv: string[], o: { timeoutMs?: number; input?: string } = {}): Promise<CommandResult> {
  const r = await runOnHost(argv[0]!, argv.slice(1), { timeoutMs: o.timeoutMs ?? 10_000, input: o.input });
  const code = r.notFound ? 127 : (r.code ?? 1);
  return { code, stdout: r.stdout, stderr: r.stderr || (r.timedOut ? `timed out after ${(o.timeoutMs ?? 10_000) / 1000} s` : "") };
}
