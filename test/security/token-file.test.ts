// Issue 34, finding 3: a join token is a bearer secret (until it expires it gets any host that holds
// it a kubelet certificate of the cluster).
// - `join --token-file FILE` and `doctor --join --token-file FILE` refuse a FILE its group or others
//   may read (exit 2, one line, `chmod 600 FILE` as the fix) before anything is sent anywhere: a
//   loopback "control plane" counts the connections it gets, and gets none;
// - `token create --ttl` has an upper bound, 168h (7 days): kubeadm's --ttl has none (0 never
//   expires), but its default became 24 h because tokens that never expire were a risk
//   (kubernetes/kubeadm#343). Longer is bad usage (exit 2), refused before any node is looked for.
// Both are in the commands' help. Run through the bundled CLI as an ordinary user, on real files.
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_BUNDLE } from "../helpers/cli";
import { tempDir } from "../helpers/temp";
import { runAs, testUser, USER_PATH } from "../helpers/user";

const user = testUser("rk8s-sc-token");
const work = tempDir("rk8s-sc-token-");
chmodSync(work, 0o755);
const home = join(work, "home");
const runtimeDir = join(work, "run");
const TOKEN = "abcdef.0123456789abcdef";
const CA_HASH = `sha256:${"a".repeat(64)}`;
const STACK = /\bat .*\.(js|ts|cjs):\d+|This is a bug/;

/** A loopback server that only counts connections (and closes them): where a token would go. */
let server: Server;
let connections = 0;
let url = "";
beforeAll(async () => {
  mkdirSync(home, { mode: 0o755 });
  mkdirSync(runtimeDir, { mode: 0o700 });
  user.own(work);
  server = createServer((s: Socket) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

const ENV = () => ({
  HOME: home,
  USER: user.name,
  XDG_RUNTIME_DIR: runtimeDir,
  PATH: USER_PATH,
  NO_COLOR: "1",
  ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
});

/**
 * The bundled CLI as the user, from `work`, without blocking this process: the loopback server
 * must count a connection while the command runs (spawnSync would hold its accept back).
 */
async function cli(args: string[]) {
  const r = await runAs(user, process.execPath, [CLI_BUNDLE, ...args], ENV(), { cwd: work, timeoutMs: 30_000 });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

/** The token in a file of the user's own with exactly mode `m`. */
function tokenFile(name: string, m: number): string {
  const f = join(work, name);
  writeFileSync(f, `${TOKEN}\n`);
  user.own(f);
  chmodSync(f, m);
  return f;
}

const joinArgs = (f: string) => ["join", url, "--ca-hash", CA_HASH, "--token-file", f, "--yes"];
const doctorArgs = (f: string) => ["doctor", "--join", url, "--ca-hash", CA_HASH, "--token-file", f];

const READABLE = [
  ["0644", "anyone"],
  ["0604", "anyone"],
  ["0444", "anyone"],
  ["0640", "its group"],
  ["0660", "its group"],
] as const;

describe("a token file its group or others may read is refused before anything is sent (issue 34, finding 3)", () => {
  for (const [command, args] of [
    ["join", joinArgs],
    ["doctor --join", doctorArgs],
  ] as const) {
    it.each(READABLE)(`${command}: mode %s (%s may read it): exit 2, one line and the chmod, no connection`, async (oct, who) => {
      const f = tokenFile(`${command.replace(/\W+/g, "-")}-${oct}`, parseInt(oct, 8));
      const before = connections;
      const r = await cli(args(f));
      expect(r.stderr).not.toMatch(STACK);
      expect(r.code, r.stderr).toBe(2);
      const lines = r.stderr.trimEnd().split("\n");
      expect(lines).toEqual([
        `error: --token-file ${f}: ${who} may read it (mode ${oct}), and a join token is a secret`,
        `fix: chmod 600 ${f}`,
      ]);
      expect(r.stdout + r.stderr).not.toContain(TOKEN.split(".")[1]);
      expect(connections).toBe(before);
    });
  }

  it("a relative --token-file: the fix names the file by its full path", async () => {
    const f = tokenFile("relative-token", 0o644);
    const r = await cli(doctorArgs("relative-token"));
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("error: --token-file relative-token: anyone may read it (mode 0644)");
    expect(r.stderr).toContain(`fix: chmod 600 ${f}`);
  });

  it.each(["0600", "0400"])("mode %s (only the user may read it): accepted, and the preflight goes to the server", async (oct) => {
    const f = tokenFile(`private-${oct}`, parseInt(oct, 8));
    const before = connections;
    const r = await cli(doctorArgs(f));
    expect(r.stderr).not.toMatch(/may read it/);
    expect(r.stderr).not.toMatch(STACK);
    expect(connections).toBeGreaterThan(before);
  });

  it("the fix works: after chmod 600 the same file is accepted", async () => {
    const f = tokenFile("fixed", 0o644);
    expect((await cli(doctorArgs(f))).code).toBe(2);
    chmodSync(f, 0o600);
    const before = connections;
    const r = await cli(doctorArgs(f));
    expect(r.stderr).not.toMatch(/may read it/);
    expect(connections).toBeGreaterThan(before);
  });

  it("a token piped on standard input (--token-file -) is no file at rest: accepted", async () => {
    const before = connections;
    const piped = ["sh", "-c", `printf '%s\\n' "$0" | "$@"`, TOKEN, process.execPath, CLI_BUNDLE, ...doctorArgs("-")];
    const r = await runAs(user, piped[0]!, piped.slice(1), ENV(), { cwd: work, timeoutMs: 30_000 });
    expect(r.stderr).not.toMatch(/may read it/);
    expect(connections).toBeGreaterThan(before);
  });

  it("join --help and doctor --help say so", async () => {
    expect((await cli(["join", "--help"])).stdout.replace(/\s+/g, " ")).toContain(
      "a file its group or others may read is refused (chmod 600 FILE)",
    );
    expect((await cli(["doctor", "--help"])).stdout.replace(/\s+/g, " ")).toContain(
      "a file its group or others may read is refused (chmod 600 FILE)",
    );
  });
});

describe("token create --ttl is at most 168h (7 days)", () => {
  it.each(["169h", "604801", "10081m", "8760h", "99999999h"])(
    "--ttl %s: bad usage (exit 2), refused before anything is read",
    async (ttl) => {
      const r = await cli(["token", "create", "--ttl", ttl]);
      expect(r.stderr).not.toMatch(STACK);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.split("\n")[0]).toBe(
        `error: --ttl "${ttl}" is longer than 168h (7 days), the longest a join token may live: use --ttl 168h or less, and a new token for a later join`,
      );
      expect(r.stderr).toMatch(/usage: rootless-k8s token /);
    },
  );

  it.each(["168h", "604800", "10080m", "24h", "90s"])("--ttl %s: within the bound, so on to the node (none here: exit 3)", async (ttl) => {
    const r = await cli(["token", "create", "--ttl", ttl]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/^error: no node installed/);
  });

  it("token --help says so", async () => {
    const help = (await cli(["token", "--help"])).stdout.replace(/\s+/g, " ");
    expect(help).toContain("at most 168h (7 days)");
    expect(help).toContain("refuse a token file its group or others may read");
  });
});
