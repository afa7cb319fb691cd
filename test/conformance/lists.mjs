// The conformance lists: focus.txt and ci.txt hold a test name a line, as ginkgo prints it;
// skips.txt and expected-none.txt a name, a tab, the reason. Comments (#) and blank lines are ignored.
import { readFileSync } from "node:fs";

/** name → reason */
export function readReasons(file) {
  const m = new Map();
  for (const [i, line] of readFileSync(file, "utf8").split("\n").entries()) {
    if (!line.trim() || line.startsWith("#")) continue;
    const tab = line.indexOf("\t");
    if (tab < 0) throw new Error(`${file}:${i + 1}: no tab between the test name and its reason`);
    m.set(line.slice(0, tab).trim(), line.slice(tab + 1).trim());
  }
  return m;
}

/** The names of a list (comments and blank lines dropped). */
export function readNames(file) {
  return readFileSync(file, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
}
