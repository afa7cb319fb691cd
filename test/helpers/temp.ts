// Temporary folders for tests: fresh under the system temp dir, removed when the test file is done.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

const made: string[] = [];

/** A fresh empty folder (mode 0700), removed with everything in it after the test file's last test. */
export function tempDir(prefix = "rk8s-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

afterAll(() => {
  if (process.env.KEEP) return console.log(`KEEP: left ${made.join(" ")}`);
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});
