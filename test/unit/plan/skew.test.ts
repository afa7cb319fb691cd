// The version-skew rules of an upgrade.
import { describe, expect, it } from "vitest";
import { parseVersion, skewProblem } from "../../../cli/plan/skew";

const set = (kubernetes: string, extra: Record<string, string> = {}) => ({ kubernetes, etcd: "3.6.14", ...extra });

describe("skewProblem", () => {
  it("allows a patch and one minor", () => {
    expect(skewProblem(set("1.36.0"), set("1.36.4"))).toBeNull();
    expect(skewProblem(set("1.36.4"), set("1.37.0"))).toBeNull();
  });
  it("refuses skipping a minor, naming the next step", () => {
    expect(skewProblem(set("1.36.0"), set("1.38.0"))).toBe(
      "Kubernetes 1.36.0 → 1.38.0 skips 1 minor version: upgrade one minor at a time (1.36 → 1.37 first)",
    );
    expect(skewProblem(set("1.36.0"), set("1.39.2"))).toMatch(/skips 2 minor versions/);
  });
  it("refuses a downgrade and a major change", () => {
    expect(skewProblem(set("1.37.0"), set("1.36.9"))).toMatch(/downgrade/);
    expect(skewProblem(set("1.37.1"), set("1.37.0"))).toMatch(/downgrade/);
    expect(skewProblem(set("1.37.0"), set("2.0.0"))).toMatch(/major/);
  });
  it("refuses a kubelet newer than the API server when a set pins them apart", () => {
    expect(skewProblem(set("1.36.0"), set("1.37.0", { kubelet: "1.37.1", "kube-apiserver": "1.37.0" }))).toMatch(
      /kubelet \(1\.37\.1\) would be newer than the API server \(1\.37\.0\)/,
    );
    expect(skewProblem(set("1.36.0"), set("1.37.0", { kubelet: "1.36.3", "kube-apiserver": "1.37.0" }))).toBeNull();
  });
  it("refuses etcd going back a minor", () => {
    expect(skewProblem(set("1.36.0"), set("1.37.0", { etcd: "3.5.21" }))).toMatch(/etcd 3\.6\.14 → 3\.5\.21/);
  });
  it("parses v-prefixed versions and says when it cannot compare", () => {
    expect(parseVersion("v1.36.0")).toEqual({ major: 1, minor: 36, patch: 0 });
    expect(skewProblem({ kubernetes: "latest" }, set("1.37.0"))).toMatch(/cannot compare/);
  });
});
