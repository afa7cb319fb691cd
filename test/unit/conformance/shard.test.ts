// Shards of a conformance list (make conformance E2E_CONFORMANCE_SHARD=K/N), for the VM route, too
// slow under software emulation to run the whole focus list at once: over the real focus.txt.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readNames, shardOf } from "../../conformance/lists.mjs";

const DIR = join(__dirname, "..", "..", "conformance");
const focus = readNames(join(DIR, "focus.txt"));
const sig = (n: string) => /^\[(sig-[a-z-]+)\]/.exec(n)?.[1] ?? "";

describe("shardOf", () => {
  it("cuts the list into N shards that together are the list, each test in one, of like size and like mix", () => {
    const shards = [1, 2, 3, 4, 5].map((k) => shardOf(focus, `${k}/5`));
    expect(shards.flat().sort()).toEqual([...focus].sort());
    const sizes = shards.map((s) => s.length);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    for (const s of new Set(focus.map(sig))) {
      const all = focus.filter((n) => sig(n) === s).length;
      for (const shard of shards) expect(shard.filter((n) => sig(n) === s).length).toBeGreaterThanOrEqual(Math.floor(all / 5));
    }
  });

  it("refuses what is not K/N with 1 <= K <= N", () => {
    for (const bad of ["0/5", "6/5", "1", "a/b", "1/0", ""]) expect(() => shardOf(focus, bad)).toThrow(/K\/N with 1 <= K <= N/);
    expect(shardOf(focus, "1/1")).toEqual(focus);
  });
});

describe("shard.mjs", () => {
  const run = (...args: string[]) => {
    try {
      return { code: 0, out: execFileSync(process.execPath, [join(DIR, "shard.mjs"), ...args], { encoding: "utf8", stdio: "pipe" }) };
    } catch (e) {
      const err = e as { status: number; stderr: string };
      return { code: err.status, out: err.stderr };
    }
  };

  it("writes the shard's list and a focus expression that matches exactly its tests", () => {
    const out = mkdtempSync(join(tmpdir(), "rk8s-shard-"));
    const r = run("--list", join(DIR, "focus.txt"), "--shard", "2/5", "--out", out);
    expect(r.code).toBe(0);
    const names = readNames(join(out, "list.txt"));
    expect(names).toEqual(shardOf(focus, "2/5"));
    expect(r.out.trim()).toBe(`shard 2/5 of focus.txt: ${names.length} tests`);
    const focusRe = new RegExp(`^(?:${readFileSync(join(out, "list.focus"), "utf8")})$`);
    expect(focus.filter((n) => focusRe.test(n))).toEqual(names);
  });

  it("a bad shard is exit 2 with one line", () => {
    const r = run("--list", join(DIR, "focus.txt"), "--shard", "7/5", "--out", tmpdir());
    expect(r.code).toBe(2);
    expect(r.out.trim()).toBe('shard.mjs: shard "7/5": K/N with 1 <= K <= N, e.g. 1/5');
  });
});
