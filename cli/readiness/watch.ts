// Watching units while the node starts: a unit that failed, or keeps restarting, ends the wait at
// once (instead of at the timeout), and the failure report shows that unit's last 30 lines, from
// the journal or, where there is none, from its log file.
import { UserError, messageOf } from "../errors";
import { sleep } from "../wait";
import type { SystemdUser, UnitState } from "../clients/systemd";

/** Thrown while waiting when a unit has failed. */
export class UnitFailedError extends UserError {
  constructor(
    readonly unit: string,
    readonly state: UnitState,
  ) {
    super(
      `${unit} ${state.activeState === "failed" ? `failed (${state.result})` : `keeps restarting (${state.nRestarts} restarts, ${state.result})`}`,
      {
        fix: "see the unit's last lines above; fix the cause, then re-run the same command (it resumes)",
      },
    );
    this.name = "UnitFailedError";
  }
}

/** A crash loop: systemd restarted it at least this often while we waited. */
const RESTARTS_FOR_FAILURE = 2;

export function isFailing(s: UnitState): boolean {
  return s.activeState === "failed" || (s.nRestarts >= RESTARTS_FOR_FAILURE && s.activeState !== "active");
}

/** The node is stopped when no unit of it runs: each is inactive or failed (not loaded counts as inactive). */
export function isStopped(states: readonly Pick<UnitState, "activeState">[]): boolean {
  return states.every((s) => s.activeState === "inactive" || s.activeState === "failed" || s.activeState === "unknown");
}

/** The units' states, in the order given. */
export function unitStates(systemd: SystemdUser, units: string[]): Promise<UnitState[]> {
  return Promise.all(units.map((u) => systemd.state(u)));
}

/** Throws UnitFailedError for the first failing unit of `states`. */
function throwIfFailing(states: UnitState[]): void {
  const bad = states.find(isFailing);
  if (bad) throw new UnitFailedError(bad.unit, bad);
}

/** A readiness probe: throws UnitFailedError for the first failing unit, in start order. */
export function unitProbe(systemd: SystemdUser, units: string[]): () => Promise<void> {
  return async () => throwIfFailing(await unitStates(systemd, units));
}

/** "failed (exit-code)", "activating (auto-restart), 1 restart": a unit's state in a few words. */
export function stateWords(s: UnitState): string {
  const what = s.activeState === "failed" ? `failed (${s.result})` : `${s.activeState}${s.subState ? ` (${s.subState})` : ""}`;
  return s.nRestarts > 0 ? `${what}, ${s.nRestarts} restart${s.nRestarts === 1 ? "" : "s"}` : what;
}

/**
 * Lines that explain a failed start: every unit that is not running or was restarted, in start
 * order, then the last lines of the first of them (the one the others depend on: when the
 * namespace owner dies, every component after it goes down too) and of the unit the error names.
 */
export async function describeUnitFailure(systemd: SystemdUser, units: string[], e: unknown): Promise<string[]> {
  const states = await unitStates(systemd, units);
  // (a failing unit is never active: isFailing is within the first test)
  const troubled = states.filter((s) => s.activeState !== "active" || s.nRestarts > 0);
  const named = e instanceof UnitFailedError ? e.unit : null;
  const shown = [...new Set([troubled[0]?.unit, named].filter((u): u is string => !!u))];
  if (!shown.length) return [`(every unit is active; the error was: ${messageOf(e)})`];
  const out = troubled.length
    ? [`units not running or restarted, in start order: ${troubled.map((s) => `${s.unit} ${stateWords(s)}`).join("; ")}`]
    : [];
  for (const unit of shown) {
    const tail = await systemd.unitLogs(unit, 30);
    if (!tail.source) {
      out.push(`${unit}: no log lines found (no journal entries and no log file)`);
      continue;
    }
    out.push(
      `--- last ${tail.lines.length} lines of ${unit} (${tail.source === "journal" ? `journalctl --user -u ${unit} -n 30` : tail.source}) ---`,
      ...tail.lines,
      "---",
    );
  }
  return out;
}

/**
 * Waits until every unit is active (running): a component restarted by systemd while the API
 * server bootstrapped is "activating" for a while after the node is Ready. A failing unit ends the
 * wait at once; one still not active after `timeoutMs` is an error naming it.
 */
export async function waitForUnitsActive(systemd: SystemdUser, units: string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const states = await unitStates(systemd, units);
    throwIfFailing(states);
    const waiting = states.filter((s) => s.activeState !== "active");
    if (waiting.length === 0) return;
    if (Date.now() >= end) {
      throw new UserError(
        `the node is Ready, but ${waiting.map((s) => `${s.unit} (${s.activeState}${s.subState ? `, ${s.subState}` : ""})`).join(", ")} did not become active within ${Math.round(timeoutMs / 1000)} s`,
        { fix: "see the unit's last lines above (rootless-k8s logs COMPONENT); fix the cause, then re-run the same command (it resumes)" },
      );
    }
    await sleep(500, signal);
  }
}
