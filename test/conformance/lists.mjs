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

/** A regular expression that matches exactly these ginkgo names (RE2: every metacharacter escaped). */
export function focusRegex(names) {
  return names.map((n) => n.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&")).join("|");
}

/**
 * Shard K of N of a list ("2/5"): the names at positions K-1, K-1+N, K-1+2N, ... in the list's
 * order, so each shard takes a like share of every SIG. The N shards together are the list, each
 * name in exactly one. Throws on a spec that is not K/N with 1 <= K <= N.
 */
export function shardOf(names, spec) {
  const m = /^(\d+)\/(\d+)$/.exec(spec);
  const k = m ? Number(m[1]) : 0;
  const n = m ? Number(m[2]) : 0;
  if (!m || k < 1 || k > n) throw new Error(`shard ${JSON.stringify(spec)}: K/N with 1 <= K <= N, e.g. 1/5`);
  return names.filter((_, i) => i % n === k - 1);
}
