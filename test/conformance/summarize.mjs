// Reads the JUnit report of a conformance run and tells, for the tests of one list, what passed,
// failed and was skipped, each failure and skip with its reason:
//
//   node summarize.mjs --junit FILE --list LIST.txt --skips skips.txt [--skips one-node.txt]
//                      [--expected expected-none.txt] --route host --mode none [--nodes N] [--shard K/N]
//                      [--json OUT.json]
//
// A test of the list that ginkgo did not report at all counts as failed ("not run"). A failure
// named in --expected (mode none: what no resource isolation gives up) is reported with that reason
// and does not fail the run; a skip must come from skips.txt (a missing image) or from the suite
// itself (its message is printed); --skips may be given more than once (one-node.txt only when the
// cluster has one node). Last line: "conformance (ROUTE, mode MODE[, N nodes][, shard K/N]): N passed,
// N failed, N skipped" (the node count when --nodes is more than 1; the shard the list is, if one). Exit status 0 when every failure was expected, 1 otherwise, 2 on bad usage.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readNames, readReasons } from "./lists.mjs";

const unxml = (s) =>
  s.replace(/&(lt|gt|quot|apos|amp|#39|#34|#x[0-9a-fA-F]+|#\d+);/g, (_, e) =>
    e === "lt"
      ? "<"
      : e === "gt"
        ? ">"
        : e === "quot" || e === "#34"
          ? '"'
          : e === "apos" || e === "#39"
            ? "'"
            : e === "amp"
              ? "&"
              : String.fromCodePoint(e[1] === "x" ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1))),
  );

/** The test cases of a ginkgo JUnit report: name (without ginkgo's "[It] "), status, seconds, message. */
export function readJunit(xml) {
  const cases = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attr = (a, s = m[1]) => {
      const r = new RegExp(`\\b${a}="([^"]*)"`).exec(s);
      return r ? unxml(r[1]) : "";
    };
    const body = m[3] ?? "";
    const failure = /<(failure|error)\b([^>]*)>/.exec(body);
    const skipped = /<skipped\b([^>]*)\/?>/.exec(body);
    const status = attr("status") || (failure ? "failed" : skipped ? "skipped" : "passed");
    const message = failure ? attr("message", failure[2]) : skipped ? attr("message", skipped[1]) : "";
    cases.push({ name: attr("name").replace(/^\[It\] /, ""), status, seconds: Number(attr("time") || 0), message });
  }
  return cases;
}

export function summarize({ cases, names, skips, expected = new Map() }) {
  // ginkgo's JUnit names end in the spec's labels ("... [Conformance] [sig-node, Conformance]").
  const byName = new Map(cases.map((c) => [c.name, c]));
  const find = (name) => byName.get(name) ?? cases.find((c) => c.name.startsWith(`${name} [`));
  const rows = names.map((name) => {
    const c = find(name);
    if (!c) return { name, status: "failed", reason: "not run: ginkgo reported no such test (the list and the suite's version differ?)" };
    if (c.status === "passed") return { name, status: "passed", seconds: c.seconds };
    if (c.status === "skipped" || c.status === "pending")
      return { name, status: "skipped", reason: skips.get(name) ?? `the suite skipped it: ${c.message.split("\n")[0]}` };
    const why = expected.get(name);
    return {
      name,
      status: "failed",
      expected: Boolean(why),
      reason: why ?? c.message.split("\n").find((l) => l.trim()) ?? c.status,
      seconds: c.seconds,
    };
  });
  const count = (s) => rows.filter((r) => r.status === s).length;
  return {
    rows,
    passed: count("passed"),
    failed: count("failed"),
    skipped: count("skipped"),
    unexpected: rows.filter((r) => r.status === "failed" && !r.expected),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      junit: { type: "string" },
      list: { type: "string" },
      skips: { type: "string", multiple: true },
      nodes: { type: "string" },
      shard: { type: "string" },
      expected: { type: "string" },
      route: { type: "string" },
      mode: { type: "string" },
      json: { type: "string" },
    },
  });
  const nodes = Number(values.nodes ?? 1);
  if (!values.junit || !values.list || !values.skips?.length || !values.route || !values.mode || !(nodes >= 1)) {
    console.error(
      "usage: summarize.mjs --junit FILE --list LIST.txt --skips skips.txt [--skips FILE] [--expected FILE] --route R --mode M [--nodes N] [--shard K/N] [--json OUT]",
    );
    process.exit(2);
  }
  const s = summarize({
    cases: readJunit(readFileSync(values.junit, "utf8")),
    names: readNames(values.list),
    skips: new Map(values.skips.flatMap((f) => [...readReasons(f)])),
    expected: values.expected ? readReasons(values.expected) : new Map(),
  });
  for (const r of s.rows.filter((x) => x.status !== "passed"))
    console.log(`${r.status === "skipped" ? "skipped" : r.expected ? "failed, expected" : "FAILED"}: ${r.name}\n    ${r.reason}`);
  const on = `${nodes > 1 ? `, ${nodes} nodes` : ""}${values.shard ? `, shard ${values.shard}` : ""}`;
  const line = `conformance (${values.route}, mode ${values.mode}${on}): ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped`;
  if (values.json)
    writeFileSync(
      values.json,
      `${JSON.stringify({ route: values.route, mode: values.mode, nodes, shard: values.shard ?? null, ...s, line }, null, 2)}\n`,
    );
  console.log(line);
  process.exit(s.unexpected.length ? 1 : 0);
}
