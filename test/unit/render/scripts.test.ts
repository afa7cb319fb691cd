// The helper scripts the units run are plain POSIX sh: `sh -n` parses them and shellcheck (when
// installed; CI installs it) finds nothing, for every combination's scripts.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { generatePki, renderNode } from "../../../cli/render/index";
import { shQuote } from "../../../cli/render/scripts";
import { COMBOS, comboFacts, planCombo } from "../../golden/combos";

const hasShellcheck = spawnSync("shellcheck", ["--version"]).status === 0;

describe("rendered helper scripts", () => {
  it("parse with sh -n and pass shellcheck -s sh, in every combination", async () => {
    let checked = 0;
    for (const combo of COMBOS) {
      const { plan } = planCombo(combo, await comboFacts(combo));
      if (!plan) continue;
      const scripts = renderNode(plan, await generatePki(plan)).filter((f) => f.kind === "script");
      // the enter script, the child (or docker's publish) script, and in mode none with containerd 2 crun's wrapper
      expect(scripts.length).toBe(plan.runtime.ociRuntime?.cgroupManager ? 3 : 2);
      for (const s of scripts) {
        const text = s.content.toString();
        expect(text.startsWith("#!/bin/sh\n")).toBe(true);
        expect(spawnSync("sh", ["-n"], { input: text, encoding: "utf8" }).status, `${combo.name}: ${s.path}`).toBe(0);
        if (hasShellcheck) {
          const r = spawnSync("shellcheck", ["-s", "sh", "-"], { input: text, encoding: "utf8" });
          expect(r.stdout, `${combo.name}: ${s.path}`).toBe("");
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(22);
  }, 60_000);

  it("quotes words for sh so that any path survives", () => {
    expect(shQuote("/home/alice/x")).toBe("/home/alice/x");
    expect(shQuote("/home/a b/it's")).toBe(`'/home/a b/it'\\''s'`);
    const r = spawnSync("sh", ["-c", `printf %s ${shQuote("a b'c$HOME")}`], { encoding: "utf8" });
    expect(r.stdout).toBe("a b'c$HOME");
  });
});
