// The pid file of `rootless-k8s up`: one supervisor per node. It is created with O_EXCL, so two
// starts at the same moment cannot both take it; one left by a supervisor that is gone (killed,
// or a reboot of a host whose runtime folder is not a tmpfs) is recognised and replaced.
import { constants, promises as fsp, readFileSync } from "node:fs";
import * as path from "node:path";
import { ExitCode, UserError } from "../errors";

export type Claim = { release(): Promise<void>; stale: number | null };

/** Whether `pid` runs `rootless-k8s up` (its command line has `up`), not a pid the kernel gave to another process since. */
export function isSupervisor(pid: number): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    // This tool (the binary, or node running its bundle) with `up`: not any program's `up` (docker compose up).
    return argv.includes("up") && argv.some((a) => /^rootless-k8s|^cli[^/]*\.cjs$/.test(path.basename(a)));
  } catch {
    return false;
  }
}

export async function readPid(file: string): Promise<number | null> {
  const text = await fsp.readFile(file, "utf8").catch(() => null);
  const pid = Number(text?.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** The refusal of a second `up` of a node, naming the supervisor that runs it. */
export function alreadyRunning(node: string, pid: number): UserError {
  return new UserError(`the node ${node} is already run by rootless-k8s up (pid ${pid})`, {
    exitCode: ExitCode.Refused,
    fix: `\`rootless-k8s status\` shows it; \`rootless-k8s stop\` (or kill ${pid}) stops it`,
  });
}

/** Takes the pid file for this process, or refuses (exit 3) with the pid of the supervisor that runs. */
export async function claimPidFile(file: string, node: string): Promise<Claim> {
  let stale: number | null = null;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await fsp.open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      await fh.writeFile(`${process.pid}\n`);
      await fh.close();
      return {
        stale,
        async release() {
          if ((await readPid(file)) === process.pid) await fsp.rm(file, { force: true });
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const pid = await readPid(file);
    if (pid !== null && pid !== process.pid && isSupervisor(pid)) throw alreadyRunning(node, pid);
    stale = pid ?? 0;
    // Removed only while it still names that pid (another `up` may have just replaced it).
    if ((await readPid(file)) === pid) await fsp.rm(file, { force: true });
  }
  throw new UserError(`cannot take ${file}: another rootless-k8s up took it at the same moment`, { exitCode: ExitCode.Refused });
}
