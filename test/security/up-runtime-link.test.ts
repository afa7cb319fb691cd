// A node run by `rootless-k8s up` without XDG_RUNTIME_DIR keeps its sockets in /tmp/rootless-k8s-UID
// (issue 38), where any local user may plant a link first. Through the bundled CLI as an ordinary
// user: uninstall of such a node, with a link planted there to a folder of the user's, refuses
// (exit 3, one line and the fix) and leaves what the link points at as it was; nothing of the
// node's control socket or recorded groups is reached through it.
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { upRuntimeBase } from "../../cli/xdg";
import { CLI_BUNDLE } from "../helpers/cli";
import { testReceipt, testUninstallPlan } from "../helpers/receipts";
import { testUser } from "../helpers/user";

const user = testUser("rk8s-up-link");
const base = upRuntimeBase(user.uid);
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("the /tmp runtime folder of an up node, replaced by a link", () => {
  it("uninstall refuses, and what the link points at is left as it was", () => {
    const home = user.newHome();
    const share = join(home, ".local/share/rootless-k8s");
    const config = join(home, ".config/rootless-k8s");
    const runtimeDir = join(base, "rootless-k8s");
    const plan = testUninstallPlan({ home, unitDir: join(config, "services"), logDir: join(home, ".local/state/rootless-k8s/logs") });
    mkdirSync(share, { recursive: true });
    writeFileSync(
      join(share, "receipt.json"),
      JSON.stringify(
        testReceipt({
          currentLink: join(share, "versions/current"),
          roots: {
            state: share,
            data: join(share, "data"),
            config,
            pki: join(config, "pki"),
            runtime: runtimeDir,
            versions: join(share, "versions"),
          },
          plan: {
            ...plan,
            supervisor: { kind: "up", reasons: [] },
            logging: { to: "file", reasons: [] },
            paths: { ...plan.paths, runtimeDir },
          },
        }),
      ),
    );
    // What another user would put there: a link to a folder of this user's, with files that look like the node's.
    const victim = join(home, "victim");
    mkdirSync(join(victim, "rootless-k8s"), { recursive: true });
    writeFileSync(join(victim, "rootless-k8s", "keep"), "mine\n");
    writeFileSync(join(victim, "rootless-k8s", "up.groups"), "[]\n");
    rmSync(base, { recursive: true, force: true });
    symlinkSync(victim, base);
    user.own(home);
    const r = user.run(process.execPath, [CLI_BUNDLE, "uninstall", "--yes"], {
      HOME: home,
      USER: user.name,
      NO_COLOR: "1",
      ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
    });
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toContain(`\nerror: refusing to use ${base}: it is a symbolic link, not a private folder of yours\n`);
    expect(r.stderr).toMatch(/^fix: check what put it there, remove it/m);
    expect(r.stderr).not.toMatch(/This is a bug|\bat .*\.(js|ts|cjs):\d+/);
    expect(existsSync(join(victim, "rootless-k8s", "keep"))).toBe(true);
    expect(existsSync(join(victim, "rootless-k8s", "up.groups"))).toBe(true);
    expect(existsSync(join(share, "receipt.json"))).toBe(true);
  });
});
