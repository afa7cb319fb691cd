// Under CI, a skipped test is a failure: every test here can run on the CI machine (root, Debian
// packages from .ci/run), so a skip would hide a missing install step. Reads vitest's JSON report.
import { readFileSync } from "node:fs";

const report = JSON.parse(readFileSync(process.argv[2], "utf8"));
const skipped = report.testResults.flatMap((f) =>
  f.assertionResults
    .filter((t) => t.status === "skipped" || t.status === "pending" || t.status === "todo")
    .map((t) => `${f.name.replace(/^.*?\/test\//, "test/")}: ${t.fullName}`),
);
if (skipped.length) {
  console.error(`error: ${skipped.length} test(s) were skipped under CI; each needs something the CI machine lacks:`);
  for (const s of skipped) console.error(`  - ${s}`);
  console.error("fix: install what they need in .ci/run (or make them run without it)");
  process.exit(1);
}
console.log(`no skipped tests (${report.numTotalTests} ran)`);
