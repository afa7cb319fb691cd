// Durations on the command line (install, upgrade, token, start, stop, restart): one rule for
// --timeout and --ttl, and what start, stop and restart share besides (their options and exit codes).
import { opt, type OptionSpec, type Parsed } from "../args";
import { UsageError } from "../errors";

export const DEFAULT_TIMEOUT_SECONDS = 300;

/** "300", "90s", "5m", "1h" → seconds. */
export function parseDuration(s: string): number | null {
  const m = /^(\d+)(s|m|h)?$/.exec(s.trim());
  if (!m) return null;
  const n = Number(m[1]) * (m[2] === "h" ? 3600 : m[2] === "m" ? 60 : 1);
  return n > 0 ? n : null;
}

export const LIFECYCLE_OPTIONS: Record<string, OptionSpec> = {
  timeout: {
    type: "string",
    valueName: "DURATION",
    description: "How long to wait for the node to be Ready: seconds, or 90s, 5m (default 5m)",
  },
  prefix: { type: "string", valueName: "DIR", description: "The --prefix the node was installed with" },
};

export const LIFECYCLE_EXIT = `
Exit status: 0 when the node is Ready (or was already running), 1 when it did not become Ready (the
unit at fault and its last log lines are shown), 2 bad usage, 3 when no node is installed or when
run as root, 6 while another rootless-k8s run (install, upgrade, uninstall) holds the lock.`;

/** --timeout, or the default: a bad value is a UsageError naming the command. */
export function timeoutOf(parsed: Parsed, command: string): number {
  const text = opt.str(parsed, "timeout");
  const s = text === undefined ? DEFAULT_TIMEOUT_SECONDS : parseDuration(text);
  if (s === null) throw new UsageError(`--timeout must be seconds or a duration like 90s or 5m (got "${text}")`, command);
  return s;
}
