// Issue 34, finding 2: the node's sockets and pid files live in $XDG_RUNTIME_DIR/rootless-k8s
// (RootlessKit's API socket and child_pid, containerd's socket). Another user who may write in
// XDG_RUNTIME_DIR could make that folder, or plant what is in it, before the node does.
// - doctor's runtime-dir check fails on an XDG_RUNTIME_DIR its group or others may write in (sticky
//   bit or not), with the exact fix, and install stops on it (the dry run lists it as blocking);
// - the folder is made 0700 (install, the dry run's --output mirror, and the owner unit at each
//   start, since RootlessKit makes it 0755 after a reboot); one that exists must be the user's own
//   real folder (tightened to 0700), never a link or another user's.
// Doctor and the dry run run through the bundled CLI as an ordinary user; the install-time guard and
// the owner unit's command run on real folders with real modes.
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureRuntimeDir } from "../../cli/apply/runtime-dir";
import { UserError } from "../../cli/errors";
import { upRuntimeBase } from "../../cli/xdg";
import { buildPlan } from "../../cli/plan/index";
import { commandLine } from "../../cli/render/systemd";
import { renderUnits, runtimeDirCommand } from "../../cli/render/units";
import { CLI_BUNDLE } from "../helpers/cli";
import { freePort } from "../helpers/net";
import { tempDir } from "../helpers/temp";
import { isRoot, testUser } from "../helpers/user";
import { baseFacts, upstreamVersions } from "../unit/plan/facts-builder";

const user = testUser("rk8s-sc-rundir");
const work = tempDir("rk8s-sc-rundir-");
chmodSync(work, 0o755);
const home = join(work, "home");
let apiPort = "";

beforeAll(async () => {
  apiPort = String(await freePort("0.0.0.0"));
  mkdirSync(home, { mode: 0o755 });
  user.own(work);
});

const mode = (p: string) => statSync(p).mode & 0o7777;

/** A fresh XDG_RUNTIME_DIR of the user's own with exactly `m`. */
function runtimeDir(name: string, m: number): string {
  const dir = join(work, name);
  mkdirSync(dir);
  user.own(dir);
  chmodSync(dir, m);
  return dir;
}

function cli(args: string[], run: string) {
  const r = user.run(process.execPath, [CLI_BUNDLE, ...args], {
    HOME: home,
    USER: user.name,
    XDG_RUNTIME_DIR: run,
    NO_COLOR: "1",
    ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

interface Check {
  id: string;
  status: string;
  summary: string;
  fix: { root: string[]; user: string[] } | null;
}
const runtimeCheck = (stdout: string) => (JSON.parse(stdout) as { checks: Check[] }).checks.find((c) => c.id === "runtime-dir")!;

const OPEN = [
  ["1777", "anyone"],
  ["0777", "anyone"],
  ["0733", "anyone"],
  ["0770", "its group"],
  ["0730", "its group"],
] as const;

describe("doctor: an XDG_RUNTIME_DIR others or its group may write in fails runtime-dir (issue 34, finding 2)", () => {
  it.each(OPEN)("mode %s: fail, naming who may write, with chmod 0700 as the fix", (oct, who) => {
    const run = runtimeDir(`doctor-${oct}`, parseInt(oct, 8));
    const r = cli(["doctor", "--json"], run);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    expect(runtimeCheck(r.stdout)).toEqual({
      id: "runtime-dir",
      status: "fail",
      summary: `${who} may write in XDG_RUNTIME_DIR=${run} (mode ${oct}): another user could plant the node's sockets or pid files there`,
      fix: { root: [], user: [`chmod 0700 ${run}`] },
    });
  });

  it.each(["0700", "0755", "0750"])("mode %s (writable by the user alone): ok", (oct) => {
    const run = runtimeDir(`doctor-ok-${oct}`, parseInt(oct, 8));
    const c = runtimeCheck(cli(["doctor", "--json"], run).stdout);
    expect(c).toMatchObject({ status: "ok", summary: run, fix: null });
  });

  it("the fix it names works: after chmod 0700 the check passes", () => {
    const run = runtimeDir("doctor-fixed", 0o1777);
    const c = runtimeCheck(cli(["doctor", "--json"], run).stdout);
    expect(c.status).toBe("fail");
    const r = user.run("sh", ["-c", c.fix!.user[0]!], {});
    expect(r.status, r.stderr).toBe(0);
    expect(runtimeCheck(cli(["doctor", "--json"], run).stdout).status).toBe("ok");
  });

  it("the text report names it with the fix, on one line each", () => {
    const run = runtimeDir("doctor-text", 0o1777);
    const r = cli(["doctor"], run);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`anyone may write in XDG_RUNTIME_DIR=${run} (mode 1777)`);
    expect(r.stdout).toContain(`chmod 0700 ${run}`);
  });
});

describe("install stops on it", () => {
  it.each(OPEN)("mode %s: the dry run lists runtime-dir among the checks that stop install (exit 3)", (oct) => {
    const run = runtimeDir(`install-${oct}`, parseInt(oct, 8));
    const r = cli(["install", "--dry-run", "--json", "--api-port", apiPort], run);
    const j = JSON.parse(r.stdout) as { blockingChecks: { id: string }[]; wouldInstall: boolean };
    expect(j.blockingChecks.map((c) => c.id)).toContain("runtime-dir");
    expect(j.wouldInstall).toBe(false);
    expect(r.code).toBe(3);
    // Nothing was made in it.
    expect(existsSync(join(run, "rootless-k8s"))).toBe(false);
  });

  it("a private XDG_RUNTIME_DIR is no reason to stop", () => {
    const run = runtimeDir("install-ok", 0o700);
    const r = cli(["install", "--dry-run", "--json", "--api-port", apiPort], run);
    const j = JSON.parse(r.stdout) as { blockingChecks: { id: string }[] };
    expect(j.blockingChecks.map((c) => c.id)).not.toContain("runtime-dir");
  });

  it("the dry run's --output mirror has the sockets' folder 0700", () => {
    const run = runtimeDir("install-out", 0o700);
    const out = join(work, "out");
    const r = cli(["install", "--dry-run", "--api-port", apiPort, "--output", out], run);
    expect(r.stdout, r.stderr).toContain(`Wrote them below ${out}.`);
    expect(mode(join(out, run, "rootless-k8s"))).toBe(0o700);
  });
});

describe("install makes the tool's folder 0700, and refuses one that is not the user's own (ensureRuntimeDir)", () => {
  // In this process, as the user running the tests: "another user" is the test user (root only).
  const parent = () => {
    const d = tempDir("rk8s-sc-rundir-own-");
    chmodSync(d, 0o700);
    return d;
  };
  const refusal = async (dir: string): Promise<UserError> => {
    const e = await ensureRuntimeDir(dir).then(
      () => null,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(UserError);
    expect((e as UserError).exitCode).toBe(3);
    expect((e as UserError).message).not.toContain("\n");
    expect((e as UserError).fix).toBeTruthy();
    return e as UserError;
  };

  it("a missing folder is made 0700, whatever the umask", async () => {
    const dir = join(parent(), "rootless-k8s");
    const old = process.umask(0o000);
    try {
      expect(await ensureRuntimeDir(dir)).toBe("created");
    } finally {
      process.umask(old);
    }
    expect(mode(dir)).toBe(0o700);
  });

  it.each(["0755", "0777", "1777", "0770"])("the user's own folder of mode %s is tightened to 0700, its content kept", async (oct) => {
    const dir = join(parent(), "rootless-k8s");
    mkdirSync(dir);
    chmodSync(dir, parseInt(oct, 8));
    writeFileSync(join(dir, "ports-state.json"), "{}");
    expect(await ensureRuntimeDir(dir)).toBe("tightened");
    expect(mode(dir)).toBe(0o700);
    expect(existsSync(join(dir, "ports-state.json"))).toBe(true);
    expect(await ensureRuntimeDir(dir)).toBe("kept");
  });

  it("a symbolic link is refused, and what it points at is left as it was", async () => {
    const p = parent();
    const elsewhere = join(p, "elsewhere");
    mkdirSync(elsewhere, { mode: 0o777 });
    chmodSync(elsewhere, 0o777);
    const dir = join(p, "rootless-k8s");
    symlinkSync(elsewhere, dir);
    const e = await refusal(dir);
    expect(e.message).toBe(`refusing to use ${dir} for the node's sockets: it is a symbolic link (to ${elsewhere})`);
    expect(e.fix).toBe(`remove it (rm ${dir}) and re-run: rootless-k8s makes the folder itself`);
    expect(lstatSync(dir).isSymbolicLink()).toBe(true);
    expect(readlinkSync(dir)).toBe(elsewhere);
    expect(mode(elsewhere)).toBe(0o777);
  });

  it("a file in its place is refused", async () => {
    const dir = join(parent(), "rootless-k8s");
    writeFileSync(dir, "");
    expect((await refusal(dir)).message).toMatch(/: it is not a folder$/);
  });

  it.skipIf(!isRoot)("another user's folder is refused and left as it was (needs root to plant it)", async () => {
    const dir = join(parent(), "rootless-k8s");
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    chownSync(dir, user.uid, user.gid);
    const e = await refusal(dir);
    expect(e.message).toBe(
      `refusing to use ${dir} for the node's sockets: it belongs to uid ${user.uid}, not to you: that user could have put sockets or a pid file in it`,
    );
    expect(mode(dir)).toBe(0o777);
    expect(statSync(dir).uid).toBe(user.uid);
  });

  it.each(OPEN)("in an XDG_RUNTIME_DIR of mode %s (--ignore-check runtime-dir): refused, nothing made", async (oct, who) => {
    const p = parent();
    chmodSync(p, parseInt(oct, 8));
    const dir = join(p, "rootless-k8s");
    const e = await refusal(dir);
    expect(e.message).toBe(`refusing to use ${dir} for the node's sockets: ${who} may write in XDG_RUNTIME_DIR (${p}, mode ${oct})`);
    expect(e.fix).toBe(`chmod 0700 ${p}`);
    expect(existsSync(dir)).toBe(false);
  });

  // `up` without XDG_RUNTIME_DIR: /tmp/rootless-k8s-UID, where anyone may plant a link first (issue 38).
  it("the /tmp folder of `up`: a link planted there is refused, its target left as it was; an open one too", async () => {
    const base = upRuntimeBase(process.getuid?.() ?? 0);
    rmSync(base, { recursive: true, force: true });
    const elsewhere = join(parent(), "victim");
    mkdirSync(elsewhere, { mode: 0o700 });
    symlinkSync(elsewhere, base);
    try {
      const e = await refusal(join(base, "rootless-k8s"));
      expect(e.message).toBe(
        `refusing to use ${base}/rootless-k8s for the node's sockets: ${base} is a symbolic link (someone may have put it there)`,
      );
      expect(existsSync(join(elsewhere, "rootless-k8s"))).toBe(false);
      rmSync(base);
      mkdirSync(base, { mode: 0o755 });
      chmodSync(base, 0o755);
      expect((await refusal(join(base, "rootless-k8s"))).message).toMatch(/is open to others \(mode 0755\)$/);
      chmodSync(base, 0o700);
      expect(await ensureRuntimeDir(join(base, "rootless-k8s"))).toBe("created");
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it.skipIf(!isRoot)("in another user's XDG_RUNTIME_DIR: refused, nothing made (needs root to plant it)", async () => {
    const p = parent();
    chownSync(p, user.uid, user.gid);
    const dir = join(p, "rootless-k8s");
    expect((await refusal(dir)).message).toBe(
      `refusing to use ${dir} for the node's sockets: XDG_RUNTIME_DIR (${p}) belongs to uid ${user.uid}, not to you`,
    );
    expect(existsSync(dir)).toBe(false);
  });
});

describe("the owner unit makes the folder 0700 at each start (RootlessKit would leave it 0755 after a reboot)", () => {
  /** A plan whose XDG_RUNTIME_DIR is `run`, and the owner unit's first command for it. */
  const planIn = (run: string) => {
    const facts = baseFacts();
    facts.user.home = home;
    facts.user.runtimeDir = { ...facts.user.runtimeDir, path: run };
    const plan = buildPlan(facts, { env: {} }, upstreamVersions());
    return { plan, argv: runtimeDirCommand(plan) };
  };
  /** Runs the command as the test user, as its user manager would. */
  const start = (argv: string[]) => user.run(argv[0]!, argv.slice(1), {});

  it("the owner unit runs it before RootlessKit", () => {
    const { plan, argv } = planIn("/run/user/1000");
    const owner = renderUnits(plan).find((u) => u.name === plan.units.owner)!.content;
    expect(owner).toContain(`\nExecStartPre=${commandLine(argv)}\nExecStart=`);
    expect(argv.at(-1)).toBe("/run/user/1000/rootless-k8s");
  });

  it("makes a missing folder 0700, and tightens the 0755 one RootlessKit makes", () => {
    const run = runtimeDir("unit-run", 0o700);
    const { argv, plan } = planIn(run);
    let r = start(argv);
    expect(r.status, r.stderr).toBe(0);
    expect(mode(plan.paths.runtimeDir)).toBe(0o700);
    chmodSync(plan.paths.runtimeDir, 0o755);
    r = start(argv);
    expect(r.status, r.stderr).toBe(0);
    expect(mode(plan.paths.runtimeDir)).toBe(0o700);
  });

  it("stops the start on a symbolic link, and leaves its target as it was", () => {
    const run = runtimeDir("unit-link", 0o700);
    const { argv, plan } = planIn(run);
    const target = join(run, "elsewhere");
    mkdirSync(target);
    user.own(target);
    chmodSync(target, 0o755);
    symlinkSync(target, plan.paths.runtimeDir);
    const r = start(argv);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("is a symbolic link");
    expect(mode(target)).toBe(0o755);
  });

  it.skipIf(!isRoot)("stops the start on another user's folder, and leaves it as it was (needs root to plant it)", () => {
    const run = runtimeDir("unit-foreign", 0o700);
    const { argv, plan } = planIn(run);
    mkdirSync(plan.paths.runtimeDir);
    chmodSync(plan.paths.runtimeDir, 0o777);
    const r = start(argv);
    expect(r.status).not.toBe(0);
    expect(mode(plan.paths.runtimeDir)).toBe(0o777);
    expect(statSync(plan.paths.runtimeDir).uid).toBe(0);
  });
});
