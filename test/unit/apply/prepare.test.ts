// The refusal install and upgrade share when doctor's checks stop them: every blocking check shown
// by the one presenter (its id, for --ignore-check, and its whole fix), then one error, exit 3.
import { describe, expect, it } from "vitest";
import { refuseOnBlocking } from "../../../cli/apply/prepare";
import { diagnose } from "../../../cli/doctor/index";
import { showOutcomes } from "../../../cli/doctor/present";
import { ExitCode, UserError } from "../../../cli/errors";
import { gatherFacts } from "../../../cli/host/gather";
import { makeStyle, type Output } from "../../../cli/ui/output";
import { fixtureHost } from "../../helpers/fixture-host";

function capture(): Output & { lines: string[] } {
  const lines: string[] = [];
  const style = makeStyle(false);
  return {
    style,
    errStyle: style,
    interactive: false,
    ci: true,
    lines,
    out: (l = "") => void lines.push(`out: ${l}`),
    err: (l = "") => void lines.push(l),
  };
}

describe("refuseOnBlocking", () => {
  it("prints each blocking check with its multi-line fix aligned, then refuses with exit 3 naming them", async () => {
    const d = diagnose(await gatherFacts(fixtureHost("ubuntu-24.04")));
    const blocking = d.outcomes.filter((o) => o.status === "fail");
    for (const command of ["install", "upgrade"] as const) {
      const out = capture();
      let err: unknown;
      try {
        refuseOnBlocking(out, blocking, command);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UserError);
      expect((err as UserError).exitCode).toBe(ExitCode.Refused);
      expect((err as UserError).message).toBe(`doctor found 1 problem that stops the ${command} (apparmor-userns)`);
      expect((err as UserError).fix).toContain("--ignore-check ID");
      expect(out.lines).toEqual(showOutcomes(blocking, makeStyle(false), { name: "id" }));
      expect(out.lines.length).toBeGreaterThan(10); // the AppArmor profile, line by line
    }
  });

  it("says nothing and goes on when nothing blocks", () => {
    const out = capture();
    refuseOnBlocking(out, [], "install");
    expect(out.lines).toEqual([]);
  });
});
