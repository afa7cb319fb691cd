// Bundles the CLI once per test run, so CLI tests run the same code the binary runs. Each run gets
// its own file (several runs may share the tree), announced to the test workers through RK8S_TEST_CLI.
import { execFileSync } from "node:child_process";
import { renameSync, rmSync } from "node:fs";
import { join } from "node:path";

export default function setup(): () => void {
  const root = join(import.meta.dirname, "..", "..");
  const file = join(root, "dist", "test", `cli-${process.pid}.cjs`);
  execFileSync(process.execPath, [join(root, "scripts", "bundle.mjs"), `${file}.tmp`], { stdio: "inherit" });
  renameSync(`${file}.tmp`, file);
  process.env.RK8S_TEST_CLI = file;
  return () => rmSync(file, { force: true });
}
