// What a failed start prints: every unit not running (or restarted) in start order, then the logs
// of the first of them and of the unit the error names. The systemd here is an in-memory manager
// holding unit states and log lines, so each case sets exactly the states a real manager reported
// (the CI run of 2026-12-06: the owner restarted by systemd, etcd stopped with it).
import { afterEach, describe, expect, it, vi } from "vitest";
import type { SystemdUser, UnitState } from "../../../cli/clients/systemd";
import {
  REVIVE_EVERY_MS,
  UnitFailedError,
  describeUnitFailure,
  reviver,
  stateWords,
  unitProbe,
  waitForUnitsActive,
} from "../../../cli/readiness/watch";

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

const TARGET = "rootless-k8s.target";

/**
 * A manager after the owner died during a start and systemd restarted it: the owner active, the
 * units whose start jobs were dropped inactive with no job, those in `queued` inactive with a job,
 * the rest of ORDER active.
 * Starting the target queues a job for each inactive unit; the next read finds them active.
 */
function afterOwnerRestart(dropped: string[], queued: string[] = []) {
  const states = new Map<string, UnitState>(ORDER.map((u) => [u, state(u)]));
  states.set(OWNER, state(OWNER, { nRestarts: 1 }));
  for (const u of [...dropped, ...queued]) states.set(u, state(u, { activeState: "inactive", subState: "dead", mainPid: 0 }));
  const jobs = new Set(queued);
  const calls: string[] = [];
  let pending: string[] = [];
  const no = () => Promise.reject(new Error("not used here"));
  const systemd: SystemdUser = {
    ...manager([], {}),
    start: async (units) => {
      calls.push(`start ${units.join(" ")}`);
      pending = [...states.values()].filter((s) => s.activeState === "inactive").map((s) => s.unit);
      for (const u of pending) jobs.add(u);
    },
    restart: no,
    queued: async () => new Set(jobs),
    state: async (u) => {
      if (pending.includes(u)) {
        states.set(u, state(u));
        jobs.delete(u);
      }
      return states.get(u) ?? state(u, { activeState: "inactive", subState: "dead", loadState: "not-found" });
    },
  };
  return { systemd, calls };
}

describe("the reviver: a start whose queued jobs the owner's restart dropped", () => {
  afterEach(() => vi.useRealTimers());
  const said: string[] = [];
  const node = { units: { target: TARGET } };

  it("starts the target again for units inactive with no job, names them, and the wait ends", async () => {
    const { systemd, calls } = afterOwnerRestart([ETCD, API]);
    said.length = 0;
    await waitForUnitsActive(
      systemd,
      ORDER,
      5_000,
      undefined,
      reviver(node, (l) => said.push(l)),
    );
    expect(calls).toEqual([`start ${TARGET}`]);
    expect(said).toEqual([`${ETCD}, ${API} dropped from the start (a unit it needs failed or restarted): starting ${TARGET} again`]);
  });

  it("leaves alone a unit whose start job is still queued (waiting for the one before it)", async () => {
    const { systemd, calls } = afterOwnerRestart([], [API]);
    const probe = unitProbe(
      systemd,
      ORDER,
      reviver(node, (l) => said.push(l)),
    );
    await probe();
    await probe();
    expect(calls).toEqual([]);
  });

  it("without a reviver, a dropped unit is waited for until the timeout, and named", async () => {
    const { systemd, calls } = afterOwnerRestart([ETCD]);
    await expect(waitForUnitsActive(systemd, ORDER, 600)).rejects.toThrow(`${ETCD} (inactive, dead) did not become active within 1 s`);
    expect(calls).toEqual([]);
  });

  it("starts the target at most every REVIVE_EVERY_MS, however often it is probed", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const { systemd, calls } = afterOwnerRestart([ETCD]);
    // The start does not take: the unit is dropped again (its owner restarted once more).
    systemd.start = async (units) => {
      calls.push(`start ${units.join(" ")}`);
    };
    const probe = unitProbe(
      systemd,
      ORDER,
      reviver(node, () => {}),
    );
    for (let i = 0; i < 10; i++) {
      await probe();
      vi.setSystemTime(Date.now() + REVIVE_EVERY_MS / 4);
    }
    // 10 probes over 2.5 × REVIVE_EVERY_MS: at 0, 1× and 2×.
    expect(calls).toHaveLength(3);
  });

  it("does nothing where the manager cannot list its jobs (the up supervisor)", async () => {
    const { systemd, calls } = afterOwnerRestart([ETCD]);
    systemd.queued = undefined;
    await unitProbe(
      systemd,
      ORDER,
      reviver(node, () => {}),
    )();
    expect(calls).toEqual([]);
  });
});
