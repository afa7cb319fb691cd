// What a failed start prints: every unit not running (or restarted) in start order, then the logs
// of the first of them and of the unit the error names. The systemd here is an in-memory manager
// holding unit states and log lines, so each case sets exactly the states a real manager reported
// (the CI run of 2026-12-06: the owner restarted by systemd, etcd stopped with it).
import { describe, expect, it } from "vitest";
import type { SystemdUser, UnitState } from "../../../cli/clients/systemd";
import { UnitFailedError, describeUnitFailure, stateWords } from "../../../cli/readiness/watch";

const OWNER = "rootless-k8s-rootlesskit.service";
const ETCD = "rootless-k8s-etcd.service";
const API = "rootless-k8s-kube-apiserver.service";
const ORDER = [OWNER, ETCD, API];

function state(unit: string, s: Partial<UnitState> = {}): UnitState {
  return {
    unit,
    activeState: "active",
    subState: "running",
    result: "success",
    loadState: "loaded",
    mainPid: 1,
    nRestarts: 0,
    needDaemonReload: false,
    ...s,
  };
}

function manager(states: UnitState[], logs: Record<string, string[]>): SystemdUser {
  const byUnit = new Map(states.map((s) => [s.unit, s]));
  const no = () => Promise.reject(new Error("not used here"));
  return {
    run: no,
    ensureReachable: no,
    daemonReload: no,
    enable: no,
    disable: no,
    start: no,
    restart: no,
    stop: no,
    resetFailed: no,
    hasJournal: () => Promise.resolve(false),
    state: (u) => Promise.resolve(byUnit.get(u) ?? state(u, { activeState: "inactive", subState: "dead", loadState: "not-found" })),
    unitLogs: (u, n) => Promise.resolve(logs[u] ? { source: `/logs/${u}.log`, lines: logs[u].slice(-n) } : { source: null, lines: [] }),
  };
}

describe("describeUnitFailure", () => {
  it("names the owner that systemd restarted before the component it took down, with both logs", async () => {
    const etcd = state(ETCD, { activeState: "failed", subState: "failed", result: "exit-code" });
    const systemd = manager([state(OWNER, { nRestarts: 1 }), etcd, state(API)], {
      [OWNER]: ["containerd: fatal"],
      [ETCD]: ["received signal; shutting down"],
    });
    const lines = await describeUnitFailure(systemd, ORDER, new UnitFailedError(ETCD, etcd));
    expect(lines[0]).toBe(
      "units not running or restarted, in start order: rootless-k8s-rootlesskit.service active (running), 1 restart; rootless-k8s-etcd.service failed (exit-code)",
    );
    expect(lines.filter((l) => l.startsWith("--- last"))).toEqual([
      `--- last 1 lines of ${OWNER} (/logs/${OWNER}.log) ---`,
      `--- last 1 lines of ${ETCD} (/logs/${ETCD}.log) ---`,
    ]);
    expect(lines).toContain("containerd: fatal");
    expect(lines).toContain("received signal; shutting down");
  });

  it("without a named unit, shows the first unit not running, once", async () => {
    const systemd = manager(
      [state(OWNER), state(ETCD, { activeState: "inactive", subState: "dead" }), state(API, { activeState: "inactive", subState: "dead" })],
      {
        [ETCD]: Array.from({ length: 40 }, (_, i) => `line ${i}`),
      },
    );
    const lines = await describeUnitFailure(systemd, ORDER, new Error("timed out"));
    expect(lines[0]).toBe(`units not running or restarted, in start order: ${ETCD} inactive (dead); ${API} inactive (dead)`);
    expect(lines[1]).toBe(`--- last 30 lines of ${ETCD} (/logs/${ETCD}.log) ---`);
    expect(lines.at(-2)).toBe("line 39");
    expect(lines.filter((l) => l.startsWith("--- last"))).toHaveLength(1);
  });

  it("says so when every unit runs, with the error", async () => {
    const lines = await describeUnitFailure(
      manager(
        ORDER.map((u) => state(u)),
        {},
      ),
      ORDER,
      new Error("the API server did not answer"),
    );
    expect(lines).toEqual(["(every unit is active; the error was: the API server did not answer)"]);
  });

  it("says where no log line was found", async () => {
    const lines = await describeUnitFailure(
      manager([state(OWNER, { activeState: "failed", result: "signal" })], {}),
      ORDER.slice(0, 1),
      new Error("x"),
    );
    expect(lines).toEqual([
      `units not running or restarted, in start order: ${OWNER} failed (signal)`,
      `${OWNER}: no log lines found (no journal entries and no log file)`,
    ]);
  });
});

describe("stateWords", () => {
  it.each([
    [{ activeState: "failed", result: "start-limit-hit" }, "failed (start-limit-hit)"],
    [{ activeState: "activating", subState: "auto-restart", nRestarts: 2 }, "activating (auto-restart), 2 restarts"],
    [{ activeState: "inactive", subState: "" }, "inactive"],
  ])("%j → %s", (s, words) => {
    expect(stateWords(state("u", s))).toBe(words);
  });
});
