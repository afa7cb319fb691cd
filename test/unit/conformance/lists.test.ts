// The named lists in test/conformance/ (what make conformance runs with E2E_CONFORMANCE_LIST) are
// parts of focus.txt, and the isolation list is exactly the tests mode none gives up.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readNames, readReasons } from "../../conformance/lists.mjs";

const DIR = join(__dirname, "..", "..", "conformance");
const focus = new Set(readNames(join(DIR, "focus.txt")));
const named = readdirSync(DIR).filter((f) => f.endsWith(".txt") && !["focus.txt", "skips.txt", "expected-none.txt"].includes(f));

describe("the conformance lists", () => {
  it.each(named)("%s names only tests of focus.txt, each once", (file) => {
    const names = readNames(join(DIR, file));
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => !focus.has(n))).toEqual([]);
    expect(new Set(names).size).toBe(names.length);
  });

  it("isolation.txt is the set of expected-none.txt: what mode delegated must turn into passes", () => {
    const expected = [...readReasons(join(DIR, "expected-none.txt")).keys()].sort();
    expect(readNames(join(DIR, "isolation.txt")).sort()).toEqual(expected);
  });

  it("the reasons files name tests of focus.txt", () => {
    for (const f of ["skips.txt", "expected-none.txt"]) {
      expect([...readReasons(join(DIR, f)).keys()].filter((n) => !focus.has(n))).toEqual([]);
    }
  });
});
