// The agents' command runner (cli/agents/command.ts), on real commands: the input reaches the
// command's standard input, a missing command is exit 127, one past its timeout is killed (exit 1).
import { describe, expect, it } from "vitest";
import { runCommand } from "../../../cli/agents/command";

describe("the agents' runCommand", () => {
  it("passes the input and returns the output and exit code", async () => {
    expect(await runCommand(["cat"], { input: "*filter\nCOMMIT\n" })).toEqual({ code: 0, stdout: "*filter\nCOMMIT\n", stderr: "" });
    expect((await runCommand(["sh", "-c", "echo no >&2; exit 3"])).code).toBe(3);
  });
  it("a missing command is 127, a command past its timeout is killed with exit 1", async () => {
    expect((await runCommand(["rootless-k8s-no-such-command"])).code).toBe(127);
    const r = await runCommand(["sleep", "5"], { timeoutMs: 200 });
    expect(r).toMatchObject({ code: 1, stderr: "timed out after 0.2 s" });
  });
});
