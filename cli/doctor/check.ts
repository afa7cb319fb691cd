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
}

export type Group = "host" | "user" | "userns" | "cgroup" | "systemd" | "runtimes" | "kernel" | "network";

export interface Check {
  /** Stable id, used by --ignore-check and in --json: e.g. "subuid", "cgroup-delegation". */
  id: string;
  group: Group;
  /** Short human label: "subordinate UIDs". */
  label: string;
  run(facts: Facts): CheckResult;
}

export interface CheckOutcome extends CheckResult {
  id: string;
  group: Group;
  label: string;
}

export function runChecks(checks: readonly Check[], facts: Facts): CheckOutcome[] {
  return checks.map((c) => ({ id: c.id, group: c.group, label: c.label, ...c.run(facts) }));
}
