// Bundles the CLI once per test run, so CLI tests run the same code the binary runs. Each run gets
// its own file (several runs may share the tree), announced to the test workers through RK8S_TEST_CLI.
import { execFileSync } from "node:child_process";
import { readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CREATED_USERS_ENV, removeCreatedUsers } from "./created-users";

export default function setup(): () => void {
  const root = join(import.meta.dirname, "..", "..");
  const file = join(root, "dist", "test", `cli-${process.pid}.cjs`);
  execFileSync(process.execPath, [join(root, "scripts", "bundle.mjs"), `${file}.tmp`], { stdio: "inherit" });
  renameSync(`${file}.tmp`, file);
  process.env.RK8S_TEST_CLI = file;
  // The users this run creates (test/helpers/user.ts) are listed here and removed at its end, or
  // when it is interrupted (SIGINT, SIGTERM); a run killed outright leaves its list, which the next
  // run's start sweeps: a second run adds nothing to what the machine had.
  sweepStaleUserLists();
  const users = join(tmpdir(), `${USER_LIST_PREFIX}${process.pid}`);
  rmSync(users, { force: true });
  process.env[CREATED_USERS_ENV] = users;
  const teardown = () => {
    rmSync(file, { force: true });
    const kept = removeCreatedUsers(users);
    if (kept.length) console.error(`test users still running a process, not removed: ${kept.join(", ")} (userdel --remove NAME)`);
  };
  for (const sig of ["SIGINT", "SIGTERM"] as const)
    process.once(sig, () => {
      teardown();
      process.kill(process.pid, sig);
    });
  return teardown;
}

const USER_LIST_PREFIX = "rootless-k8s-test-users-";

/** The lists of earlier runs whose process is gone (killed outright): their users are removed now. */
function sweepStaleUserLists(): void {
  for (const f of readdirSync(tmpdir())) {
    if (!f.startsWith(USER_LIST_PREFIX)) continue;
    const pid = Number(f.slice(USER_LIST_PREFIX.length));
    if (!Number.isInteger(pid) || pid === process.pid || alive(pid)) continue;
    removeCreatedUsers(join(tmpdir(), f));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
