// The command-line shell: help, version, unknown commands and flags, exit codes.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli";

describe("rootless-k8s command line", () => {
  it("prints its version", async () => {
    const r = await runCli(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^rootless-k8s \d+\.\d+\.\d+/);
  });

  it("lists the commands in --help", async () => {
    const r = await runCli(["--help"]);
    expect(r.code).toBe(0);
    for (const c of ["doctor", "install", "status", "upgrade", "uninstall", "self-upgrade"]) expect(r.stdout).toContain(c);
  });

  it("exits 2 with one line for an unknown command", async () => {
    const r = await runCli(["frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "frobnicate"');
    expect(r.stderr).not.toMatch(/\bat .*\.(js|ts|cjs):\d+/);
  });

  it("exits 2 with the usage for an unknown flag, never a stack trace", async () => {
    const r = await runCli(["doctor", "--no-such-flag"]);
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe("error: unknown option --no-such-flag");
    expect(r.stderr).toContain("usage: rootless-k8s doctor");
    expect(r.stderr).not.toMatch(/\bat .*\.(js|ts|cjs):\d+/);
  });
});
