// A health check is a small object: an id, a group and a label, and a pure function of the host
// facts that says ok / warn / fail / skip, in one line, with the exact fix. Root commands and user
// commands are kept apart, so every root fix can be gathered into one reviewed script.
import type { Facts } from "../host/facts";

export type Status = "ok" | "warn" | "fail" | "skip";

export interface Fix {
  /** Commands to run as root (shell lines, no leading sudo: the root script adds nothing either). */
  root: string[];
  /** Commands the user runs as themselves. */
  user: string[];
}

export interface CheckResult {
  status: Status;
  /** One line: what was found. */
  summary: string;
  fix: Fix | null;
  /** Optional extra lines shown under the summary (details, links). */
  details?: string[];
  /**
   * False when the root fix is not for the one root script (it needs a reboot or a choice, such as
   * switching the whole host to cgroup v2): it is shown with the check only. Default true.
   */
  rootFixInScript?: boolean;
}

export type Group = "host" | "user" | "userns" | "cgroup" | "systemd" | "runtimes" | "kernel" | "network" | "node" | "join";

/** F: the facts it judges: the host's (Facts), or the installed node's (doctor --node: NodeFacts). */
export interface Check<F = Facts> {
  /** Stable id, used by --ignore-check and in --json: e.g. "subuid", "cgroup-delegation". */
  id: string;
  group: Group;
  /** Short human label: "subordinate UIDs". */
  label: string;
  /** A failure means no rootless node can run here at all (the verdict is `blocked`). */
  blocks?: boolean;
  run(facts: F): CheckResult;
}

export interface CheckOutcome extends CheckResult {
  id: string;
  group: Group;
  label: string;
  blocks: boolean;
}

export function runChecks<F>(checks: readonly Check<F>[], facts: F): CheckOutcome[] {
  return checks.map((c) => ({ id: c.id, group: c.group, label: c.label, blocks: c.blocks === true, ...c.run(facts) }));
}

/** Shorthands for check bodies. */
export const ok = (summary: string, details?: string[]): CheckResult => ({
  status: "ok",
  summary,
  fix: null,
  ...(details ? { details } : {}),
});
export const skip = (summary: string): CheckResult => ({ status: "skip", summary, fix: null });
export function warn(summary: string, fix: Partial<Fix> | null = null, details?: string[]): CheckResult {
  return { status: "warn", summary, fix: fix && { root: fix.root ?? [], user: fix.user ?? [] }, ...(details ? { details } : {}) };
}
export function fail(summary: string, fix: Partial<Fix> | null = null, details?: string[]): CheckResult {
  return { status: "fail", summary, fix: fix && { root: fix.root ?? [], user: fix.user ?? [] }, ...(details ? { details } : {}) };
}
