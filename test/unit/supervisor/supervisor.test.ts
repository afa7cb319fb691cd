// `rootless-k8s up`'s supervisor with real processes: services are sh scripts and a node socket
// server, defined as render/services.ts defines the node's own, in a temporary folder. Checked:
// start order (after, requires) and readiness on a socket; a SIGKILLed service restarted under a new
// pid; the owner's death taking what is PartOf= it down and up again after it; a service that keeps
// failing stopping the node with exit 1 and its last log lines; the environment files and $VAR words;
// the control socket through the client the commands use; a stop leaving no process (a grandchild
// included); and the pid file (a second supervisor refused with the first's pid, a stale one replaced).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { upCall, UP_API, upClient, type UpUnits } from "../../../cli/clients/supervisor";
import type { NodeService, NodeTarget } from "../../../cli/render/services";
import { expandWords, parseEnvironmentFile } from "../../../cli/supervisor/environment";
import { endLeftovers, startTime } from "../../../cli/clients/process-groups";
import { claimPidFile } from "../../../cli/supervisor/pid-file";
import { createSupervisor, type Supervisor } from "../../../cli/supervisor/supervisor";
import { waitFor } from "../../helpers/process";

let dir: string;
let sup: Supervisor | null;
const lines: string[] = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "rk8s-up-"));
  sup = null;
  lines.length = 0;
});
afterEach(async () => {
  if (sup) await sup.stopAll();
  rmSync(dir, { recursive: true, force: true });
});

function service(name: string, exec: NodeService["exec"], o: Partial<NodeService> = {}): NodeService {
  return {
    name,
    description: name,
    documentation: "",
    ready: null,
    pre: [],
    exec,
    post: [],
    requires: [],
    after: [],
    partOf: [],
    restartSec: 0.05,
    startTimeoutSec: 10,
    stopTimeoutSec: 5,
    killMode: "control-group",
    startLimit: { intervalSec: 60, burst: 10 },
    condition: null,
    envFiles: [{ path: path.join(dir, "env"), optional: false }],
    log: path.join(dir, "logs", `${name}.log`),
    stopMarker: null,
    ...o,
  };
}

async function start(services: NodeService[]): Promise<Supervisor> {
  writeFileSync(path.join(dir, "env"), '# the node\'s\nGREETING="hello world"\n');
  const target: NodeTarget = { schema: 1, name: "t.target", node: "n", members: services.map((s) => s.name), timers: [] };
  writeFileSync(path.join(dir, "t.target.json"), JSON.stringify(target));
  for (const s of services) writeFileSync(path.join(dir, `${s.name}.json`), JSON.stringify(s));
  sup = await createSupervisor({
    dir,
    target: "t.target",
    socket: path.join(dir, "up.sock"),
    groups: path.join(dir, "up.groups"),
    env: process.env,
    say: (l) => lines.push(l),
  });
  await sup.listen();
  sup.startAll();
  return sup;
}

const state = (s: Supervisor, unit: string) => s.units().units.find((u) => u.unit === unit)!;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const log = (name: string) => readFileSync(path.join(dir, "logs", `${name}.log`), "utf8");
/** A line appended to a file each time the command runs: the order and the count of starts. */
const marks = () => path.join(dir, "marks");
const mark = (what: string): NodeService["exec"] => ["/bin/sh", "-c", `echo ${what} >>${marks()}; exec sleep 1000`];

describe("rootless-k8s up's supervisor", () => {
  it("starts in order, after a socket answers, and restarts a killed service and what is PartOf= the owner", async () => {
    const sock = path.join(dir, "owner.sock");
    const owner = service(
      "owner",
      // As a runtime does, it removes the socket a killed one left before it listens.
      [
        process.execPath,
        "-e",
        `require("fs").rmSync(${JSON.stringify(sock)}, { force: true }); setTimeout(() => require("net").createServer().listen(${JSON.stringify(sock)}), 300)`,
      ],
      { ready: { socket: sock }, killMode: "mixed" },
    );
    const a = service("a", ["/bin/sh", "-c", `echo "a $GREETING" >>${marks()}; exec sleep 1000`], {
      requires: ["owner"],
      partOf: ["owner"],
    });
    const b = service("b", mark("b"), { requires: ["owner"], after: ["a"], partOf: ["owner"] });
    const s = await start([owner, a, b]);
    await waitFor(() => state(s, "b").activeState === "active", 10_000, "b active");
    // Active once spawned (Type=simple): its shell writes its mark a moment later.
    const marked = (n: number) => () => (existsSync(marks()) ? readFileSync(marks(), "utf8").trim().split("\n").length >= n : false);
    await waitFor(marked(2), 5000, "two marks");
    // (Within one start, the order of the marks is the shells' race: a is active once spawned, and b
    // is started then, maybe before a's shell writes. The start order itself is in the pids below.)
    const round = (lines: string[]) => [...lines].sort();
    expect(round(readFileSync(marks(), "utf8").trim().split("\n"))).toEqual(["a hello world", "b"]);
    expect(state(s, "a").mainPid).toBeLessThan(state(s, "b").mainPid);
    // A service killed by SIGKILL comes back under another pid.
    const bPid = state(s, "b").mainPid;
    process.kill(bPid, "SIGKILL");
    await waitFor(() => state(s, "b").activeState === "active" && state(s, "b").mainPid !== bPid, 10_000, "b back");
    await waitFor(marked(3), 5000, "three marks");
    expect(state(s, "b").nRestarts).toBe(1);
    // The owner killed: a and b stop with it and start again once it is back.
    const ownerPid = state(s, "owner").mainPid;
    const aPid = state(s, "a").mainPid;
    process.kill(ownerPid, "SIGKILL");
    await waitFor(
      () =>
        ["owner", "a", "b"].every((u) => state(s, u).activeState === "active") &&
        state(s, "a").mainPid !== aPid &&
        state(s, "owner").mainPid !== ownerPid,
      15_000,
      () => JSON.stringify(s.units()),
    );
    expect(alive(aPid)).toBe(false);
    await waitFor(marked(5), 5000, "five marks");
    const all = readFileSync(marks(), "utf8").trim().split("\n");
    expect(all.length).toBe(5);
    expect(all[2]).toBe("b"); // b's own restart, before the owner's kill
    expect(round(all.slice(3))).toEqual(["a hello world", "b"]); // both again, after the owner's
  });

  it("starts what a failed first start of the owner dropped, once the owner's restart is up (as the owner's ExecStartPost= does under systemd)", async () => {
    const sock = path.join(dir, "owner.sock");
    const died = path.join(dir, "owner-died-once");
    // Its first start dies before it is ready (a start timeout, a kill); the restart comes up.
    const owner = service(
      "owner",
      [
        process.execPath,
        "-e",
        `const fs = require("fs"); if (!fs.existsSync(${JSON.stringify(died)})) { fs.writeFileSync(${JSON.stringify(died)}, ""); process.exit(1); }
         fs.rmSync(${JSON.stringify(sock)}, { force: true }); require("net").createServer().listen(${JSON.stringify(sock)});`,
      ],
      { ready: { socket: sock }, killMode: "mixed" },
    );
    const a = service("a", mark("a"), { requires: ["owner"], partOf: ["owner"] });
    const b = service("b", mark("b"), { requires: ["owner"], after: ["a"], partOf: ["owner"] });
    const s = await start([owner, a, b]);
    await waitFor(
      () => ["owner", "a", "b"].every((u) => state(s, u).activeState === "active"),
      15_000,
      () => JSON.stringify(s.units()),
    );
    expect(existsSync(died)).toBe(true);
    expect(state(s, "owner").nRestarts).toBe(1);
  });

  it("stops in reverse order and leaves no process, a grandchild included; then exits 0", async () => {
    const s = await start([
      service("first", ["/bin/sh", "-c", `trap "echo first-stopped >>${marks()}; exit 0" TERM; sleep 1000 & wait`]),
      service("second", ["/bin/sh", "-c", `trap "echo second-stopped >>${marks()}; exit 0" TERM; (sleep 1000 &); sleep 1000 & wait`], {
        after: ["first"],
      }),
    ]);
    await waitFor(() => state(s, "second").activeState === "active", 10_000, "second active");
    await new Promise((r) => setTimeout(r, 200));
    const pids = ["first", "second"].map((u) => state(s, u).mainPid);
    await s.stopAll();
    expect(await s.done).toBe(0);
    sup = null;
    expect(readFileSync(marks(), "utf8")).toBe("second-stopped\nfirst-stopped\n");
    for (const p of pids) expect(alive(p)).toBe(false);
    // Every process of both groups is gone (the grandchild `sleep` was in second's group), once
    // the kernel has reaped what the SIGKILL ended.
    const groupGone = (p: number) => {
      try {
        process.kill(-p, 0);
        return false;
      } catch {
        return true;
      }
    };
    await waitFor(() => pids.every(groupGone), 5000, "no process left in the services' groups");
  });

  it("stops the node with exit 1 and the last log lines when a service keeps failing", async () => {
    const s = await start([
      service("steady", ["/bin/sleep", "1000"]),
      service("broken", ["/bin/sh", "-c", "echo 'flag provided but not defined: -bogus' >&2; exit 2"], {
        startLimit: { intervalSec: 60, burst: 3 },
      }),
    ]);
    expect(await s.done).toBe(1);
    sup = null;
    expect(lines.join("\n")).toMatch(/broken failed 3 times in a row: stopping the node/);
    expect(lines.join("\n")).toContain("flag provided but not defined: -bogus");
    expect(s.units().units.find((u) => u.unit === "steady")!.activeState).toBe("inactive");
    expect(log("broken")).toMatch(/gave up after 3 failed starts in a row/);
  });

  it("serves the commands' calls on its socket: state, stop, start, and exits once nothing runs", async () => {
    const s = await start([service("one", ["/bin/sleep", "1000"]), service("two", ["/bin/sleep", "1000"], { after: ["one"] })]);
    const client = upClient({
      plan: { paths: { logDir: path.join(dir, "logs"), runtimeDir: dir, prefix: null } as never, units: {} as never },
      self: ["false"],
    });
    // upPaths puts the socket at <runtimeDir>/up.sock, where this supervisor listens.
    await waitFor(async () => (await client.state("two")).activeState === "active", 10_000, "two active");
    expect((await client.state("t.target")).mainPid).toBe(process.pid);
    await client.stop(["two"]);
    expect((await client.state("two")).activeState).toBe("inactive");
    expect((await client.state("one")).activeState).toBe("active");
    await client.start(["two"]);
    await waitFor(async () => (await client.state("two")).activeState === "active", 10_000, "two again");
    // Killed, it comes back counted as a restart; a restart asked for counts from zero, as systemd's NRestarts.
    process.kill((await client.state("two")).mainPid, "SIGKILL");
    await waitFor(
      async () => (await client.state("two")).nRestarts === 1 && (await client.state("two")).activeState === "active",
      10_000,
      "two restarted",
    );
    await client.restart(["two"]);
    await waitFor(async () => (await client.state("two")).activeState === "active", 10_000, "two restarted on request");
    expect((await client.state("two")).nRestarts).toBe(0);
    const r = await upCall(path.join(dir, "up.sock"), "GET", UP_API.units);
    expect((JSON.parse(r!.body) as UpUnits).units.map((u) => u.unit)).toEqual(["t.target", "one", "two"]);
    await client.stop(["two", "one"]);
    expect(await s.done).toBe(0);
    sup = null;
    // No supervisor: every unit reads inactive, and a stop has nothing to do.
    expect((await client.state("one")).activeState).toBe("inactive");
    await client.stop(["one"]);
  });
});

describe("environment files and words", () => {
  it("reads systemd's EnvironmentFile= format and expands $VAR into words", () => {
    const env = parseEnvironmentFile("# c\n; c\nA=1\nB=\"two words\"\nC='$x'\nexport D=4\nnot a line\n");
    expect(env).toEqual({ A: "1", B: "two words", C: "$x", D: "4" });
    expect(expandWords(["run", { variable: "B" }, { variable: "UNSET" }, "end"], env)).toEqual(["run", "two", "words", "end"]);
  });
});

describe("the pid file", () => {
  it("refuses a second supervisor with the first one's pid, and replaces a stale one", async () => {
    const file = path.join(dir, "up.pid");
    // A live process that is not a supervisor, and a pid that is not running: both stale.
    writeFileSync(file, "999999999\n");
    const c = await claimPidFile(file, "n");
    expect(c.stale).toBe(999999999);
    expect(readFileSync(file, "utf8")).toBe(`${process.pid}\n`);
    await c.release();
    // This test process counts as a supervisor when its command line has `up`; vitest's has not:
    // the refusal is checked with a real `up` in the e2e (test/e2e/scenarios/up.sh).
    writeFileSync(file, `${process.pid}\n`);
    const again = await claimPidFile(file, "n");
    expect(again.stale).toBe(process.pid);
    await again.release();
  });
});

describe("what a supervisor killed outright leaves", () => {
  it("is recorded as it runs, and ended by the next up: the recorded groups, never a pid reused since", async () => {
    const s = await start([service("kept", ["/bin/sh", "-c", "sleep 1000 & exec sleep 1000"])]);
    await waitFor(() => state(s, "kept").activeState === "active", 10_000, "kept active");
    const pid = state(s, "kept").mainPid;
    const recorded = JSON.parse(readFileSync(path.join(dir, "up.groups"), "utf8"));
    expect(recorded).toEqual([{ unit: "kept", pid, start: startTime(pid) }]);
    // A process of ours under a recorded pid, but started at another time: not the service, kept.
    const other = spawn("/bin/sleep", ["1000"], { detached: true, stdio: "ignore" });
    const file = path.join(dir, "left.groups");
    writeFileSync(file, JSON.stringify([...recorded, { unit: "reused", pid: other.pid, start: "1" }]));
    expect(await endLeftovers(file)).toEqual(["kept"]);
    const groupGone = () => {
      try {
        process.kill(-pid, 0);
        return false;
      } catch {
        return true;
      }
    };
    // (the kernel reaps what the SIGKILL ended a moment later)
    await waitFor(groupGone, 5000, `no process left in the group ${pid}`);
    expect(alive(other.pid!)).toBe(true);
    other.kill("SIGKILL");
    expect(existsSync(file)).toBe(false);
  });
});
