// The conformance summary (test/conformance/summarize.mjs) over a real JUnit report: three test
// cases cut from the report ginkgo 2.28.1 wrote for upstream's e2e.test v1.36.3 against this
// project's e2e node (test/fixtures/conformance/junit-excerpt.xml; the logs inside are trimmed).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readNames, readReasons } from "../../conformance/lists.mjs";
import { readJunit, summarize } from "../../conformance/summarize.mjs";
import { tempDir } from "../../helpers/temp";

const xml = readFileSync(join(__dirname, "..", "..", "fixtures", "conformance", "junit-excerpt.xml"), "utf8");
const POD = "[sig-node] Pods should be submitted and removed [NodeConformance] [Conformance]";
const SVC = "[sig-network] Services should serve a basic endpoint from pods [Conformance]";

describe("readJunit", () => {
  it("reads each case's status, time and failure message, without ginkgo's [It] prefix", () => {
    const cases = readJunit(xml);
    expect(cases).toHaveLength(3);
    expect(cases[0]).toMatchObject({ status: "passed", message: "" });
    expect(cases[0]?.name.startsWith(`${POD} [sig-node`)).toBe(true);
    expect(cases[1]).toMatchObject({ status: "failed" });
    expect(cases[1]?.message).toMatch(/^service is not reachable within 2m0s timeout on endpoint endpoint-test2:80/);
    expect(cases[1]?.seconds).toBeGreaterThan(100);
    expect(cases[2]?.status).toBe("skipped");
  });
});

describe("summarize", () => {
  const cases = readJunit(xml);
  it("matches list names to ginkgo's names, which end in the labels, and counts", () => {
    const s = summarize({ cases, names: [POD, SVC], skips: new Map() });
    expect([s.passed, s.failed, s.skipped]).toEqual([1, 1, 0]);
    expect(s.unexpected.map((r) => r.name)).toEqual([SVC]);
  });
  it("a failure the mode predicts is reported with that reason and is not unexpected", () => {
    const s = summarize({ cases, names: [POD, SVC], skips: new Map(), expected: new Map([[SVC, "gives-up line"]]) });
    expect(s.unexpected).toEqual([]);
    expect(s.rows[1]).toMatchObject({ status: "failed", expected: true, reason: "gives-up line" });
  });
  it("a test of the list that ginkgo never reported is a failure, not a silent skip", () => {
    const s = summarize({ cases, names: ["[sig-node] no such test [Conformance]"], skips: new Map() });
    expect(s.failed).toBe(1);
    expect(s.rows[0]?.reason).toMatch(/^not run/);
  });
  it("reads the lists: names a line, reasons after a tab, comments ignored", () => {
    const dir = tempDir("rk8s-conf-");
    writeFileSync(join(dir, "l.txt"), `# comment\n\n${POD}\n`);
    writeFileSync(join(dir, "r.txt"), `# comment\n${SVC}\tno image\n`);
    writeFileSync(join(dir, "bad.txt"), `${SVC} no tab\n`);
    expect(readNames(join(dir, "l.txt"))).toEqual([POD]);
    expect(readReasons(join(dir, "r.txt"))).toEqual(new Map([[SVC, "no image"]]));
    expect(() => readReasons(join(dir, "bad.txt"))).toThrow(/bad.txt:1: no tab/);
  });
});

describe("summarize.mjs, the command the conformance scenario runs", () => {
  const SCRIPT = join(__dirname, "..", "..", "conformance", "summarize.mjs");
  const SKIPPED = readJunit(xml)[2]?.name ?? "";
  const run = (...args: string[]) => {
    try {
      return { code: 0, out: execFileSync(process.execPath, [SCRIPT, ...args], { encoding: "utf8" }) };
    } catch (e) {
      const err = e as { status: number; stdout: string };
      return { code: err.status, out: err.stdout };
    }
  };
  const dir = tempDir("rk8s-conf-cli-");
  const junit = join(dir, "junit.xml");
  writeFileSync(junit, xml);
  writeFileSync(join(dir, "list.txt"), `${POD}\n${SKIPPED}\n`);
  writeFileSync(join(dir, "skips.txt"), "# nothing skipped for an image\n");
  writeFileSync(join(dir, "one-node.txt"), `${SKIPPED}\tneeds two nodes\n`);
  const base = ["--junit", junit, "--list", join(dir, "list.txt"), "--skips", join(dir, "skips.txt"), "--route", "host", "--mode", "none"];

  it("takes the reason of a skip from any --skips file, and names the node count when there are two, and the shard", () => {
    expect(SKIPPED).toMatch(/^\[sig-storage\] In-tree Volumes/);
    const r = run(...base, "--skips", join(dir, "one-node.txt"), "--nodes", "2", "--shard", "1/5", "--json", join(dir, "s.json"));
    expect(r.code).toBe(0);
    expect(r.out).toContain(`skipped: ${SKIPPED}\n    needs two nodes`);
    expect(r.out.trim().split("\n").at(-1)).toBe("conformance (host, mode none, 2 nodes, shard 1/5): 1 passed, 0 failed, 1 skipped");
    expect(JSON.parse(readFileSync(join(dir, "s.json"), "utf8"))).toMatchObject({ nodes: 2, shard: "1/5", passed: 1, skipped: 1 });
  });

  it("without the file, a skip is the suite's own, with its message; one node is not named", () => {
    const r = run(...base);
    expect(r.out).toMatch(/skipped: .*\n {4}the suite skipped it: /);
    expect(r.out.trim().split("\n").at(-1)).toBe("conformance (host, mode none): 1 passed, 0 failed, 1 skipped");
  });

  it("a bad node count is a usage error, exit 2", () => {
    expect(run(...base, "--nodes", "zero").code).toBe(2);
  });
});
