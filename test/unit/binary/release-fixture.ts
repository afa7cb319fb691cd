// Real single binaries and release folders for the binary, install.sh and self-upgrade tests:
// - testBinary(version): the SEA binary (amd64, the host arch) built from this checkout by
//   scripts/bundle.mjs + scripts/build-sea.sh with RK8S_VERSION=version, cached under
//   .cache/test-sea/ by the hash of its inputs and shared by test files and runs (built under flock);
// - addRelease / writeRelease: a release folder in the published layout (scripts/release.sh);
// - installUser: the real non-root user (test/helpers/user.ts) those tests install as.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { REPO } from "../../helpers/cli";
import { sha256 } from "../../helpers/hash";
import { testUser } from "../../helpers/user";

export const ARCH = process.arch === "arm64" ? "arm64" : "amd64";
export const BINARY_NAME = `rootless-k8s-linux-${ARCH}`;
const CACHE = join(REPO, ".cache", "test-sea");
/** PATH with the pinned Node first, as `npm run` has it (build-sea.sh refuses any other node). */
const BUILD_PATH = `${dirname(process.execPath)}:${join(REPO, "node_modules", ".bin")}:${process.env.PATH}`;

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

/** The user that installs and upgrades the binary in the install.sh and self-upgrade tests. */
export const installUser = () => testUser("rk8s-inst", { shell: "/bin/bash" });

/** Every file under `dir` (relative paths), to assert what a run left behind. */
export function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}
