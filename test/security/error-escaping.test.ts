// Issue 34: an error is one line, its fix another, whatever the input it quotes. A hostile manifest,
// bundle index, --node-ip or --runtime-bin holding "\nfix: rm -rf ~" must not add a fix line of its
// own to what the user reads: the presenter (cli/main.ts reportError) escapes every control
// character of every message and fix it prints. Each case runs the bundled CLI as an ordinary user,
// with a fresh HOME, and reads its stderr as the user would.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as tar from "tar";
import { describe, expect, it } from "vitest";
import { CLI_BUNDLE } from "../helpers/cli";
import { runAs, testUser, USER_PATH } from "../helpers/user";

const user = testUser("rk8s-se-escape");
const INJECTED = "\nfix: rm -rf ~";

/** Runs the CLI as the user in a fresh HOME; `files` are written into a folder of theirs first (`dir`). */
async function run(args: (dir: string) => string[], files: (dir: string) => void = () => {}) {
  const home = user.newHome();
  const run = join(home, "run");
  mkdirSync(run, { mode: 0o700 });
  const dir = join(home, "input");
  mkdirSync(dir);
  files(dir);
  user.own(home);
  return runAs(
    user,
    process.execPath,
    [CLI_BUNDLE, ...args(dir)],
    { HOME: home, USER: user.name, XDG_RUNTIME_DIR: run, PATH: USER_PATH, NO_COLOR: "1", ROOTLESS_K8S_NO_UPDATE_CHECK: "1" },
    { timeoutMs: 60_000 },
  );
}

/** The user sees exactly two lines: the error, quoting the input escaped, and the tool's own fix. */
function oneErrorOneFix(r: { code: number | null; stderr: string }, code: number, quoted: RegExp, fix: string): void {
  expect(r.code, r.stderr).toBe(code);
  expect(r.stderr, "no stack trace").not.toMatch(/\bat .*\.(js|ts|cjs):\d+|This is a bug/);
  const lines = r.stderr.replace(/\n$/, "").split("\n");
  expect(lines, r.stderr).toHaveLength(2);
  expect(lines[0]).toMatch(/^error: /);
  expect(lines[0]).toMatch(quoted);
  expect(lines[0]).toContain("\\nfix: rm -rf ~");
  expect(lines[1]).toBe(`fix: ${fix}`);
  expect(r.stderr, "no raw control character but the two line ends").not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  expect(r.stderr).not.toMatch(/^fix: rm/m);
}

const artifact = (version: string) => ({
  id: "tool",
  component: "tool",
  version,
  url: "https://upstream.invalid/tool/v{version}/tool-{arch}",
  arch: { amd64: "amd64", arm64: "arm64" },
  format: "binary",
  binaries: [{ name: "tool" }],
  checksums: {
    amd64: { algorithm: "sha256", value: "0".repeat(64), source: "test" },
    arm64: { algorithm: "sha256", value: "0".repeat(64), source: "test" },
  },
});

describe("an error quoting hostile input stays one line, its fix the tool's own (issue 34)", () => {
  it("--manifest whose artifact version carries a newline and a fake fix line", async () => {
    const r = await run(
      (dir) => ["components", "--manifest", join(dir, "m.json")],
      (dir) => writeFileSync(join(dir, "m.json"), JSON.stringify({ schema: 1, name: "hostile", artifacts: [artifact(`1.0${INJECTED}`)] })),
    );
    oneErrorOneFix(
      r,
      2,
      /artifact "tool" version must be a version .*\(got "1\.0\\nfix: rm -rf ~"\)$/,
      "fix the manifest; its schema is documented in docs/manifest.md",
    );
  });

  it("a bundle whose index names an arch with a newline and a fake fix line", async () => {
    const r = await run(
      (dir) => ["cache", "fetch", "--bundle", join(dir, "b.tar")],
      (dir) => {
        const index = "rootless-k8s-bundle.json";
        writeFileSync(join(dir, index), JSON.stringify({ kind: "rootless-k8s-bundle", schema: 1, arch: `amd64${INJECTED}`, files: [] }));
        tar.c({ file: join(dir, "b.tar"), cwd: dir, sync: true, portable: true }, [index]);
      },
    );
    oneErrorOneFix(
      r,
      4,
      /is not a usable rootless-k8s bundle: its arch "amd64\\nfix: rm -rf ~" is unknown$/,
      "make one with `rootless-k8s bundle --arch ARCH -o FILE` on a machine with network access",
    );
  });

  it('install --dry-run --node-ip "1.2.3.4\\nfix: rm -rf ~"', async () => {
    const r = await run(() => ["install", "--dry-run", "--node-ip", `1.2.3.4${INJECTED}`]);
    expect(r.stderr).toMatch(/^fix: pass one of this host's addresses: --node-ip \S+$/m);
    const fix = /^fix: (.*)$/m.exec(r.stderr)?.[1] ?? "";
    oneErrorOneFix(r, 2, /^error: --node-ip 1\.2\.3\.4\\nfix: rm -rf ~ is not an IPv4 address$/, fix);
  });

  it("install --dry-run --runtime-bin with a newline and a fake fix line", async () => {
    const r = await run(() => ["install", "--dry-run", "--runtime-bin", `/nonexistent/containerd${INJECTED}`]);
    oneErrorOneFix(
      r,
      3,
      /^error: --runtime-bin \/nonexistent\/containerd\\nfix: rm -rf ~: no such program$/,
      "give the full path of a containerd binary",
    );
  });

  it("an unknown command with a newline and a fake fix line", async () => {
    const r = await run(() => [`nodes${INJECTED}`]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe('error: unknown command "nodes\\nfix: rm -rf ~"\nRun `rootless-k8s --help` for the list of commands.\n');
  });
});
