// `rootless-k8s token` as a process without a node: bad usage is exit 2 before anything is read,
// and every action refuses (exit 3) with the fix when no node is installed. The actions on a real
// control plane are tested by the e2e's join scenario.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli";
import { tempDir } from "../helpers/temp";

const STACK = /\bat .*\.(js|ts|cjs):\d+/;

describe("token command line", () => {
  it.each([
    [["frob"], /^error: .*frob/],
    [["create", "extra"], /^error: token create takes no argument \(got "extra"\)$/],
    [["create", "--ttl", "5x"], /^error: --ttl "5x" is not a duration \(use 90s, 30m or 24h\)$/],
    [["create", "--server", "http://h:6443"], /^error: --server "http:\/\/h:6443" is not an https:\/\/HOST:PORT URL$/],
    [["list", "--ttl", "1h"], /^error: --ttl works with token create only$/],
    [["delete"], /^error: token delete needs the token's ID$/],
    [["delete", "ABC"], /^error: "ABC" is not a token id \(6 characters of a-z and 0-9\)$/],
  ])("%j: exit 2, one line and the usage", async (args, line) => {
    const r = await runCli(["token", ...args], { env: { HOME: tempDir("rk8s-token-") } });
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toMatch(line);
    expect(r.stderr).toMatch(/usage: rootless-k8s token /);
    expect(r.stderr).not.toMatch(STACK);
  });

  it.each([["create"], ["list"], ["delete", "abcdef"]])("%j with no node installed: exit 3 and the fix", async (...args) => {
    const home = tempDir("rk8s-token-");
    const r = await runCli(["token", ...args], {
      env: { HOME: home, XDG_DATA_HOME: undefined, XDG_CONFIG_HOME: undefined, XDG_STATE_HOME: undefined },
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^error: no node installed/);
    expect(r.stderr).toMatch(/fix: run `rootless-k8s install` first/);
  });
});
