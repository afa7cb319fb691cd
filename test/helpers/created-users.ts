// The users a test run creates (test/helpers/user.ts lists each one it makes) and their removal at
// the run's end (test/helpers/global-setup.ts): the machine keeps the users and subordinate id
// ranges it had. No vitest import: the global setup loads this outside any test file.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";

/** The file, one per test run, listing the users this run created (set by the global setup). */
export const CREATED_USERS_ENV = "RK8S_TEST_CREATED_USERS";

/** useradd and usermod of parallel test files would collide on /etc/passwd's lock. */
export const USERADD_LOCK = "/tmp/rootless-k8s-test-useradd.lock";

/** Removes a test user, its home and its subordinate id ranges, if it exists (as root). */
export function removeTestUser(name: string): void {
  spawnSync("flock", [USERADD_LOCK, "userdel", "--remove", name], { stdio: "ignore" });
}

/**
 * The run's teardown: removes every user the run created (listed in `file`), with its home and
 * subordinate ids, so the machine keeps the users it had. A user still running a process stays
 * (userdel refuses) and is named.
 */
export function removeCreatedUsers(file: string): string[] {
  let names: string[];
  try {
    names = [...new Set(readFileSync(file, "utf8").split("\n").filter(Boolean))];
  } catch {
    return [];
  }
  const kept: string[] = [];
  for (const n of names) {
    removeTestUser(n);
    if (spawnSync("id", ["-u", n], { stdio: "ignore" }).status === 0) kept.push(n);
  }
  rmSync(file, { force: true });
  return kept;
}
