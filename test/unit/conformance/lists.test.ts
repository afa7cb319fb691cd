// The named lists in test/conformance/ (what make conformance runs with E2E_CONFORMANCE_LIST) are
// parts of focus.txt, and the isolation list is exactly the tests mode none gives up.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readNames, readReasons } from "../../conformance/lists.mjs";

const DIR = join(__dirname, "..", "..", "conformance");
const focus = new Set(readNames(join(DIR, "focus.txt")));
const REASONS = ["skips.txt", "one-node.txt", "expected-none.txt"];
// The NetworkPolicy lists are no [Conformance] tests: upstream's [sig-network] Netpol suite (issue 44).
const NETPOL = ["netpol.txt", "netpol-ci.txt"];
const named = readdirSync(DIR).filter((f) => f.endsWith(".txt") && f !== "focus.txt" && !REASONS.includes(f) && !NETPOL.includes(f));

describe("the conformance lists", () => {
  it.each(named)("%s names only tests of focus.txt, each once", (file) => {
    const names = readNames(join(DIR, file));
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => !focus.has(n))).toEqual([]);
    expect(new Set(names).size).toBe(names.length);
  });

  it("the NetworkPolicy lists name upstream's Netpol tests, each once, and the CI list is part of the full one", () => {
    const full = readNames(join(DIR, "netpol.txt"));
    const ci = readNames(join(DIR, "netpol-ci.txt"));
    for (const names of [full, ci]) {
      expect(names.filter((n) => !n.startsWith("[sig-network] Netpol "))).toEqual([]);
      expect(new Set(names).size).toBe(names.length);
    }
    expect(ci.filter((n) => !full.includes(n))).toEqual([]);
    expect(full.length).toBe(47);
  });

  it("isolation.txt is the set of expected-none.txt: what mode delegated must turn into passes", () => {
    const expected = [...readReasons(join(DIR, "expected-none.txt")).keys()].sort();
    expect(readNames(join(DIR, "isolation.txt")).sort()).toEqual(expected);
  });

  it("the reasons files name tests of focus.txt", () => {
    for (const f of REASONS) {
      expect([...readReasons(join(DIR, f)).keys()].filter((n) => !focus.has(n))).toEqual([]);
    }
  });

  it("a test that needs two nodes is skipped only on one node, and the multinode list runs it", () => {
    const oneNode = [...readReasons(join(DIR, "one-node.txt")).keys()];
    const skips = readReasons(join(DIR, "skips.txt"));
    expect(oneNode.length).toBeGreaterThan(0);
    expect(oneNode.filter((n) => skips.has(n))).toEqual([]);
    const multinode = new Set(readNames(join(DIR, "multinode.txt")));
    expect(oneNode.filter((n) => !multinode.has(n))).toEqual([]);
  });
});
