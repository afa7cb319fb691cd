// Steps and questions off a terminal: plain lines with durations, a failed step named, and every
// question answered with its unattended answer and said so (never a hang waiting for input).
import { describe, expect, it } from "vitest";
import { createProgress } from "../../../cli/ui/progress";
import { createPrompter } from "../../../cli/ui/prompt";
import { makeStyle, type Output } from "../../../cli/ui/output";

function captured(): Output & { lines: string[] } {
  const lines: string[] = [];
  const style = makeStyle(false);
  return {
    lines,
    style,
    errStyle: style,
    interactive: false,
    ci: true,
    out: (l = "") => lines.push(`out: ${l}`),
    err: (l = "") => lines.push(`err: ${l}`),
  };
}

describe("progress off a terminal", () => {
  it("prints one line per step start and end, with the duration, and records timings", async () => {
    const out = captured();
    const p = await createProgress(out);
    const v = await p.step("write", "Writing files", async (h) => {
      h.update("3 written");
      return 42;
    });
    expect(v).toBe(42);
    expect(out.lines[0]).toBe("err: ==> Writing files");
    expect(out.lines[1]).toBe("err:     3 written");
    expect(out.lines[2]).toMatch(/^err: ok {2}Writing files \(\d+ ms\)$/);
    expect(p.timings).toEqual([{ id: "write", label: "Writing files", ms: expect.any(Number), ok: true }]);
  });
  it("names the failed step and passes the error through", async () => {
    const out = captured();
    const p = await createProgress(out);
    await expect(p.step("start", "Starting", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(p.current).toBe("start");
    expect(out.lines.at(-1)).toMatch(/^err: FAILED {2}Starting \(after \d+ ms\)$/);
    expect(p.timings[0]?.ok).toBe(false);
  });
});

describe("questions without a person to ask", () => {
  it("takes the unattended answers and says so, under --yes or off a terminal", async () => {
    for (const opts of [
      { yes: true, stdinIsTTY: true },
      { yes: false, stdinIsTTY: false },
    ]) {
      const out = captured();
      const p = createPrompter({ out, ...opts });
      expect(p.interactive).toBe(false);
      expect(await p.confirm("Install this node?", { default: false, unattended: true })).toBe(true);
      expect(
        await p.select(
          "Runtime?",
          [
            { value: "containerd", name: "c" },
            { value: "docker", name: "d" },
          ],
          { default: "docker", unattended: "containerd" },
        ),
      ).toBe("containerd");
      expect(await p.input("Port?", { default: "6444", unattended: "6445" })).toBe("6445");
      expect(out.lines).toEqual([
        "err: ? Install this node? -> yes (not asked)",
        "err: ? Runtime? -> containerd (not asked)",
        "err: ? Port? -> 6445 (not asked)",
      ]);
    }
  });
});
