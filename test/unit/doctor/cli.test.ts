// `rootless-k8s doctor` as a process: flags, bad usage (exit 2, one line, the usage), --root on a
// fixture's files (no commands run), --root-script, colour only when asked for.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli";
import { FIXTURE_HOSTS } from "../../helpers/fixture-host";

const STACK = /\bat .*\.(js|ts|cjs):\d+/;
const root = (name: string) => join(FIXTURE_HOSTS, name, "root");

describe("doctor command line", () => {
  it.each([
    [["--json", "--root-script"], "error: --json and --root-script cannot be combined"],
    [["--root", "/no/such/dir"], "error: --root /no/such/dir: no such directory"],
    [["--user", "no-such-user-rk8s"], 'error: --user: no user "no-such-user-rk8s" in /etc/passwd or NSS'],
    [["--data-dir", "relative/dir"], 'error: --data-dir must be an absolute path (got "relative/dir")'],
    [["--user"], "error: option --user needs a value"],
    [["extra"], 'error: unexpected argument "extra"'],
  ])("%j: exit 2, one line and the usage", async (args, line) => {
    const r = await runCli(["doctor", ...args]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split("\n");
    expect(lines[0]).toBe(line);
    expect(lines[1]).toMatch(/^usage: rootless-k8s doctor /);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.stdout).toBe("");
  });

  it("--help documents every flag and the exit codes", async () => {
    const r = await runCli(["doctor", "--help"]);
    expect(r.code).toBe(0);
    for (const f of ["--json", "--root-script", "--user NAME|UID", "--root DIR", "--data-dir DIR"]) expect(r.stdout).toContain(f);
    expect(r.stdout).toMatch(/0 when no check failed/);
  });

  it("--root reads a system image's files and runs no command", async () => {
    const r = await runCli(["doctor", "--json", "--root", root("debian-12"), "--user", "user1"]);
    const j = JSON.parse(r.stdout);
    expect(j.host.distro).toMatchObject({ id: "debian", versionId: "12", prettyName: "Debian GNU/Linux 12 (bookworm)" });
    expect(j.host.cgroup).toEqual({ mode: "v2", delegatedControllers: ["cpu", "memory", "pids"] });
    expect(j.host.systemd).toMatchObject({ version: 252, linger: true });
    // Tools present in the image are found, but their versions are unknown: nothing was run.
    expect(j.host.runtimes.containerd).toMatchObject({ path: "/usr/bin/containerd", version: null });
    expect(Object.values(j.host.runtimes).every((t) => t === null || (t as { version: unknown }).version === null)).toBe(true);
    expect(j.notes[0]).toMatch(/^commands were not run \(files read from .*debian-12\/root\)/);
    expect(j.mode).toBe("delegated");
    expect(r.code).toBe(1);
  });

  it("--root-script prints only the script, valid for sh, exit 0 even when checks fail", async () => {
    const r = await runCli(["doctor", "--root-script", "--root", root("centos-7"), "--user", "user1"]);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith("#!/bin/sh\n")).toBe(true);
    expect(r.stdout).toContain("yum install -y shadow-utils");
    execFileSync("sh", ["-n"], { input: r.stdout });
  });

  it("plain text when piped or under NO_COLOR, colour when forced", async () => {
    const plain = await runCli(["doctor", "--root", root("ubuntu-22.04"), "--user", "testuser"]);
    expect(plain.stdout).not.toMatch(/\x1b\[/);
    expect(plain.stdout).toMatch(/Verdict: none/);
    const forced = await runCli(["doctor", "--root", root("ubuntu-22.04"), "--user", "testuser"], {
      env: { NO_COLOR: undefined, FORCE_COLOR: "1" },
    });
    expect(forced.stdout).toMatch(/\x1b\[1mVerdict:/);
  });
});

describe("doctor --join command line: bad usage is one line, exit 2, and nothing is asked of the network", () => {
  const HASH = `sha256:${"ab".repeat(32)}`;
  it.each([
    [
      ["--join", "https://192.0.2.1:6443", "--token", "abcdef.0123456789abcdef"],
      {},
      /^error: --token puts the token where `ps` shows it to every user: pass it as ROOTLESS_K8S_TOKEN=ID.SECRET or --token-file FILE$/,
    ],
    [
      ["--join", "http://192.0.2.1:6443", "--ca-hash", HASH],
      {},
      /^error: --join "http:\/\/192.0.2.1:6443" is not an https:\/\/HOST:PORT URL$/,
    ],
    [["--join", "https://192.0.2.1:6443"], {}, /^error: --join needs --ca-hash sha256:HASH \(from the join line\)$/],
    [["--join", "https://192.0.2.1:6443", "--ca-hash", "sha256:zz"], {}, /^error: --ca-hash "sha256:zz" is not sha256: and 64 hex digits$/],
    [
      ["--join", "https://192.0.2.1:6443", "--ca-hash", HASH],
      { ROOTLESS_K8S_TOKEN: undefined },
      /^error: --join needs the token: set ROOTLESS_K8S_TOKEN=ID.SECRET/,
    ],
    [
      ["--join", "https://192.0.2.1:6443", "--ca-hash", HASH],
      { ROOTLESS_K8S_TOKEN: "abcdef:0123456789abcdef" },
      /^error: the token is not ID.SECRET/,
    ],
    [
      ["--join", "https://192.0.2.1:6443", "--ca-hash", HASH, "--token-file", "/no/such/file"],
      {},
      /^error: --token-file \/no\/such\/file: ENOENT$/,
    ],
    [["--ca-hash", HASH], {}, /^error: --ca-hash works with --join only$/],
  ])("%j", async (args, env, line) => {
    const r = await runCli(["doctor", ...args], { env });
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toMatch(line);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.stdout).toBe("");
  });
});
