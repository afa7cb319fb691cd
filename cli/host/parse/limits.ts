// The per-user kernel limits a full node meets (issue 45): /proc/key-users (keys held per uid, and
// their quota), /proc/PID/limits (RLIMIT_NPROC: the user's processes and threads together) and a
// process's Threads: line (proc(5), keyrings(7), getrlimit(2)).

/** /proc/key-users: "  1005:     4 4/4 4/200 35/20000": the uid's keys (qnkeys) and its quota (maxkeys); null when the uid holds none yet. */
export function parseKeyUsers(text: string | null, uid: number): { used: number; max: number } | null {
  for (const line of (text ?? "").split("\n")) {
    const m = /^\s*(\d+):\s+\d+\s+\d+\/\d+\s+(\d+)\/(\d+)\s/.exec(line);
    if (m && Number(m[1]) === uid) return { used: Number(m[2]), max: Number(m[3]) };
  }
  return null;
}

/** /proc/PID/limits' "Max processes" soft limit: a number, or null for unlimited; undefined when absent. */
export function parseMaxProcesses(text: string | null): number | null | undefined {
  const m = /^Max processes\s+(\S+)/m.exec(text ?? "");
  if (!m) return undefined;
  return m[1] === "unlimited" ? null : Number(m[1]);
}

/** "Threads:" of /proc/PID/status; 0 when absent. */
export function threadsOf(status: string | null): number {
  const m = /^Threads:\s+(\d+)/m.exec(status ?? "");
  return m ? Number(m[1]) : 0;
}
