// The kubelet's eviction thresholds as install takes them (issue 43): parsed as the kubelet parses
// --eviction-hard, merged over the defaults, kept across an upgrade, rendered into the kubelet's
// configuration, and refused where the kubelet would not start.
import { describe, expect, it } from "vitest";
import {
  DEFAULT_EVICTION_HARD,
  decideEviction,
  evictionDecision,
  evictionOptions,
  evictionProblem,
  isGoDuration,
  parseEvictionSpec,
  quantityOf,
} from "../../../cli/plan/eviction";

describe("parseEvictionSpec", () => {
  it("takes the kubelet's signal<value list", () => {
    expect(parseEvictionSpec("memory.available<500Mi, nodefs.available<10%,pid.available<1000")).toEqual({
      "memory.available": "500Mi",
      "nodefs.available": "10%",
      "pid.available": "1000",
    });
    expect(parseEvictionSpec("imagefs.available<0%")).toEqual({ "imagefs.available": "0%" });
  });

  it.each([
    ["", /names no threshold/],
    ["memory.available>1Gi", /is not signal<value/],
    ["memory.free<1Gi", /"memory.free" is not an eviction signal/],
    ["nodefs.available<101%", /0% \(off\) to 100%/],
    ["nodefs.available<-5%", /0% \(off\) to 100%/],
    ["memory.available<0", /positive quantity/],
    ["memory.available<lots", /positive quantity/],
    ["memory.available<1Gi,memory.available<2Gi", /given twice/],
  ])("%j is refused: %s", (text, why) => {
    const r = parseEvictionSpec(text);
    expect(typeof r).toBe("string");
    expect(r).toMatch(why);
  });
});

describe("quantities and durations", () => {
  it("reads binary and decimal suffixes as the kubelet's resource.Quantity does", () => {
    expect(quantityOf("100Mi")).toBe(100 * 2 ** 20);
    expect(quantityOf("1G")).toBe(1e9);
    expect(quantityOf("1.5Gi")).toBe(1.5 * 2 ** 30);
    expect(quantityOf("10%")).toBeNull();
  });
  it("takes Go durations, not zero", () => {
    for (const d of ["90s", "1m30s", "2h", "500ms"]) expect(isGoDuration(d)).toBe(true);
    for (const d of ["", "soon", "90", "0s", "1d"]) expect(isGoDuration(d)).toBe(false);
  });
});

describe("decideEviction", () => {
  it("gives the defaults, and why, without options", () => {
    const { eviction: e, reasons } = evictionDecision({});
    expect(e.hard).toEqual(DEFAULT_EVICTION_HARD);
    expect(e.soft).toEqual({});
    expect(reasons[0]).toMatch(/shares its machine with its user/);
  });

  it("puts the user's signals over the defaults, and one grace period on each soft one", () => {
    const e = decideEviction({
      evictionHard: { "memory.available": "1Gi", "nodefs.available": "0%" },
      evictionSoft: { "memory.available": "2Gi", "nodefs.available": "15%" },
      evictionSoftGrace: "2m",
    });
    expect(e.hard).toEqual({ ...DEFAULT_EVICTION_HARD, "memory.available": "1Gi", "nodefs.available": "0%" });
    expect(e.softGracePeriod).toEqual({ "memory.available": "2m", "nodefs.available": "2m" });
  });

  it("an upgrade gets back exactly what install chose, and nothing for a node that kept the defaults", () => {
    const chosen = { evictionHard: { "memory.available": "1Gi" }, evictionSoft: { "nodefs.available": "15%" }, evictionSoftGrace: "2m" };
    expect(evictionOptions(decideEviction(chosen))).toEqual(chosen);
    expect(evictionOptions(decideEviction({}))).toEqual({});
    expect(decideEviction(evictionOptions(decideEviction(chosen)))).toEqual(decideEviction(chosen));
    expect(evictionOptions(undefined)).toEqual({});
  });
});

describe("evictionProblem", () => {
  const mem = 2 * 2 ** 30;
  it("refuses a hard memory threshold above the machine's memory (the kubelet would not start)", () => {
    expect(evictionProblem(decideEviction({ evictionHard: { "memory.available": "3Gi" } }), mem)).toMatch(
      /memory.available<3Gi is more than this machine's memory \(2048 MiB\)/,
    );
    expect(evictionProblem(decideEviction({ evictionHard: { "memory.available": "1Gi" } }), mem)).toBeNull();
    expect(evictionProblem(decideEviction({ evictionHard: { "memory.available": "10%" } }), mem)).toBeNull();
    expect(evictionProblem(decideEviction({ evictionHard: { "memory.available": "3Gi" } }), null)).toBeNull();
  });
});
