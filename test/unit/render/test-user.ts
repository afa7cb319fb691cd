// A non-root user for tests that must not run as root (systemd --user tools, the install dry run).
// As root, the user is created once (useradd) and commands run through setpriv; as a non-root
// user, commands simply run as that user.
import { execFileSync, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { lchownSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  /** Runs a command as the user with exactly this environment (plus a plain PATH). */
  run(cmd: string, args: string[], env: Record<string, string>, input?: string): SpawnSyncReturns<string>;
  /** Gives the user a tree the test created (as root). */
  own(dir: string): void;
}

const isRoot = process.getuid?.() === 0;

export function testUser(name = "rk8s-render"): TestUser {
  if (isRoot && spawnSync("id", [name]).status !== 0) execFileSync("useradd", ["-M", "-s", "/usr/sbin/nologin", name]);
  const uid = isRoot ? Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim()) : process.getuid!();
  const gid = isRoot ? Number(execFileSync("id", ["-g", name], { encoding: "utf8" }).trim()) : process.getgid!();
  const baseEnv = { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" };
  return {
    name,
    uid,
    gid,
    run(cmd, args, env, input) {
      const envArgs = Object.entries({ ...baseEnv, ...env }).map(([k, v]) => `${k}=${v}`);
      const argv = isRoot ? ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "env", "-i", ...envArgs, cmd, ...args] : ["env", "-i", ...envArgs, cmd, ...args];
      return spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", input, timeout: 60_000 });
    },
    own(dir) {
      if (!isRoot) return;
      const walk = (p: string) => {
        lchownSync(p, uid, gid);
        if (lstatSync(p).isDirectory()) for (const e of readdirSync(p)) walk(join(p, e));
      };
      walk(dir);
    },
  };
}
