// Real single binaries and release folders for the binary, install.sh and self-upgrade tests:
// - testBinary(version): the SEA binary (amd64, the host arch) built from this checkout by
//   scripts/bundle.mjs + scripts/build-sea.sh with RK8S_VERSION=version, cached under
//   .cache/test-sea/ by the hash of its inputs and shared by test files and runs (built under flock);
// - addRelease / writeRelease: a release folder in the published layout (scripts/release.sh);
// - serveDir: a static HTTP server on 127.0.0.1 that records every request;
// - testUser / runAs: a real non-root user and commands run as that user with a temporary HOME.
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chownSync, createReadStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { REPO } from "../../helpers/cli";

export const ARCH = process.arch === "arm64" ? "arm64" : "amd64";
export const BINARY_NAME = `rootless-k8s-linux-${ARCH}`;
const CACHE = join(REPO, ".cache", "test-sea");
/** PATH with the pinned Node first, as `npm run` has it (build-sea.sh refuses any other node). */
const BUILD_PATH = `${dirname(process.execPath)}:${join(REPO, "node_modules", ".bin")}:${process.env.PATH}`;

const sha256 = (data: Buffer | string) => createHash("sha256").update(data).digest("hex");
export const sha256File = (file: string) => sha256(readFileSync(file));

/** A folder holding `rootless-k8s-linux-<arch>` (default: this machine's) built at `version`, and its SHA256SUMS. */
export function testBinary(version: string, arch: "amd64" | "arm64" = ARCH): string {
  mkdirSync(CACHE, { recursive: true });
  const bundle = join(CACHE, `bundle-${version}-${process.pid}.cjs`);
  execFileSync(process.execPath, [join(REPO, "scripts", "bundle.mjs"), bundle], { env: { ...process.env, RK8S_VERSION: version } });
  const key = sha256(readFileSync(bundle) + readFileSync(join(REPO, "scripts", "build-sea.sh"), "utf8") + process.version).slice(0, 16);
  const name = `${version}-${arch}`;
  const out = join(CACHE, `${name}-${key}`);
  const script = `[ -f "$OUT/SHA256SUMS" ] || { rm -rf "$OUT.tmp" && OUT="$OUT.tmp" bash scripts/build-sea.sh >/dev/null && mv "$OUT.tmp" "$OUT"; }`;
  try {
    execFileSync("flock", [join(CACHE, ".lock"), "bash", "-c", script], {
      cwd: REPO,
      env: { ...process.env, PATH: BUILD_PATH, BUNDLE: bundle, OUT: out, ARCHS: arch },
      stdio: ["ignore", "inherit", "inherit"],
    });
  } finally {
    rmSync(bundle, { force: true });
  }
  for (const old of readdirSync(CACHE)) {
    if (old.startsWith(`${name}-`) && old !== `${name}-${key}` && !old.endsWith(".tmp")) rmSync(join(CACHE, old), { recursive: true, force: true });
  }
  return out;
}

/** Adds a build folder as one version of the release base `base`, with scripts/release.sh. */
export function addRelease(base: string, buildDir: string, opts: { latest?: boolean } = {}): void {
  const args = [join(REPO, "scripts", "release.sh"), "--from", buildDir, ...(opts.latest === false ? ["--no-latest"] : []), base];
  execFileSync("bash", args, { stdio: "pipe", env: { ...process.env, PATH: BUILD_PATH } });
}

/**
 * Writes one version of a release by hand, for what release.sh refuses to make: a tampered binary
 * (SHA256SUMS of the real one), a mislabelled one, a broken one. `sumsOf` overrides the checksum listed.
 */
export function writeRelease(
  base: string,
  version: string,
  files: Record<string, Buffer>,
  opts: { latest?: boolean; sumsOf?: Record<string, string> } = {},
): void {
  const dir = join(base, version);
  mkdirSync(dir, { recursive: true });
  const sums = Object.entries(files).map(([name, data]) => {
    writeFileSync(join(dir, name), data, { mode: 0o644 });
    return `${opts.sumsOf?.[name] ?? sha256(data)}  ${name}\n`;
  });
  writeFileSync(join(dir, "SHA256SUMS"), sums.join(""));
  if (!existsSync(join(base, "install.sh"))) writeFileSync(join(base, "install.sh"), readFileSync(join(REPO, "scripts", "install.sh")));
  if (opts.latest !== false) writeFileSync(join(base, "latest.txt"), `${version}\n`);
}

export interface StaticServer {
  url: string;
  /** Requests so far, in order: path and User-Agent. */
  requests: { path: string; agent: string }[];
  /** The paths requested so far, in order. */
  paths(): string[];
  close(): Promise<void>;
}

/** Serves the files under `root` on 127.0.0.1 (GET only; 404 for anything else). */
export async function serveDir(root: string): Promise<StaticServer> {
  const requests: StaticServer["requests"] = [];
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    requests.push({ path, agent: req.headers["user-agent"] ?? "" });
    const file = join(root, normalize(path));
    if (req.method !== "GET" || !file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end("not found\n");
      return;
    }
    res.writeHead(200, { "content-length": statSync(file).size, "content-type": "application/octet-stream" });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    paths: () => requests.map((r) => r.path),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const isRoot = process.getuid?.() === 0;

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  /** A fresh empty HOME owned by the user (0700). */
  newHome(): string;
}

/** A real non-root user (created once, under a lock), for tests that must not run as root. */
export function testUser(name = "rk8s-inst"): TestUser {
  execFileSync("flock", ["/tmp/rootless-k8s-test-useradd.lock", "sh", "-c", `id -u ${name} >/dev/null 2>&1 || useradd --no-create-home --shell /bin/bash ${name}`]);
  const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8" }).trim());
  return {
    name,
    uid,
    gid,
    newHome() {
      const home = mkdtempSync(join(tmpdir(), `${name}-home-`));
      chownSync(home, uid, gid);
      return home;
    },
  };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `cmd args` as `user` with exactly `env` (no inherited environment), from `cwd`. */
export function runAs(user: TestUser | null, cmd: string, args: string[], env: Record<string, string>, opts: { cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env,
      cwd: opts.cwd ?? env.HOME ?? "/",
      stdio: ["ignore", "pipe", "pipe"],
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Every file under `dir` (relative paths), to assert what a run left behind. */
export function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}
