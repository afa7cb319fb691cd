// A real non-root user, for tests that must not run as root: install.sh, self-upgrade, systemd --user
// tools, the install dry run, doctor, removal inside a user namespace. As root the user is created
// once (useradd, under a lock every test file shares), with subordinate ids when asked, and commands
// run as the user through setpriv with exactly the environment given; as a non-root user, commands
// simply run as that user.
import { execFileSync, spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from "node:child_process";
import { chownSync, lchownSync, lstatSync, readdirSync } from "node:fs";
import { CREATED_USERS_ENV, USERADD_LOCK, removeTestUser } from "./created-users";
import { join } from "node:path";
import { runProcess, type ProcessResult } from "./process";
import { tempDir } from "./temp";

export const isRoot = process.getuid?.() === 0;

/** The PATH of an ordinary login: what the user finds (not root's own PATH). */
export const USER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export interface TestUserOptions {
  /** Login shell (default /usr/sbin/nologin). */
  shell?: string;
  /** Create /home/<name> (default: no home folder). */
  home?: boolean;
  /**
   * A 65536-wide range of subordinate uids and gids, added when the user has none: from this start,
   * or "auto": the next free one, by doctor's own rule (cli/host/probes/user.ts nextFreeStart: above
   * every range in /etc/subuid and /etc/subgid, aligned to 65536, never below 100000), picked under
   * the useradd lock so that parallel test files never overlap. A user created here then gets no
   * automatic range besides it.
   */
  subIds?: number | "auto";
}

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  /** The command line that runs `cmd args` as the user with exactly `env`. */
  argv(cmd: string, args: string[], env: Record<string, string>): string[];
  /** Runs a command as the user, to its end, with `env` plus a plain PATH and LC_ALL=C. */
  run(cmd: string, args: string[], env: Record<string, string>, input?: string): SpawnSyncReturns<string>;
  /** Starts a command as the user with exactly `env`, from $HOME (stdin /dev/null, output piped). */
  spawn(cmd: string, args: string[], env: Record<string, string>, opts?: { detached?: boolean }): ChildProcess;
  /** Gives the user a tree the test created (as root). */
  own(dir: string): void;
  /** A fresh empty folder (0700) owned by the user, removed after the test file. */
  newDir(prefix: string): string;
  /** A fresh empty HOME: newDir("<name>-home-"). */
  newHome(): string;
}

export function testUser(name: string, opts: TestUserOptions = {}): TestUser {
  if (isRoot) createUser(name, opts);
  const id = (flag: string) => Number(execFileSync("id", [flag, name], { encoding: "utf8" }).trim());
  const uid = isRoot ? id("-u") : process.getuid!();
  const gid = isRoot ? id("-g") : process.getgid!();
  const argv = (cmd: string, args: string[], env: Record<string, string>) => {
    const asUser = isRoot ? ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups"] : [];
    return [...asUser, "env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), cmd, ...args];
  };
  const own = (dir: string) => {
    if (!isRoot) return;
    lchownSync(dir, uid, gid);
    if (lstatSync(dir).isDirectory()) for (const e of readdirSync(dir)) own(join(dir, e));
  };
  const newDir = (prefix: string) => {
    const dir = tempDir(prefix);
    if (isRoot) chownSync(dir, uid, gid);
    return dir;
  };
  return {
    name,
    uid,
    gid,
    argv,
    run(cmd, args, env, input) {
      const [file, ...rest] = argv(cmd, args, { PATH: USER_PATH, LC_ALL: "C", ...env });
      return spawnSync(file!, rest, { encoding: "utf8", input, timeout: 60_000 });
    },
    spawn(cmd, args, env, o = {}) {
      const [file, ...rest] = argv(cmd, args, env);
      return spawn(file!, rest, {
        env: { PATH: USER_PATH },
        cwd: env.HOME ?? "/",
        stdio: ["ignore", "pipe", "pipe"],
        detached: o.detached ?? false,
      });
    },
    own,
    newDir,
    newHome: () => newDir(`${name}-home-`),
  };
}

/** Runs `cmd args` as `user` (null: as this process's user) with exactly `env`, from `cwd` (default $HOME), collecting its output. */
export function runAs(
  user: TestUser | null,
  cmd: string,
  args: string[],
  env: Record<string, string>,
  opts: { cwd?: string; timeoutMs?: number } = {},
): Promise<ProcessResult> {
  // As the user, `env -i` sets `env` (setpriv and env itself are found on a plain PATH).
  const [file, ...rest] = user ? user.argv(cmd, args, env) : [cmd, ...args];
  return runProcess(file!, rest, {
    env: user ? { PATH: USER_PATH } : env,
    cwd: opts.cwd ?? env.HOME ?? "/",
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
  });
}

export { removeTestUser };

function createUser(name: string, opts: TestUserOptions): void {
  const useradd = [opts.home ? "--create-home" : "--no-create-home", "--shell", opts.shell ?? "/usr/sbin/nologin"];
  if (opts.subIds !== undefined) useradd.push("-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0");
  const range = opts.subIds === undefined ? "" : opts.subIds === "auto" ? "auto" : `${opts.subIds}-${opts.subIds + 65535}`;
  // $0 is the user name, "$@" useradd's options; SUBIDS the range to add when the user has none.
  // A user made here is listed for the run's teardown (test/helpers/global-setup.ts), which removes it.
  const script = [
    'id -u "$0" >/dev/null 2>&1 || { useradd "$@" "$0" && { [ -z "$CREATED" ] || echo "$0" >>"$CREATED"; }; } || exit 1',
    '[ -n "$SUBIDS" ] || exit 0',
    // "auto": nextFreeStart's rule, over both files.
    '[ "$SUBIDS" != auto ] || SUBIDS=$(cat /etc/subuid /etc/subgid 2>/dev/null | awk -F: \'BEGIN { t = 100000 } NF >= 3 && $2 + $3 > t { t = $2 + $3 } END { s = int((t + 65535) / 65536) * 65536; printf "%.0f-%.0f", s, s + 65535 }\')',
    'grep -q "^$0:" /etc/subuid 2>/dev/null || usermod --add-subuids "$SUBIDS" "$0" || exit 1',
    'grep -q "^$0:" /etc/subgid 2>/dev/null || usermod --add-subgids "$SUBIDS" "$0"',
  ].join("\n");
  execFileSync("flock", [USERADD_LOCK, "sh", "-c", script, name, ...useradd], {
    env: { ...process.env, SUBIDS: range, CREATED: process.env[CREATED_USERS_ENV] ?? "" },
    stdio: "pipe",
  });
}
