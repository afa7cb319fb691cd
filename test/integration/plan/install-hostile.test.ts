// Issue 16, defects 4 and 5 and the --prefix/--output refusals of 8: `install --dry-run --output DIR`
// writes below DIR only (no symlink on the way, never /, HOME or a foreign non-empty folder), and no
// path or name given to install can inject lines into a unit, a config or a script. Run through the
// bundled CLI as an ordinary user with a temporary HOME, as the existing dry-run tests do.
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { CLI_BUNDLE } from "../../helpers/cli";
import { freePort } from "../../helpers/net";
import { tempDir } from "../../helpers/temp";
import { testUser } from "../../helpers/user";

const user = testUser("rk8s-dryrun");
const work = tempDir("rk8s-hostile-out-");
chmodSync(work, 0o755);
const home = join(work, "home");
const runtimeDir = join(work, "run");
const victim = join(work, "victim");
let apiPort = "";

beforeAll(async () => {
  apiPort = String(await freePort("0.0.0.0"));
  mkdirSync(home, { mode: 0o755 });
  mkdirSync(runtimeDir, { mode: 0o700 });
  mkdirSync(victim, { mode: 0o755 });
  writeFileSync(join(victim, "keep.txt"), "mine");
  user.own(work);
});

function cli(args: string[], env: Record<string, string> = {}) {
  const r = user.run(process.execPath, [CLI_BUNDLE, "install", "--dry-run", "--api-port", apiPort, ...args], {
    HOME: home,
    USER: user.name,
    XDG_RUNTIME_DIR: runtimeDir,
    NO_COLOR: "1",
    ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
    ...env,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** What a dry run answers on this machine: 3 when doctor, as the same user, finds a failing check, else 0. */
function expectedCode(): 0 | 3 {
  const r = user.run(process.execPath, [CLI_BUNDLE, "doctor", "--json"], {
    HOME: home,
    USER: user.name,
    XDG_RUNTIME_DIR: runtimeDir,
    NO_COLOR: "1",
    ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
  });
  return (JSON.parse(r.stdout) as { checks: { status: string }[] }).checks.some((c) => c.status === "fail") ? 3 : 0;
}

const listing = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { recursive: true }).map(String).sort() : []);

describe("--output DIR writes below DIR only (issue 16, defect 4)", () => {
  it("refuses a symlink planted below an earlier --output folder, and writes nothing through it", () => {
    const out = join(work, "out-link");
    const first = cli(["--output", out]);
    expect(first.code).toBe(expectedCode());
    // Replace the mirrored home's first folder by a link to the victim folder, as another user could in /tmp.
    const top = home.split("/").filter(Boolean)[0]!;
    rmSync(join(out, top), { recursive: true, force: true });
    symlinkSync(victim, join(out, top));
    const r = cli(["--output", out]);
    expect(r.code).toBe(3);
    expect(r.stderr.split("\n")[0]).toMatch(
      new RegExp(`^error: refusing to write below --output ${out}: ${out}/${top} is a symbolic link`),
    );
    expect(r.stderr).not.toMatch(/This is a bug/);
    expect(listing(victim)).toEqual(["keep.txt"]);
    expect(listing(home)).toEqual([]);
  });

  it("refuses an existing non-empty folder that no earlier --output made (the /tmp/node + ln -s /home repro)", () => {
    const out = join(work, "node");
    mkdirSync(out);
    symlinkSync(victim, join(out, "home"));
    user.own(out);
    const r = cli(["--output", out]);
    expect(r.code).toBe(3);
    expect(r.stderr.split("\n")[0]).toMatch(
      /^error: refusing to write below --output .*node: it is not empty and no earlier --output made it/,
    );
    expect(listing(victim)).toEqual(["keep.txt"]);
  });

  for (const [what, dir] of [
    ["/", () => "/"],
    ["the home folder", () => home],
    ["a parent of the home folder", () => work],
  ] as const) {
    it(`refuses --output ${what} in one line`, () => {
      const r = cli(["--output", dir()]);
      expect(r.code).toBe(2);
      expect(r.stderr.split("\n")[0]).toMatch(/^error: --output .* is (the root folder|the home folder|a parent of the home folder)/);
      expect(r.stderr).not.toMatch(/This is a bug/);
      expect(listing(home)).toEqual([]);
    });
  }

  it("writes again into a folder an earlier --output made", () => {
    const out = join(work, "out-again");
    expect(cli(["--output", out]).code).toBe(expectedCode());
    const r = cli(["--output", out]);
    expect(r.code).toBe(expectedCode());
    expect(r.stdout).toContain(`Wrote them below ${out}.`);
    expect(existsSync(join(out, ".rootless-k8s-output"))).toBe(true);
  });
});

describe("no path or name can inject lines into what install renders (issue 16, defect 5)", () => {
  const injected = join(work, "INJECTED");
  it.each([
    ["--prefix with a newline", ["--prefix", `/p\nExecStartPre=/bin/touch ${injected}\n#`], {}, 2],
    ["--node-name with a newline", ["--node-name", `n\nExecStartPre=/bin/touch ${injected}`], {}, 2],
    ["XDG_CONFIG_HOME with a newline", [], { XDG_CONFIG_HOME: `/x\nExecStartPre=/bin/touch ${injected}\n#` }, 3],
    ["HOME with a newline", [], { HOME: `${home}\nExecStartPre=/bin/touch ${injected}` }, 3],
    ["XDG_RUNTIME_DIR with an escape sequence", [], { XDG_RUNTIME_DIR: `${runtimeDir}\u001b]0;x\u0007` }, 3],
    // a flag is bad usage (2); the environment is a refused precondition (3)
  ])("%s is refused before anything is written", (_what, args, env, code) => {
    const out = join(work, `out-inject-${Math.random().toString(36).slice(2)}`);
    const r = cli([...(args as string[]), "--output", out], env as Record<string, string>);
    expect(r.code).toBe(code);
    expect(r.stderr.split("\n")[0]).toMatch(/control character/);
    expect(r.stderr).not.toMatch(/This is a bug/);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(injected)).toBe(false);
  });

  it("a --prefix with spaces, quotes, $ and % is quoted for systemd, sh and YAML, never split", () => {
    const prefix = join(work, `odd dir $HOME "q" 'a' %n \\x`);
    const out = join(work, "out-odd");
    // Unit files (this machine's test user has no user manager, so the default would be `up`'s JSON).
    const r = cli(["--prefix", prefix, "--output", out, "--supervisor", "systemd"]);
    expect(r.code).toBe(expectedCode());
    const unit = readFileSync(join(out, home, ".config/systemd/user/rootless-k8s-kubelet.service"), "utf8");
    // Every word that holds the prefix is one quoted systemd word, with % and (in arguments) $ escaped.
    const exec = unit
      .slice(unit.indexOf("ExecStart="))
      .split("\n")
      .filter((l) => l.includes("odd dir"));
    expect(exec[0]).toMatch(/^ExecStart="[^"]*odd dir \$HOME \\"q\\" 'a' %%n \\\\x\/[^"]*"/);
    const args = exec.slice(1).filter((l) => l.startsWith("  "));
    expect(args.length).toBeGreaterThan(0);
    for (const a of args) expect(a).toMatch(/^ {2}"[^"]*odd dir \$\$HOME \\"q\\" 'a' %%n \\\\x\/[^"]*"( \\)?$/);
    const yaml = readFileSync(join(out, prefix, "config/kubelet-config.yaml"), "utf8");
    const parsed = YAML.parse(yaml) as Record<string, unknown>;
    expect(JSON.stringify(parsed)).toContain(`odd dir $HOME \\"q\\" 'a' %n \\\\x`);
  });
});

describe("--prefix / and --prefix $HOME are refused with the reason (issue 16, item 8)", () => {
  it.each([
    ["/", () => "/", /--prefix \/ is the root folder/],
    ["$HOME", () => home, /--prefix .* is the home folder/],
    ["a parent of $HOME", () => work, /--prefix .* is a parent of the home folder/],
  ])("--prefix %s", (_what, dir, message) => {
    const r = cli(["--prefix", dir()]);
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toMatch(message);
    expect(r.stderr).toMatch(/^fix: /m);
  });
});
