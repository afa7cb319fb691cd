// Bundles the CLI once per test run, so CLI tests run the same code the binary runs. Each run gets
// its own file (several runs may share the tree), announced to the test workers through RK8S_TEST_CLI.
import { execFileSync } from "node:child_process";
import { renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CREATED_USERS_ENV, removeCreatedUsers } from "./created-users";

export default function setup(): () => void {
  const root = join(import.meta.dirname, "..", "..");
  const file = join(root, "dist", "test", `cli-${process.pid}.cjs`);
  execFileSync(process.execPath, [join(root, "scripts", "bundle.mjs"), `${file}.tmp`], { stdio: "inherit" });
  renameSync(`${file}.tmp`, file);
  process.env.RK8S_TEST_CLI = file;
  // The users this run creates (test/helpers/user.ts) are listed here and removed at its end.
  const users = join(tmpdir(), `rootless-k8s-test-users-${process.pid}`);
  rmSync(users, { force: true });
  process.env[CREATED_USERS_ENV] = users;
  return () => {
    rmSync(file, { force: true });
    const kept = removeCreatedUsers(users);
    if (kept.length) console.error(`test users still running a process, not removed: ${kept.join(", ")} (userdel --remove NAME)`);
  };
}
