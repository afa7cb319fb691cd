// Bundles the CLI once per test run (dist/cli.cjs), so CLI tests run the same code the binary runs.
import { execFileSync } from "node:child_process";
import { join } from "node:path";

export default function setup(): void {
  const root = join(import.meta.dirname, "..", "..");
  execFileSync(process.execPath, [join(root, "scripts", "bundle.mjs"), join(root, "dist", "test", "cli.cjs")], {
    stdio: "inherit",
  });
}
