// The error presenter (cli/main.ts reportError) is the one place a UserError reaches the terminal:
// whatever a message or a fix quotes, the user reads one error line and one fix line, control
// characters as visible escapes and URLs without their credentials (issue 34). A message built
// anywhere, now or later, gets this without escaping at its call site.
import { describe, expect, it } from "vitest";
import { ExitCode, UsageError, UserError } from "../../cli/errors";
import { reportError } from "../../cli/main";
import { makeStyle, type Output } from "../../cli/ui/output";

function capture(): Output & { lines: string[] } {
  const lines: string[] = [];
  const style = makeStyle(false);
  return { style, errStyle: style, interactive: false, ci: true, lines, out: (l = "") => lines.push(l), err: (l = "") => lines.push(l) };
}

describe("reportError", () => {
  it("escapes every control character of a message and of a fix that quotes input", () => {
    const o = capture();
    const code = reportError(
      new UserError("--node-ip 1.2.3.4\nfix: rm -rf ~\ttab\r\u001b[2J\u0085 is not an IPv4 address", {
        exitCode: ExitCode.Usage,
        fix: "pass --node-ip 1.2.3.4\nfix: rm -rf ~",
      }),
      o,
    );
    expect(code).toBe(ExitCode.Usage);
    expect(o.lines).toEqual([
      "error: --node-ip 1.2.3.4\\nfix: rm -rf ~\\ttab\\r\\x1b[2J\\x85 is not an IPv4 address",
      "fix: pass --node-ip 1.2.3.4\\nfix: rm -rf ~",
    ]);
  });

  it("keeps the tool's own fix as written, and takes credentials out of quoted URLs", () => {
    const o = capture();
    reportError(new UserError("GET https://u:s3cret@mirror.example/x failed", { fix: "check the mirror: `rootless-k8s doctor`" }), o);
    expect(o.lines).toEqual(["error: GET https://mirror.example/x failed", "fix: check the mirror: `rootless-k8s doctor`"]);
  });

  it("escapes a usage error's message, and an unexpected error's", () => {
    const o = capture();
    expect(reportError(new UsageError('unknown action "a\nfix: b"', "cache"), o, "rootless-k8s cache ACTION")).toBe(ExitCode.Usage);
    expect(o.lines[0]).toBe('error: unknown action "a\\nfix: b"');
    expect(o.lines.slice(1)).toEqual(["usage: rootless-k8s cache ACTION", "Run `rootless-k8s cache --help` for all options."]);
    const p = capture();
    reportError(new Error("boom\u001b[2J"), p);
    expect(p.lines[0]).toBe("error: boom\\x1b[2J");
  });
});
