// The command-line shell: help, version, unknown commands and flags, exit codes.
import { describe, expect, it } from "vitest";
import { CLI_BUNDLE, runCli } from "../helpers/cli";
import { testUser } from "../helpers/user";
import { tempDir } from "../helpers/temp";
import { readdirSync } from "node:fs";

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

  // A home with no receipt and no cache: were the URL let through, upgrade would stop at the
  // missing receipt (exit 3) and install at the refusal of root or at doctor (exit 3), not exit 2.
  it.each([
    [["install", "--mirror", "ftp://mirror.example.com/k8s"], {}, "--mirror"],
    [["install", "--dry-run", "--mirror", "not a url"], {}, "--mirror"],
    [["upgrade", "--mirror", "file:///srv/k8s"], {}, "--mirror"],
    [["install", "--dry-run"], { ROOTLESS_K8S_MIRROR: "ftp://x" }, "ROOTLESS_K8S_MIRROR"],
  ] as const)("%j with a mirror that is no http(s) URL is bad usage, refused first (exit 2)", async (args, env, where) => {
    const home = tempDir("rk8s-mirror-");
    const r = await runCli([...args], { env: { HOME: home, XDG_CACHE_HOME: `${home}/.cache`, ...env } });
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toMatch(new RegExp(`^error: ${where} must be an http:// or https:// URL`));
    expect(r.stderr).not.toMatch(/doctor|refusing/);
    expect(readdirSync(home)).toEqual([]);
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

  it("wait: a flag of the other peer is bad usage, exit 2", async () => {
    for (const [peer, ...rest] of [
      ["etcd", "--endpoint", "https://127.0.0.1:2379", "--bootstrap-marker", "/nonexistent/bootstrapped"],
      ["api", "--kubeconfig", "/nonexistent/kubeconfig", "--endpoint", "https://127.0.0.1:2379"],
    ] as string[][]) {
      const r = await runCli(["wait", peer as string, ...rest]);
      expect(r.code).toBe(2);
      expect(r.stderr.split("\n")[0]).toMatch(/^error: --(bootstrap-marker|endpoint) is for wait (api|etcd) only$/);
    }
  });
});

describe("a file-system failure is the user's to fix, never reported as a bug", () => {
  it("a folder the user may not write: one line naming it, and the fix", () => {
    const user = testUser("rk8s-cli");
    const r = user.run(process.execPath, [CLI_BUNDLE, "cache", "clean"], {
      HOME: user.newHome(),
      XDG_CACHE_HOME: "/usr",
      NO_COLOR: "1",
      ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
    });
    expect(r.status).toBe(1);
    expect(r.stderr.split("\n")[0]).toBe("error: cannot mkdir /usr/rootless-k8s: permission denied");
    expect(r.stderr).toMatch(/^fix: make the folder writable by you, or choose another place/m);
    expect(r.stderr).not.toMatch(/This is a bug/);
  });
});
