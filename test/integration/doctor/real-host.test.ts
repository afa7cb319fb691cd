// doctor on this very machine: as root (a failing check, not a crash), and as an ordinary user the
// test creates with subordinate ids, the way a user would run it. The machine is Debian 12 with
// cgroup v1 hybrid and no delegation, so the verdict is `none`. Needs root (to create the user);
// without root the tests are skipped and say why.
import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_BUNDLE, runCli } from "../../helpers/cli";
import { isRoot, removeTestUser, runAs, testUser, type TestUser } from "../../helpers/user";
import { gatherFacts } from "../../../cli/host/gather";
import { localHost } from "../../../cli/host/host";

const USER = "rk8s-doctor";
/** Far above the ranges useradd hands out (SUB_UID_MIN 100000), so no other test user overlaps. */
const SUBID_START = 3_000_000_000;
if (!isRoot) console.warn("real-host doctor tests skipped: they need root to create the test user (run them as root, as CI does)");

interface DoctorJson {
  mode: string;
  reasons: string[];
  host: {
    distro: { id: string; versionId: string | null; family: string };
    cgroup: { mode: string; delegatedControllers: string[] };
    user: { name: string; uid: number; subuid: { start: number; count: number }[]; subgid: { start: number; count: number }[] };
    systemd: { version: number | null; userManager: boolean };
  };
  checks: { id: string; status: string; summary: string }[];
}

let user: TestUser;

async function doctorAsUser(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = `/home/${USER}`;
  const env = { HOME: home, USER, LOGNAME: USER, PATH: "/usr/local/bin:/usr/bin:/bin", NO_COLOR: "1", LANG: "C" };
  const r = await runAs(user, process.execPath, [CLI_BUNDLE, "doctor", ...args], env, { timeoutMs: 30_000 });
  return { code: r.code ?? -1, stdout: r.stdout, stderr: r.stderr };
}

const check = (j: DoctorJson, id: string) => j.checks.find((c) => c.id === id)!;
const pid1IsSystemd = () => readFileSync("/proc/1/comm", "utf8").trim() === "systemd";

describe.skipIf(!isRoot)("doctor on this machine", () => {
  beforeAll(() => {
    // A new user with exactly one range of subordinate ids (none from login.defs).
    removeTestUser(USER);
    user = testUser(USER, { home: true, shell: "/bin/bash", subIds: SUBID_START });
  });
  afterAll(() => removeTestUser(USER));

  it("as an ordinary user: Debian 12, cgroup v1 hybrid, no delegation, so mode none", async () => {
    const r = await doctorAsUser(["--json"]);
    expect(r.stderr).toBe("");
    const j = JSON.parse(r.stdout) as DoctorJson;
    expect(j.host.distro).toMatchObject({ id: "debian", versionId: "12", family: "debian" });
    expect(j.host.cgroup).toEqual({ mode: "hybrid", delegatedControllers: [] });
    expect(j.host.user).toMatchObject({
      name: USER,
      subuid: [{ start: SUBID_START, count: 65536 }],
      subgid: [{ start: SUBID_START, count: 65536 }],
    });
    expect(check(j, "not-root").status).toBe("ok");
    expect(check(j, "subuid").status).toBe("ok");
    expect(check(j, "subid-overlap").status).toBe("ok");
    expect(check(j, "newuidmap"), "newuidmap must be installed (apt-get install uidmap; .ci/run does)").toMatchObject({ status: "ok" });
    expect(check(j, "userns-smoke")).toMatchObject({ status: "ok", summary: "unshare --user --map-root-user true works" });
    expect(check(j, "cgroup-version").status).toBe("warn");
    expect(check(j, "cgroup-delegation").status).toBe("skip");
    const tunMode = statSync("/dev/net/tun").mode & 0o777;
    expect(check(j, "dev-net-tun").status).toBe((tunMode & 0o006) === 0o006 ? "ok" : "fail");
    if (!pid1IsSystemd())
      expect(check(j, "user-manager")).toMatchObject({
        status: "warn",
        summary: expect.stringContaining("PID 1 is not systemd: the node runs under `rootless-k8s up`"),
      });
    expect(j.mode).toBe("none");
    expect(j.reasons[0]).toMatch(/hybrid/);
    const failed = j.checks.filter((c) => c.status === "fail").length;
    expect(r.code).toBe(failed ? 1 : 0);
  });

  it("as an ordinary user, as text: grouped checks and the verdict with what mode none gives up", async () => {
    const r = await doctorAsUser([]);
    expect(r.stdout).toContain(`user ${USER} (uid `);
    expect(r.stdout).toMatch(/Verdict: none: the node runs without cgroup control/);
    expect(r.stdout).toContain("no per-pod resource limits");
    expect(r.stdout).not.toMatch(/\x1b\[/);
  });

  it("as root: running as root is a failing check and the verdict is blocked, never a crash", async () => {
    const r = await runCli(["doctor", "--json"]);
    expect(r.stderr).toBe("");
    const j = JSON.parse(r.stdout) as DoctorJson;
    expect(check(j, "not-root")).toMatchObject({ status: "fail", summary: "running as root: a rootless node runs as an ordinary user" });
    expect(j.mode).toBe("blocked");
    expect(r.code).toBe(1);
  });

  it("as root with --user: evaluates that user", async () => {
    const r = await runCli(["doctor", "--json", "--user", USER]);
    const j = JSON.parse(r.stdout) as DoctorJson;
    expect(j.host.user.name).toBe(USER);
    expect(check(j, "not-root").status).toBe("ok");
    expect(check(j, "userns-smoke").status).toBe("skip");
    expect(j.mode).toBe("none");
  });

  it("on a kernel older than 5.11, rootless overlayfs is decided by a real mount in a user namespace", async () => {
    const real = localHost();
    // This machine, seen through a Host that reports an older kernel and a non-root caller: the probe
    // then mounts overlayfs inside `unshare --user --map-root-user --mount`, in a temporary folder.
    const host = { ...real, ids: { uid: 1000, gid: 1000 }, uname: () => ({ ...real.uname(), release: "5.10.0-26-amd64" }) };
    const before = execFileSync("sh", ["-c", "ls -d /tmp/tmp.* 2>/dev/null | wc -l"], { encoding: "utf8" });
    const f = await gatherFacts(host);
    expect(f.features.overlayRootless).toEqual({ ok: true, basis: "mount-test" });
    expect(execFileSync("sh", ["-c", "ls -d /tmp/tmp.* 2>/dev/null | wc -l"], { encoding: "utf8" })).toBe(before);
  });

  it("the root script for that user is valid sh and names the user", async () => {
    const r = await runCli(["doctor", "--root-script", "--user", USER]);
    expect(r.code).toBe(0);
    execFileSync("sh", ["-n"], { input: r.stdout });
    expect(r.stdout).toContain(`root-side fixes for ${USER}`);
  });
});
