// The process groups of the services `rootless-k8s up` runs, and what a supervisor that is gone
// (killed outright, or its terminal closed) leaves: its services' groups, still running with nothing
// watching them. systemd would find them in the unit's cgroup; `up` keeps their main pids, with
// each one's start time (so that a pid the kernel gave to another process since is never taken for
// ours), in a file of the runtime folder; the next `up`, and a `stop` that finds no supervisor, end
// them (RootlessKit's group ending ends the node's namespaces and every process in them).
import { promises as fsp, readFileSync, writeFileSync, renameSync } from "node:fs";

/** SIGNAL to every process of the group led by `pid` (a service's main process leads its own). */
export function killGroup(pid: number | undefined, sig: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, sig);
  } catch {
    // ESRCH: the group is gone already.
  }
}

export interface Group {
  unit: string;
  pid: number;
  /** Field 22 of /proc/PID/stat: the process's start time in clock ticks after boot. */
  start: string;
}

/** The start time of a process, or null when it is gone. */
export function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // comm (field 2) may hold spaces and parentheses: fields count from the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

/** Records the running services' groups (written whole, then renamed: never half a file). */
export function recordGroups(file: string, running: readonly { unit: string; mainPid: number }[]): void {
  const groups: Group[] = [];
  for (const r of running) {
    const start = r.mainPid ? startTime(r.mainPid) : null;
    if (start) groups.push({ unit: r.unit, pid: r.mainPid, start });
  }
  try {
    writeFileSync(`${file}.tmp`, `${JSON.stringify(groups)}\n`, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  } catch {
    // The runtime folder is gone (uninstall): nothing left to record for.
  }
}

/** Ends the groups a gone supervisor recorded that still run as they were; returns their units. */
export async function endLeftovers(file: string): Promise<string[]> {
  const text = await fsp.readFile(file, "utf8").catch(() => null);
  if (text === null) return [];
  let groups: Group[] = [];
  try {
    groups = JSON.parse(text) as Group[];
  } catch {
    groups = [];
  }
  const ended: string[] = [];
  for (const g of Array.isArray(groups) ? groups : []) {
    if (!Number.isInteger(g.pid) || g.pid <= 1 || startTime(g.pid) !== g.start) continue;
    killGroup(g.pid, "SIGKILL");
    ended.push(g.unit);
  }
  // Their ports and sockets are free once they are gone: wait for that (a few seconds at most).
  for (const end = Date.now() + 5000; Date.now() < end; await new Promise((r) => setTimeout(r, 50)))
    if (groups.every((g) => startTime(g.pid) !== g.start)) break;
  await fsp.rm(file, { force: true });
  return ended;
}
