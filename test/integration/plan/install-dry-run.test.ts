// `rootless-k8s install --dry-run` on this very machine (Debian 12, cgroup v1 hybrid: mode none),
// run through the bundled CLI as an ordinary user with a temporary HOME: the plan in words and as
// JSON, every file under --output with its mode, nothing written anywhere else, and bad input
// refused with the documented exit codes before anything is written.
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, chmodSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_BUNDLE, REPO, runCli } from "../../helpers/cli";
import { freePort, listen, type Listening } from "../../helpers/net";
import { tarBuffer } from "../../helpers/tar.mjs";
import { tempDir } from "../../helpers/temp";
import { testUser } from "../../helpers/user";

const user = testUser("rk8s-dryrun");
const work = tempDir("rk8s-dryrun-");
chmodSync(work, 0o755);
const home = join(work, "home");
const runtimeDir = join(work, "run");

/** A free port for the API server: 6443 may be taken on a shared machine (that refusal is tested below). */
let apiPort = "";
beforeAll(async () => {
  apiPort = String(await freePort("0.0.0.0"));
  mkdirSync(home, { mode: 0o755 });
  mkdirSync(runtimeDir, { mode: 0o700 });
  user.own(work);
});

/** The bundled CLI as the test user, with a clean environment and the temporary HOME. */
function cli(args: string[]) {
  const r = user.run(process.execPath, [CLI_BUNDLE, ...args], {
    HOME: home,
    USER: user.name,
    XDG_RUNTIME_DIR: runtimeDir,
    NO_COLOR: "1",
    ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * What a dry run must answer on this machine, from doctor's own view as the same user: exit 3
 * when a check fails (install would stop), else 0. One code, never "either".
 */
function expectedCode(): { code: 0 | 3; failing: string[] } {
  const d = cli(["doctor", "--json"]);
  const failing = (JSON.parse(d.stdout) as { checks: { id: string; status: string }[] }).checks
    .filter((c) => c.status === "fail")
    .map((c) => c.id);
  return { code: failing.length ? 3 : 0, failing };
}

const listing = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { recursive: true }).map(String).sort() : []);

describe("install --dry-run on this machine", () => {
  it.skipIf(process.getuid?.() !== 0)("refuses to run as root", async () => {
    const r = await runCli(["install", "--dry-run"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^error: refusing to install as root/m);
    expect(r.stderr).toMatch(/^fix: /m);
  });

  it("prints the plan: mode none on cgroup v1, what it gives up, the files, and the doctor's verdict", () => {
    const r = cli(["install", "--dry-run", "--api-port", apiPort]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(/^Node plan for rk8s-dryrun \(dry run: nothing was changed\)/);
    expect(r.stdout).toMatch(/^Mode {8}none$/m);
    expect(r.stdout).toMatch(/cgroup v1 hybrid|cgroup v1:/);
    expect(r.stdout).toMatch(/no per-pod resource limits/);
    expect(r.stdout).toMatch(/failCgroupV1 false/);
    expect(r.stdout).toMatch(/^Files \(\d+: \d+ new, 0 changed, 0 unchanged\)$/m);
    // No user manager for the test user on this machine: the node would run under `rootless-k8s up`.
    expect(r.stdout).toMatch(/^Runs under +rootless-k8s up \(no systemd\)$/m);
    expect(r.stdout).toContain("~/.config/rootless-k8s/services/rootless-k8s.target.json");
    const want = expectedCode();
    expect(r.code).toBe(want.code);
    if (want.code === 3) {
      expect(r.stdout).toMatch(new RegExp(`^Install would stop: ${want.failing.length} doctor checks? fails?$`, "m"));
      for (const id of want.failing) expect(r.stdout).toMatch(new RegExp(`^  FAIL  ${id} `, "m"));
    } else expect(r.stdout).toMatch(/Install would go ahead/);
    expect(listing(home)).toEqual([]);
  });

  it("--json gives the plan as data, with file hashes but no secrets", () => {
    const r = cli(["install", "--dry-run", "--json", "--api-port", apiPort]);
    const out = JSON.parse(r.stdout) as {
      schemaVersion: number;
      plan: {
        mode: { name: string };
        kubelet: { failCgroupV1: boolean | null; cgroupsPerQOS: boolean };
        node: { labels: Record<string, string> };
        paths: { home: string };
      };
      files: { path: string; mode: string; kind: string; sha256: string; state: string }[];
      blockingChecks: { id: string }[];
      wouldInstall: boolean;
    };
    expect(out.schemaVersion).toBe(1);
    expect(out.plan.mode.name).toBe("none");
    expect(out.plan.kubelet).toMatchObject({ failCgroupV1: false, cgroupsPerQOS: false });
    expect(out.plan.node.labels["rootless-k8s.io/resource-isolation"]).toBe("none");
    expect(out.plan.paths.home).toBe(home);
    expect(out.files.find((f) => f.path.endsWith("/pki/ca.key"))).toMatchObject({ mode: "0600", kind: "pki", state: "new" });
    expect(out.files.every((f) => /^[0-9a-f]{64}$/.test(f.sha256))).toBe(true);
    expect(r.stdout).not.toMatch(/PRIVATE KEY|client-key-data/);
    const want = expectedCode();
    expect(r.code).toBe(want.code);
    expect(out.wouldInstall).toBe(want.code === 0);
    expect(out.blockingChecks.map((c) => c.id).sort()).toEqual([...want.failing].sort());
  });

  it("--eviction-hard and --eviction-soft reach the kubelet's configuration, over the defaults", () => {
    const r = cli([
      "install",
      "--dry-run",
      "--json",
      "--api-port",
      apiPort,
      "--eviction-hard",
      "memory.available<300Mi,imagefs.available<0%",
      "--eviction-soft",
      "nodefs.available<15%",
      "--eviction-soft-grace",
      "2m",
    ]);
    const out = JSON.parse(r.stdout) as { plan: { kubelet: { eviction: unknown; reasons: string[] } } };
    expect(out.plan.kubelet.eviction).toMatchObject({
      hard: { "memory.available": "300Mi", "nodefs.available": "5%", "nodefs.inodesFree": "5%", "imagefs.available": "0%" },
      soft: { "nodefs.available": "15%" },
      softGracePeriod: { "nodefs.available": "2m" },
    });
    expect(out.plan.kubelet.reasons.join("\n")).toMatch(/eviction soft nodefs.available<15% after 2m/);
  });

  it("--output DIR writes every file at its mirrored path with its mode, and nothing else changes", () => {
    const out = join(work, "out");
    const r = cli(["install", "--dry-run", "--output", out, "--api-port", apiPort]);
    expect(r.code).toBe(expectedCode().code);
    expect(r.stdout).toContain(`Wrote them below ${out}.`);
    const mirrored = join(out, home);
    const key = join(mirrored, ".config/rootless-k8s/pki/ca.key");
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(statSync(join(mirrored, ".config/rootless-k8s/pki")).mode & 0o777).toBe(0o700);
    expect(statSync(join(mirrored, ".config/rootless-k8s/admin.kubeconfig")).mode & 0o777).toBe(0o600);
    expect(statSync(join(mirrored, ".local/share/rootless-k8s/libexec/rootless-k8s-enter")).mode & 0o777).toBe(0o755);
    expect(JSON.parse(readFileSync(join(mirrored, ".config/rootless-k8s/services/rootless-k8s.target.json"), "utf8")).members[0]).toBe(
      "rootless-k8s-rootlesskit.service",
    );
    expect(readFileSync(join(mirrored, ".config/rootless-k8s/kubelet-config.yaml"), "utf8")).toMatch(/cgroupsPerQOS: false/);
    expect(readFileSync(key, "utf8")).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    // The real HOME is untouched.
    expect(listing(home)).toEqual([]);
  });
});

describe("install --dry-run --output on a full disk", () => {
  it("stops with one line naming the file and the fix, never as a bug", () => {
    const mnt = tempDir("rk8s-dryrun-full-");
    const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=16k,uid=${user.uid},gid=${user.gid},mode=0755`, "tmpfs", mnt], {
      encoding: "utf8",
    });
    // (the tests run as root, as CI does: a mount that fails fails the test, never skips it)
    expect(mounted.status, mounted.stderr).toBe(0);
    try {
      const r = cli(["install", "--dry-run", "--output", join(mnt, "out"), "--api-port", apiPort]);
      expect(r.code).toBe(1);
      expect(r.stderr.split("\n")[0]).toMatch(new RegExp(`^error: no space left on the device of ${mnt}/out/\\S+ \\(disk full\\)$`));
      expect(r.stderr).toMatch(/^fix: free some space there and re-run the same command/m);
      expect(r.stderr).not.toMatch(/This is a bug/);
      expect(listing(home)).toEqual([]);
    } finally {
      spawnSync("umount", [mnt]);
    }
  });
});

describe("install refuses bad input before anything is written", () => {
  let busy: Listening;
  let busyPort = 0;
  beforeAll(async () => {
    busy = await listen(createServer());
    busyPort = busy.port;
  });
  afterAll(() => busy.close());

  it.each([
    [["install", "--dry-run", "--api-port", "70000"], 2, /--api-port must be a whole number from 1 to 65535/],
    [["install", "--output", "/tmp/x"], 2, /--output works with --dry-run only/],
    [["install", "--dry-run", "--timeout", "soon"], 2, /--timeout must be seconds/],
    [["install", "--dry-run", "--mode", "bogus"], 2, /--mode must be one of delegated, none/],
    [["install", "--dry-run", "--ignore-check", "no-such-check"], 2, /no check named no-such-check/],
    [["install", "--dry-run", "--mode", "delegated"], 3, /--mode delegated is not possible here/],
    [["install", "--dry-run", "--runtime", "docker"], 3, /--runtime docker: /],
    [["install", "--dry-run", "--runtime-bin", "/nonexistent/containerd"], 3, /no such program/],
    [["install", "--dry-run", "--trust-bundle"], 2, /--trust-bundle needs --bundle FILE/],
    [["install", "--dry-run", "--eviction-hard", "memory.free<1Gi"], 2, /"memory.free" is not an eviction signal of the kubelet/],
    [["install", "--dry-run", "--eviction-hard", "nodefs.available<120%"], 2, /a percentage is 0% \(off\) to 100%/],
    [["install", "--dry-run", "--eviction-soft-grace", "2m"], 2, /--eviction-soft-grace works with --eviction-soft only/],
    [["install", "--dry-run", "--node-port-range", "30000"], 2, /--node-port-range "30000": a range FIRST-LAST/],
    [["install", "--dry-run", "--node-port-range", "32000-31000"], 2, /it is reversed: 32000 is above 31000/],
    [["install", "--dry-run", "--node-port-range", "80-2000"], 2, /it starts below 1024/],
    [["install", "--dry-run", "--node-port-range", "6000-7000"], 2, /it holds the API server's port 6443/],
    [["install", "--dry-run", "--eviction-soft", "memory.available<1Gi", "--eviction-soft-grace", "soon"], 2, /is not a duration/],
    [["install", "--dry-run", "--eviction-hard", "memory.available<64Ei"], 3, /more than this machine's memory .* would not start/],
  ])("%j → exit %i", (args, code, message) => {
    const r = cli(args as string[]);
    expect(r.code).toBe(code);
    expect(r.stderr).toMatch(message as RegExp);
    expect(r.stderr).not.toMatch(/\n\s+at /); // never a stack trace
    expect(listing(home)).toEqual([]);
  });

  it("a published port already in use: refused with the fix, and --output stays empty", () => {
    const out = join(work, "out-refused");
    const r = cli(["install", "--dry-run", "--api-port", String(busyPort), "--output", out]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`^error: refusing this plan: host port ${busyPort} is already in use`, "m"));
    // The holder is named from the socket's owner (this test, as root or as the runner), and the fix names a free port.
    expect(r.stderr).toMatch(new RegExp(`already in use \\(by \\S+ \\(uid ${process.getuid?.()}\\)\\)`));
    expect(r.stderr).toMatch(/^fix: pick a free port with --api-port \d+, or stop what listens/m);
    expect(existsSync(out)).toBe(false);
    expect(listing(home)).toEqual([]);
  });
});

describe("6443 taken by another user: doctor and install agree (one rule, cli/doctor/port-choice.ts)", () => {
  // 6443 is held either way: by this test (another uid than the test user), or already by someone else.
  let held: Listening | null = null;
  beforeAll(async () => {
    held = await listen(createServer(), { host: "127.0.0.1", port: 6443 }).catch(() => null);
  });
  afterAll(async () => {
    await held?.close();
  });

  it("doctor warns (no failure) naming the port install will take, and the dry run plans that very port", () => {
    const d = cli(["doctor", "--json"]);
    const ports = (JSON.parse(d.stdout) as { checks: { id: string; status: string; summary: string }[] }).checks.find(
      (c) => c.id === "ports",
    )!;
    expect(ports.status).toBe("warn");
    const m = /^6443 is taken by (.+); install will publish the API server on (\d+), or choose one with --api-port/.exec(ports.summary);
    expect(m, ports.summary).not.toBeNull();
    if (held) expect(m![1]).toMatch(new RegExp(`\\(uid ${process.getuid?.()}\\)$`));
    const r = cli(["install", "--dry-run", "--json"]);
    const out = JSON.parse(r.stdout) as { plan: { ports: { apiServer: number } }; blockingChecks: { id: string }[] };
    expect(out.plan.ports.apiServer).toBe(Number(m![2]));
    expect(out.blockingChecks.map((c) => c.id)).not.toContain("ports");
    expect(r.code).toBe(expectedCode().code);
    expect(listing(home)).toEqual([]);
  });

  it("install --api-port 6443 is refused before anything is written: exit 3, naming the holder and a free port", () => {
    const r = cli(["install", "--yes", "--api-port", "6443"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/--api-port 6443 is taken by .+: install refuses it; \d+ is free/);
    expect(r.stderr).toMatch(/rootless-k8s install --api-port \d+/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(listing(home)).toEqual([]);
  });
});

describe("install --dry-run --bundle plans the version set that install fetches", () => {
  // A bundle made from another manifest (the built-in one with Kubernetes relabelled 1.35.9). Install
  // takes a bundle's own versions only with --trust-bundle; otherwise it fetches the built-in set and
  // checks the bundle's files against its pins. The dry run must plan the same set.
  const builtin = JSON.parse(readFileSync(join(REPO, "assets/components.json"), "utf8")) as {
    artifacts: { component: string; version: string }[];
  };
  const builtinK8s = builtin.artifacts.find((a) => a.component === "kubernetes")!.version;
  const bundle = join(work, "other-manifest.tar");
  beforeAll(() => {
    const other = structuredClone(builtin);
    for (const a of other.artifacts) if (a.component === "kubernetes") a.version = "1.35.9";
    const index = {
      schema: 1,
      kind: "rootless-k8s-bundle",
      createdBy: "test",
      createdAt: "2025-01-01T00:00:00Z",
      arch: process.arch === "arm64" ? "arm64" : "amd64",
      manifest: other,
      files: [],
    };
    writeFileSync(bundle, tarBuffer([{ path: "rootless-k8s-bundle.json", content: JSON.stringify(index) }]));
  });
  const k8sOf = (args: string[]) => {
    const r = cli(["install", "--dry-run", "--json", "--api-port", apiPort, "--bundle", bundle, ...args]);
    expect(r.stderr).toBe("");
    return (JSON.parse(r.stdout) as { plan: { versions: { components: Record<string, string> } } }).plan.versions.components.kubernetes;
  };

  it("without --trust-bundle: the built-in set; with it: the bundle's", () => {
    expect(k8sOf([])).toBe(builtinK8s);
    expect(k8sOf(["--trust-bundle"])).toBe("1.35.9");
  });
});
