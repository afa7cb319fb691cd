// Issue 34, finding 1: `install --dry-run --output DIR` writes only into a DIR that nobody but its
// owner may write in. A folder others may write in with the sticky bit (as /tmp is) or one its group
// may write in (as umask 002 makes them) lets another user plant a link or a file there between the
// checks and the writes: refused (exit 3) in one line with the fix, and nothing is written in it.
// Run through the bundled CLI as an ordinary user, on real folders with real modes.
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { CLI_BUNDLE } from "../helpers/cli";
import { freePort } from "../helpers/net";
import { tempDir } from "../helpers/temp";
import { testUser } from "../helpers/user";

const user = testUser("rk8s-sc-outdir");
const work = tempDir("rk8s-sc-outdir-");
chmodSync(work, 0o755);
const home = join(work, "home");
const runtimeDir = join(work, "run");
let apiPort = "";

beforeAll(async () => {
  apiPort = String(await freePort("0.0.0.0"));
  mkdirSync(home, { mode: 0o755 });
  mkdirSync(runtimeDir, { mode: 0o700 });
  user.own(work);
});

function dryRun(out: string) {
  const r = user.run(process.execPath, [CLI_BUNDLE, "install", "--dry-run", "--api-port", apiPort, "--output", out], {
    HOME: home,
    USER: user.name,
    XDG_RUNTIME_DIR: runtimeDir,
    NO_COLOR: "1",
    ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A folder of the user's own with exactly `mode` (chmod after mkdir: the umask does not narrow it). */
function folder(name: string, mode: number): string {
  const dir = join(work, name);
  mkdirSync(dir);
  user.own(dir);
  chmodSync(dir, mode);
  return dir;
}

const STACK = /\bat .*\.(js|ts|cjs):\d+|This is a bug/;

describe("--output DIR that others or its group may write in (issue 34, finding 1)", () => {
  it.each([
    ["1777", "anyone", "others may write, sticky bit (as /tmp)"],
    ["0777", "anyone", "others may write"],
    ["0770", "its group", "its group may write"],
    ["0775", "its group", "its group may write (umask 002)"],
    ["1770", "its group", "its group may write, sticky bit"],
  ])("mode %s: refused (exit 3) in one line with the fix, nothing written (%s: %s)", (oct, who) => {
    const out = folder(`out-${oct}`, parseInt(oct, 8));
    const r = dryRun(out);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.code, r.stderr).toBe(3);
    const lines = r.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe(
      `error: refusing to write below --output ${out}: ${who} may write in it (mode ${oct}): another user could plant a link or a file there`,
    );
    expect(lines[1]).toBe(`fix: chmod 0755 ${out}, or give --output a new folder (it is made 0755)`);
    expect(lines).toHaveLength(2);
    expect(r.stdout).not.toContain("Wrote them below");
    // Not even the marker: the refusal comes before the first write.
    expect(readdirSync(out)).toEqual([]);
    expect(readdirSync(home)).toEqual([]);
  });

  it.each(["0755", "0700", "0750"])("mode %s (writable by its owner only): the files are written", (oct) => {
    const out = folder(`ok-${oct}`, parseInt(oct, 8));
    const r = dryRun(out);
    expect(r.stderr).not.toMatch(/refusing/);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.stdout).toContain(`Wrote them below ${out}.`);
    expect(existsSync(join(out, ".rootless-k8s-output"))).toBe(true);
    // The test user has no user manager: the node's services are `rootless-k8s up`'s JSON.
    expect(existsSync(join(out, home, ".config/rootless-k8s/services/rootless-k8s.target.json"))).toBe(true);
  });

  it("the fix works: after chmod 0755 the same folder is written", () => {
    const out = folder("fixed", 0o1777);
    expect(dryRun(out).code).toBe(3);
    expect(readdirSync(out)).toEqual([]);
    chmodSync(out, 0o755);
    const r = dryRun(out);
    expect(r.stdout).toContain(`Wrote them below ${out}.`);
  });

  it("a new folder is made 0755 (writable by the user alone)", () => {
    const out = join(work, "new-out");
    const r = dryRun(out);
    expect(r.stdout, r.stderr).toContain(`Wrote them below ${out}.`);
    expect(statSync(out).mode & 0o7777).toBe(0o755);
  });
});
