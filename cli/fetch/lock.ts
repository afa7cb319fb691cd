// Locks between rootless-k8s runs: one folder per lock, made atomically (a filled temporary folder
// renamed into place), holding owner.json and a heartbeat file whose mtime the holder refreshes.
// A lock is taken over when its holder is gone: a dead pid on this host, or a heartbeat older
// than staleMs (holder crashed on another host sharing the home, or the pid was reused).
import { randomBytes } from "node:crypto";
import { promises as fsp } from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import { ExitCode, UserError } from "../errors";
import { toolDir } from "../xdg";

export interface LockOwner {
  pid: number;
  hostname: string;
  /** What the holder is doing, e.g. "rootless-k8s install". */
  purpose: string;
  startedAt: string;
  token: string;
}

export interface LockOptions {
  /** Shown to a second run that finds the lock held. */
  purpose: string;
  heartbeatMs?: number;
  staleMs?: number;
}

export interface LockHandle {
  readonly dir: string;
  readonly owner: LockOwner;
  /** True when a crashed holder's lock was taken over. */
  readonly tookOver: LockOwner | null;
  release(): Promise<void>;
}

export const LOCK_DEFAULTS = { heartbeatMs: 5_000, staleMs: 30_000 } as const;

/** The install lock's folder: <XDG_DATA_HOME or ~/.local/share>/rootless-k8s/install.lock. */
export function defaultInstallLockDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(toolDir(env, "XDG_DATA_HOME"), "install.lock");
}

/** Takes the install lock (see defaultInstallLockDir); UserError with exit code 6 when another run holds it. */
export function acquireInstallLock(
  opts: { dir?: string; purpose?: string; env?: NodeJS.ProcessEnv } & Partial<LockOptions> = {},
): Promise<LockHandle> {
  return acquireLock(opts.dir ?? defaultInstallLockDir(opts.env), {
    purpose: opts.purpose ?? "rootless-k8s install",
    ...(opts.heartbeatMs ? { heartbeatMs: opts.heartbeatMs } : {}),
    ...(opts.staleMs ? { staleMs: opts.staleMs } : {}),
  });
}

export async function acquireLock(dir: string, opts: LockOptions): Promise<LockHandle> {
  const heartbeatMs = opts.heartbeatMs ?? LOCK_DEFAULTS.heartbeatMs;
  const staleMs = opts.staleMs ?? LOCK_DEFAULTS.staleMs;
  const owner: LockOwner = {
    pid: process.pid,
    hostname: hostname(),
    purpose: opts.purpose,
    startedAt: new Date().toISOString(),
    token: randomBytes(8).toString("hex"),
  };
  // A folder made here only for the lock (a --prefix node's ~/.local/share/rootless-k8s) goes with it.
  const madeParent = (await fsp.mkdir(dirname(dir), { recursive: true, mode: 0o700 })) !== undefined;
  let tookOver: LockOwner | null = null;
  for (let round = 0; round < 5; round++) {
    if (await tryCreate(dir, owner)) return startHeartbeat(dir, owner, tookOver, heartbeatMs, madeParent);
    const held = await inspect(dir);
    if (!held) continue; // released or taken in the meantime: try again
    if (!isStale(held, staleMs)) throw lockedError(dir, held.owner);
    // Move the stale lock aside (rename is atomic: only one taker wins), then remove it.
    const aside = `${dir}.stale-${owner.token}`;
    try {
      await fsp.rename(dir, aside);
    } catch {
      continue;
    }
    tookOver = held.owner;
    await fsp.rm(aside, { recursive: true, force: true });
  }
  const held = await inspect(dir);
  throw lockedError(dir, held?.owner ?? null);
}

async function tryCreate(dir: string, owner: LockOwner): Promise<boolean> {
  const tmp = join(dirname(dir), `.${basename(dir)}.new-${owner.token}`);
  await fsp.mkdir(tmp, { mode: 0o700 });
  try {
    await fsp.writeFile(join(tmp, "owner.json"), JSON.stringify(owner) + "\n", { mode: 0o600 });
    await fsp.writeFile(join(tmp, "heartbeat"), "", { mode: 0o600 });
    // rename() of a directory fails with EEXIST/ENOTEMPTY when the lock folder exists (it is never empty).
    await fsp.rename(tmp, dir);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || code === "ENOTEMPTY") return false;
    throw e;
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
}

interface HeldLock {
  owner: LockOwner | null;
  /** ms since the last heartbeat (or since the folder appeared, when owner.json is unreadable). */
  age: number;
}

async function inspect(dir: string): Promise<HeldLock | null> {
  const st = await fsp.stat(join(dir, "heartbeat")).catch(() => fsp.stat(dir).catch(() => null));
  if (!st) return null;
  let owner: LockOwner | null = null;
  try {
    owner = JSON.parse(await fsp.readFile(join(dir, "owner.json"), "utf8")) as LockOwner;
  } catch {
    owner = null;
  }
  return { owner, age: Date.now() - st.mtimeMs };
}

function isStale(held: HeldLock, staleMs: number): boolean {
  if (held.age > staleMs) return true;
  const o = held.owner;
  return o !== null && o.hostname === hostname() && !pidAlive(o.pid);
}

export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function startHeartbeat(dir: string, owner: LockOwner, tookOver: LockOwner | null, heartbeatMs: number, madeParent: boolean): LockHandle {
  const beat = join(dir, "heartbeat");
  const timer = setInterval(() => {
    const now = new Date();
    fsp.utimes(beat, now, now).catch(() => undefined);
  }, heartbeatMs);
  timer.unref();
  let released = false;
  return {
    dir,
    owner,
    tookOver,
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      // Remove the folder only if it is still ours (it may have been taken over after a long stall).
      const held = await inspect(dir);
      if (held?.owner?.token !== owner.token) return;
      const aside = `${dir}.released-${owner.token}`;
      await fsp.rename(dir, aside).catch(() => undefined);
      await fsp.rm(aside, { recursive: true, force: true });
      if (madeParent) await fsp.rmdir(dirname(dir)).catch(() => undefined); // only when nothing else is in it
    },
  };
}

function lockedError(dir: string, owner: LockOwner | null): UserError {
  const who = owner ? `${owner.purpose} (pid ${owner.pid} on ${owner.hostname}, since ${owner.startedAt})` : "another rootless-k8s run";
  return new UserError(`${who} holds the lock ${dir}`, {
    exitCode: ExitCode.Locked,
    fix: "wait for it to finish and re-run; a lock whose holder crashed is taken over automatically",
  });
}
