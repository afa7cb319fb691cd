// The focus list's rules (test/conformance/select.mjs) over entries of upstream's own
// conformance.yaml at k8s.io/kubernetes@v1.36.3 (test/fixtures/conformance/conformance-excerpt.yaml).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { chosen, focusText } from "../../conformance/select.mjs";

type Entry = { testname: string; codename: string; file: string };
const entries: Entry[] = parse(readFileSync(join(__dirname, "..", "..", "fixtures", "conformance", "conformance-excerpt.yaml"), "utf8"));
const byFile = (f: string) => {
  const e = entries.find((x) => x.file.endsWith(f));
  if (!e) throw new Error(`no entry of ${f} in the fixture`);
  return e;
};

describe("the conformance focus list", () => {
  it("takes every sig-node, sig-apps and sig-api-machinery test but the aggregator's", () => {
    expect(chosen(byFile("common/node/pods.go"))).toBe(true);
    expect(chosen(byFile("apps/deployment.go"))).toBe(true);
    expect(chosen(byFile("apimachinery/webhook.go"))).toBe(true);
    expect(chosen(byFile("apimachinery/aggregator.go"))).toBe(false);
  });
  it("takes sig-storage's volume tests and sig-network's Services and DNS only", () => {
    expect(chosen(byFile("common/storage/empty_dir.go"))).toBe(true);
    expect(chosen(byFile("storage/subpath.go"))).toBe(false);
    expect(chosen(byFile("network/service.go"))).toBe(true);
    expect(chosen(byFile("network/dns.go"))).toBe(true);
    expect(chosen(byFile("network/endpointslice.go"))).toBe(false);
    expect(chosen(byFile("scheduling/predicates.go"))).toBe(false);
  });
  it("writes the chosen names grouped by sig, with the counts and the version", () => {
    const text = focusText(entries, { module: "k8s.io/kubernetes", version: "v1.36.3" });
    expect(text).toContain("k8s.io/kubernetes@v1.36.3");
    expect(text).toContain("# sig-network (2)");
    expect(text).toContain(byFile("network/dns.go").codename);
    expect(text).not.toContain(byFile("apimachinery/aggregator.go").codename);
  });
});
