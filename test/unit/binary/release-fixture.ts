// Real single binaries and release folders for the binary, install.sh and self-upgrade tests:
// - testBinary(version): the SEA binary (amd64, the host arch) built from this checkout by
//   scripts/bundle.mjs + scripts/build-sea.sh with RK8S_VERSION=version, cached under
//   .cache/test-sea/ by the hash of its inputs and shared by test files and runs (built under flock);
// - addRelease / writeRelease: a release folder in the published layout (scripts/release.sh), signed
//   with testSigningKey(), a throwaway ed25519 key made at test time outside the repository;
// - installUser: the real non-root user (test/helpers/user.ts) those tests install as.
import { execFileSync } from "node:child_process";
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { REPO } from "../../helpers/cli";
import { sha256 } from "../../helpers/hash";
import { testUser } from "../../helpers/user";

export const ARCH = process.arch === "arm64" ? "arm64" : "amd64";
export const BINARY_NAME = `rootless-k8s-linux-${ARCH}`;
const CACHE = join(REPO, ".cache", "test-sea");
/** PATH with the pinned Node first, as `npm run` has it (build-sea.sh refuses any other node). */
const BUILD_PATH = `${dirname(process.execPath)}:${join(REPO, "node_modules", ".bin")}:${process.env.PATH}`;

export interface SigningKey {
  /** The private key's PEM file (mode 0600). */
  file: string;
  /** The public key as the binary and install.sh carry it: base64 of its SPKI DER form. */
  publicKey: string;
}

/** A fresh ed25519 key in a new folder (for a release signed by someone else). */
export function newSigningKey(dir: string): SigningKey {
  const file = join(dir, `key-${process.pid}-${Math.random().toString(16).slice(2)}.pem`);
  writeFileSync(file, generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  return { file, publicKey: publicKeyOf(file) };
}

/**
 * The throwaway release key of the tests: made at test time (never committed) in the system temp
 * folder, outside the repository as scripts/release.sh demands, and kept there so that the cached
 * test binaries, which carry its public key, stay valid between runs.
 */
export function testSigningKey(): SigningKey {
  const dir = join(tmpdir(), `rk8s-test-release-key-${process.getuid?.() ?? 0}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, "release-test-key.pem");
  if (!existsSync(file)) {
    const fresh = newSigningKey(dir);
    try {
      linkSync(fresh.file, file); // atomic: the first test file to get here wins
    } catch {
      // another test file made it first
    }
    rmSync(fresh.file, { force: true });
  }
  return { file, publicKey: publicKeyOf(file) };
}

function publicKeyOf(file: string): string {
  return createPublicKey(createPrivateKey(readFileSync(file)))
    .export({ format: "der", type: "spki" })
    .toString("base64");
}

/** The raw ed25519 signature of `data` by `key`, as SHA256SUMS.sig holds it. */
export function signWith(key: SigningKey, data: Buffer | string): Buffer {
  return sign(null, Buffer.from(data), createPrivateKey(readFileSync(key.file)));
}

/** The repository's install.sh with `key` written in, as scripts/release.sh publishes it. */
export function installShWithKey(key: SigningKey = testSigningKey()): string {
  return readFileSync(join(REPO, "scripts", "install.sh"), "utf8").replace(
    /^ROOTLESS_K8S_RELEASE_KEY=.*$/m,
    `ROOTLESS_K8S_RELEASE_KEY=${key.publicKey}`,
  );
}

/** A folder holding `rootless-k8s-linux-<arch>` (default: this machine's) built at `version`, and its SHA256SUMS. */
export function testBinary(version: string, arch: "amd64" | "arm64" = ARCH): string {
  mkdirSync(CACHE, { recursive: true });
  const bundle = join(CACHE, `bundle-${version}-${process.pid}.cjs`);
  execFileSync(process.execPath, [join(REPO, "scripts", "bundle.mjs"), bundle], {
    env: { ...process.env, RK8S_VERSION: version, ROOTLESS_K8S_SIGNING_KEY: testSigningKey().file, RK8S_RELEASE_PUBKEY: "" },
  });
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
    if (old.startsWith(`${name}-`) && old !== `${name}-${key}` && !old.endsWith(".tmp"))
      rmSync(join(CACHE, old), { recursive: true, force: true });
  }
  return out;
}

/** Adds a build folder as one version of the release base `base`, with scripts/release.sh. */
export function addRelease(base: string, buildDir: string, opts: { latest?: boolean } = {}): void {
  const args = [join(REPO, "scripts", "release.sh"), "--from", buildDir, ...(opts.latest === false ? ["--no-latest"] : []), base];
  execFileSync("bash", args, { stdio: "pipe", env: { ...process.env, PATH: BUILD_PATH, ROOTLESS_K8S_SIGNING_KEY: testSigningKey().file } });
}

/**
 * Writes one version of a release by hand, for what release.sh refuses to make: a tampered binary
 * (SHA256SUMS of the real one), a mislabelled one, a broken one. `sumsOf` overrides the checksum listed.
 * SHA256SUMS ends with the VERSION line release.sh writes, for `names` (default `version`; null: none),
 * and is signed with `signedBy` (default the test key), or not at all when it is null.
 */
export function writeRelease(
  base: string,
  version: string,
  files: Record<string, Buffer>,
  opts: { latest?: boolean; sumsOf?: Record<string, string>; signedBy?: SigningKey | null; names?: string | null } = {},
): void {
  const dir = join(base, version);
  mkdirSync(dir, { recursive: true });
  const names = opts.names === undefined ? version : opts.names;
  const entries = { ...files, ...(names === null ? {} : { VERSION: Buffer.from(`${names}\n`) }) };
  const sums = Object.entries(entries).map(([name, data]) => {
    writeFileSync(join(dir, name), data, { mode: 0o644 });
    return `${opts.sumsOf?.[name] ?? sha256(data)}  ${name}\n`;
  });
  writeFileSync(join(dir, "SHA256SUMS"), sums.join(""));
  const signer = opts.signedBy === undefined ? testSigningKey() : opts.signedBy;
  if (signer) writeFileSync(join(dir, "SHA256SUMS.sig"), signWith(signer, sums.join("")));
  if (!existsSync(join(base, "install.sh"))) writeFileSync(join(base, "install.sh"), installShWithKey());
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
