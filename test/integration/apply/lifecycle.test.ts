// start, stop and restart as processes, for the cases without a node: as an ordinary user with no
// node installed each refuses (exit 3) in one line naming install; as root each refuses (exit 3),
// as install does; a bad --timeout is bad usage (exit 2). Starting and stopping a real node, twenty
// cycles in a row, is the e2e's restart scenario.
import { describe, expect, it } from "vitest";
import { CLI_BUNDLE, runCli } from "../../helpers/cli";
import { isRoot, testUser } from "../../helpers/user";

const STACK = /\bat .*\.(js|ts|cjs):\d+/;
const user = testUser("rk8s-life");

describe.each([["start"], ["stop"], ["restart"]])("%s", (command) => {
  it("with no node installed: exit 3, one line naming install", () => {
    const home = user.newHome();
    user.own(home);
    const r = user.run(process.execPath, [CLI_BUNDLE, command], {
      HOME: home,
      USER: user.name,
      NO_COLOR: "1",
      ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
    });
    expect(r.status).toBe(3);
    expect(r.stderr.split("\n")[0]).toMatch(/^error: no node is installed for this user \(no receipt at .*receipt\.json\)$/);
    expect(r.stderr).toMatch(/^fix: install one with `rootless-k8s install`/m);
    expect(r.stderr).not.toMatch(STACK);
  });

  it.runIf(isRoot)("as root: refused (exit 3), as install is", async () => {
    const r = await runCli([command]);
    expect(r.code).toBe(3);
    expect(r.stderr.split("\n")[0]).toBe(`error: refusing to ${command} as root: rootless-k8s runs the node as an ordinary user`);
  });
});

describe("--timeout", () => {
  it.each([["start"], ["restart"]])("%s --timeout 5x: exit 2 with the usage", async (command) => {
    const r = await runCli([command, "--timeout", "5x"]);
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe('error: --timeout must be seconds or a duration like 90s or 5m (got "5x")');
  });
});
