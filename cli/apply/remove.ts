// Removal primitives. What may be removed at all is judged before any of these run (cli/apply/trust.ts:
// listed by the receipt AND inside the tool's own folders computed from the environment). Files owned
// by sub-UIDs (containers' root filesystems, etcd data written inside the namespace) are removed from
// inside a fresh user namespace mapped with the user's subordinate ids, as `rootlesskit rm -rf` does.
import { spawn } from "node:child_process";
import { promises as fsp } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { InterruptedError, UserError } from "../errors";
import { runCommand } from "../host/host";
import { isWithin } from "./files";

export interface SubIdRange {
  start: number;
  count: number;
}

/** The ranges of /etc/subuid or /etc/subgid text for a user, matched by name or numeric id. */
export function subIdRanges(text: string, name: string, id: number): SubIdRange[] {
  const out: SubIdRange[] = [];
  for (const line of text.split("\n")) {
    const [owner, start, count] = line.trim().split(":");
    if (!owner || owner.startsWith("#") || start === undefined || count === undefined) continue;
    if (owner !== name && owner !== String(id)) continue;
    const s = Number(start);
    const c = Number(count);
    if (Number.isInteger(s) && Number.isInteger(c) && c > 0) out.push({ start: s, count: c });
  }
  return out;
}

export interface UsernsIdentity {
  user: string;
  uid: number;
  gid: number;
  subuids: SubIdRange[];
  subgids: SubIdRange[];
}

/** The current user with the subordinate ids of /etc/subuid and /etc/subgid. */
export async function currentIdentity(): Promise<UsernsIdentity> {
  const info = os.userInfo();
  const [su, sg] = await Promise.all([
    fsp.readFile("/etc/subuid", "utf8").catch(() => ""),
    fsp.readFile("/etc/subgid", "utf8").catch(() => ""),
  ]);
  return {
    user: info.username,
    uid: info.uid,
    gid: info.gid,
    subuids: subIdRanges(su, info.username, info.uid),
    subgids: subIdRanges(sg, info.username, info.uid),
  };
}

/** newuidmap/newgidmap arguments: our id as 0, then the subordinate ranges from 1 on. */
export function idMapArgs(pid: number, own: number, ranges: SubIdRange[]): string[] {
  const args = [String(pid), "0", String(own), "1"];
  let inside = 1;
  for (const r of ranges) {
    args.push(String(inside), String(r.start), String(r.count));
    inside += r.count;
  }
  return args;
}

/**
 * `rm -rf` of `paths` as root of a fresh user namespace that maps our uid to 0 and the subordinate
 * ids above it, so files owned by sub-UIDs can go. The paths must already have passed cli/apply/trust.ts.
 */
export async function removeInUserNamespace(paths: string[], id: UsernsIdentity, signal?: AbortSignal): Promise<void> {
  if (!paths.length) return;
  if (!id.subuids.length || !id.subgids.length) {
    throw new UserError(`cannot remove files owned by sub-UIDs: ${id.user} has no ranges in /etc/subuid and /etc/subgid`, {
      fix: `as root: usermod --add-subuids 100000-165535 --add-subgids 100000-165535 ${id.user}`,
    });
  }
  const child = spawn("unshare", ["--user", "--", "/bin/sh", "-c", 'echo ready; read -r _ && exec rm -rf -- "$@"', "sh", ...paths], {
    stdio: ["pipe", "pipe", "pipe"],
    signal,
  });
  let stderr = "";
  // A failed spawn (no unshare) or an abort arrives as an "error" event: kept here, judged below,
  // so no promise is ever left rejected without a handler.
  const spawned: { error?: NodeJS.ErrnoException } = {};
  child.on("error", (e) => (spawned.error = e));
  child.stdin.on("error", () => {}); // EPIPE when the child is already gone: its exit says why
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const ready = await new Promise<boolean>((resolve) => {
    child.stdout.once("data", () => resolve(true));
    child.once("close", () => resolve(false));
  });
  const interrupted = () => new InterruptedError(`interrupted while removing ${paths.join(" ")}; re-run the same command to finish`);
  if (!ready) {
    await exited;
    if (signal?.aborted) throw interrupted();
    const missing = spawned.error?.code === "ENOENT";
    throw new UserError(
      `could not enter a user namespace to remove ${paths.join(" ")}: ${missing ? "unshare is not installed" : stderr.trim() || "unshare failed"}`,
      {
        fix: missing ? "install util-linux (it provides unshare)" : "check `rootless-k8s doctor` (user namespaces must be allowed)",
      },
    );
  }
  const pid = child.pid ?? 0;
  for (const [tool, own, ranges] of [
    ["newuidmap", id.uid, id.subuids],
    ["newgidmap", id.gid, id.subgids],
  ] as const) {
    const r = await runCommand(tool, idMapArgs(pid, own, ranges), { timeoutMs: 10_000 });
    if (r.code !== 0) {
      child.kill("SIGKILL");
      await exited;
      if (signal?.aborted) throw interrupted();
      throw new UserError(`${tool} failed: ${(r.stderr || r.stdout).trim().split("\n")[0] ?? "not found"}`, {
        fix: "install uidmap (newuidmap/newgidmap, setuid root) and check /etc/subuid and /etc/subgid",
      });
    }
  }
  child.stdin.end("go\n");
  const code = await exited;
  if (signal?.aborted) throw interrupted();
  if (code !== 0) {
    throw new UserError(`removing ${paths.join(" ")} inside the user namespace failed: ${stderr.trim().split("\n")[0] ?? `exit ${code}`}`);
  }
}

function isPermissionError(e: unknown): boolean {
  const c = (e as NodeJS.ErrnoException).code;
  return c === "EACCES" || c === "EPERM" || c === "ENOTEMPTY";
}

/**
 * Removes each path (file or tree). A plain removal first; where it meets files it may not delete
 * (owned by sub-UIDs, or read-only folders), the rest goes from inside the user namespace.
 */
export async function removeTrees(paths: string[], identity: () => Promise<UsernsIdentity>, signal?: AbortSignal): Promise<void> {
  const stubborn: string[] = [];
  for (const p of paths) {
    try {
      await fsp.rm(p, { recursive: true, force: true });
    } catch (e) {
      if (!isPermissionError(e)) throw e;
      stubborn.push(p);
    }
  }
  if (stubborn.length) await removeInUserNamespace(stubborn, await identity(), signal);
}

/** Removes `dir` and then each parent up to (not including) `stopAt`, while they are empty. */
export async function removeEmptyDirs(dir: string, stopAt: string): Promise<void> {
  let cur = path.resolve(dir);
  const stop = path.resolve(stopAt);
  while (cur !== stop && isWithin(cur, stop)) {
    try {
      await fsp.rmdir(cur);
    } catch {
      return;
    }
    cur = path.dirname(cur);
  }
}
