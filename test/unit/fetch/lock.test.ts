// The lock between runs, with real processes: a live holder refuses a second run (exit 6), a
// holder killed with SIGKILL is taken over at once, a stale heartbeat is taken over, and
// release never removes a lock that someone else now holds.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { acquireInstallLock, acquireLock, defaultInstallLockDir } from "../../../cli/fetch/lock";
import { userErrorOf } from "../../helpers/errors";
import { tempDir } from "../../helpers/temp";

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

/** Starts a process that takes the lock and keeps it; resolves once it holds it. */
function holder(dir: string, heartbeatMs = 5000): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(import.meta.dirname, "helpers", "hold-lock.ts"), dir, String(heartbeatMs)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => d.toString().startsWith("locked") && resolve(child));
    child.on("exit", (code) => reject(new Error(`holder exited with ${code}`)));
  });
}

/**
 * Resolves once every thread of `pid` is stopped (SIGSTOP is delivered asynchronously: a heartbeat
 * the holder's thread pool is writing at that moment still lands).
 */
async function stopped(pid: number): Promise<void> {
  const state = (t: string) => readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8").replace(/^.*\) /s, "")[0];
  for (let i = 0; i < 500; i++) {
    if (readdirSync(`/proc/${pid}/task`).every((t) => state(t) === "T" || state(t) === "t")) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`pid ${pid} did not stop`);
}

describe("locks", () => {
  it("refuses a second run while the holder lives, naming it (exit 6)", async () => {
    const dir = join(tempDir(), "install.lock");
    const child = await holder(dir);
    const e = await userErrorOf(acquireLock(dir, { purpose: "second run" }));
    expect(e.exitCode).toBe(6);
    expect(e.message).toContain(`lock test holder (pid ${child.pid} on `);
    expect(e.fix).toContain("taken over automatically");
  });

  it("takes over the lock of a holder killed with SIGKILL at once", async () => {
    const dir = join(tempDir(), "install.lock");
    const child = await holder(dir);
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const lock = await acquireLock(dir, { purpose: "next run" });
    expect(lock.tookOver?.pid).toBe(child.pid);
    expect(JSON.parse(readFileSync(join(dir, "owner.json"), "utf8")).pid).toBe(process.pid);
    await lock.release();
    expect(existsSync(dir)).toBe(false);
  });

  it("keeps the heartbeat fresh, and takes over a lock whose heartbeat is stale", async () => {
    const dir = join(tempDir(), "install.lock");
    const child = await holder(dir, 50);
    const beat = join(dir, "heartbeat");
    utimesSync(beat, new Date(0), new Date(0));
    await new Promise((r) => setTimeout(r, 200));
    expect(Date.now() - statSync(beat).mtimeMs).toBeLessThan(5_000); // refreshed by the holder
    child.kill("SIGSTOP"); // alive but silent, as a holder on another host would look
    try {
      await stopped(child.pid!);
      utimesSync(beat, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
      const lock = await acquireLock(dir, { purpose: "next run", staleMs: 30_000 });
      expect(lock.tookOver?.pid).toBe(child.pid);
      await lock.release();
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("takes over a lock left by another host once its heartbeat is stale, not before", async () => {
    const dir = join(tempDir(), "install.lock");
    mkdirSync(dir);
    writeFileSync(
      join(dir, "owner.json"),
      JSON.stringify({ pid: 1, hostname: "elsewhere", purpose: "rootless-k8s install", startedAt: "2026-01-01T00:00:00Z", token: "t" }),
    );
    writeFileSync(join(dir, "heartbeat"), "");
    const e = await userErrorOf(acquireLock(dir, { purpose: "here" }));
    expect(e.message).toContain("pid 1 on elsewhere");
    const old = new Date(Date.now() - 120_000);
    utimesSync(join(dir, "heartbeat"), old, old);
    const lock = await acquireLock(dir, { purpose: "here" });
    expect(lock.tookOver?.hostname).toBe("elsewhere");
    await lock.release();
  });

  it("does not remove a lock that was taken over from it", async () => {
    const dir = join(tempDir(), "install.lock");
    const first = await acquireLock(dir, { purpose: "first" });
    const old = new Date(Date.now() - 120_000);
    utimesSync(join(dir, "heartbeat"), old, old);
    const second = await acquireLock(dir, { purpose: "second", staleMs: 1_000 });
    await first.release();
    expect(JSON.parse(readFileSync(join(dir, "owner.json"), "utf8")).purpose).toBe("second");
    await second.release();
    expect(existsSync(dir)).toBe(false);
  });

  it("leaves no trace: a folder made only for the lock goes with it; one that was there, or is not empty, stays", async () => {
    const base = tempDir();
    const made = await acquireLock(join(base, "share", "rootless-k8s", "install.lock"), { purpose: "made" });
    await made.release();
    expect(existsSync(join(base, "share", "rootless-k8s"))).toBe(false);
    mkdirSync(join(base, "there"));
    const there = await acquireLock(join(base, "there", "install.lock"), { purpose: "there" });
    await there.release();
    expect(existsSync(join(base, "there"))).toBe(true);
    const filled = await acquireLock(join(base, "filled", "install.lock"), { purpose: "filled" });
    writeFileSync(join(base, "filled", "receipt.json"), "{}");
    await filled.release();
    expect(existsSync(join(base, "filled", "receipt.json"))).toBe(true);
  });

  it("puts the install lock under XDG_DATA_HOME, private to the user", async () => {
    const home = tempDir();
    expect(defaultInstallLockDir({ HOME: home })).toBe(join(home, ".local", "share", "rootless-k8s", "install.lock"));
    expect(defaultInstallLockDir({ HOME: home, XDG_DATA_HOME: "/data" })).toBe("/data/rootless-k8s/install.lock");
    const lock = await acquireInstallLock({ env: { HOME: home } });
    expect(statSync(lock.dir).mode & 0o777).toBe(0o700);
    const e = await userErrorOf(acquireInstallLock({ env: { HOME: home }, purpose: "rootless-k8s upgrade" }));
    expect(e.message).toContain("rootless-k8s install (pid");
    await lock.release();
  });
});
