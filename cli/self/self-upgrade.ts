// `rootless-k8s self-upgrade`: replace the running binary with a verified release.
// Order: can we replace it at all? → which version (never an older one unless asked) → SHA256SUMS
// and its ed25519 signature, checked with the release key compiled into this binary, and the
// version it names → download beside the binary → checksum →
// `--version` smoke test (never in a dry run) → hard-link the old one to `.previous` → one rename.
// Nothing downloaded runs before the signature and the checksum are checked. Any failure before the
// rename leaves the binary as it was and removes the download.
import { constants } from "node:fs";
import { access, chmod, copyFile, link, open, readdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { execFile } from "node:child_process";
import { ExitCode, InterruptedError, UserError, messageOf } from "../errors";
import { BIN_NAME } from "../version";
import { tempPathBeside } from "../apply/files";
import { previousPathOf } from "./previous-binary";
import {
  type Arch,
  binaryName,
  checksumFor,
  downloadFile,
  fetchBytes,
  fetchText,
  normalizeVersion,
  type ReleaseRequest,
  releaseUrl,
  sumsNameVersion,
  VERSION_FILE,
  verifySums,
} from "./releases";

export interface SelfUpgradeRequest {
  /** The real path of the running binary (symlinks resolved). */
  binary: string;
  /** The running binary's version. */
  current: string;
  /** A pinned version (--to); otherwise the base's latest.txt. */
  to?: string;
  base: string;
  /** Extra trusted CA certificates, PEM (--ca-file). */
  caFile?: string;
  arch: Arch;
  /** The release public key (base64 SPKI DER) SHA256SUMS.sig must verify with; "" refuses. */
  publicKey: string;
  /** Download and verify, but neither run nor replace. */
  dryRun: boolean;
  /** Reinstall even when the version is the same. */
  force: boolean;
  /** Install a pinned version older than the running one (--allow-downgrade). */
  allowDowngrade: boolean;
  signal: AbortSignal;
  progress(line: string): void;
}

/** The download of the new binary: `.<binary name>.upgrade-<random>` in the binary's folder. */
const DOWNLOAD_MARK = ".upgrade-";

export type SelfUpgradeOutcome =
  | { kind: "current"; version: string; latest: string }
  /** The base's latest.txt names an older release than the running one (a stale or hostile base). */
  | { kind: "ahead"; version: string; latest: string }
  | { kind: "checked"; from: string; to: string; sha256: string }
  | { kind: "upgraded"; from: string; to: string; sha256: string; previous: string };

export async function selfUpgrade(req: SelfUpgradeRequest): Promise<SelfUpgradeOutcome> {
  if (!req.publicKey) {
    throw new UserError(`this ${BIN_NAME} was built without a release signing key, so it cannot verify a release`, {
      exitCode: ExitCode.Refused,
      fix: `install a released binary (curl -fsSL <base>/install.sh | sh), or in a source checkout update with git pull && make build`,
    });
  }
  await assertReplaceable(req.binary);
  const http = { signal: req.signal, ...(req.caFile ? { caFile: req.caFile } : {}) };
  const target = req.to ?? (await latestVersion(req.base, http));
  const semver = await import("semver");
  const running = semver.valid(req.current); // null for a development build: any release replaces it
  if (running && semver.lt(target, running)) {
    if (req.to === undefined) return { kind: "ahead", version: req.current, latest: target };
    if (!req.allowDowngrade) {
      throw new UserError(`${target} is older than this ${BIN_NAME} ${req.current}; self-upgrade goes back only when asked`, {
        exitCode: ExitCode.Refused,
        fix: `nothing was downloaded. To go back on purpose: ${BIN_NAME} self-upgrade --to ${target} --allow-downgrade`,
      });
    }
  }
  if (!req.force && running && semver.eq(target, running)) return { kind: "current", version: req.current, latest: target };
  const name = binaryName(req.arch);
  const sumsUrl = releaseUrl.sums(req.base, target);
  const sumsBytes = await fetchBytes(sumsUrl, http);
  const signature = await fetchBytes(releaseUrl.signature(req.base, target), http).catch((e: unknown) => {
    if (e instanceof UserError && /HTTP 404/.test(e.message)) {
      throw new UserError(`release ${target} at ${req.base} is not signed: ${releaseUrl.signature(req.base, target)} is missing`, {
        exitCode: ExitCode.Verification,
        fix: "nothing was downloaded or run. Use the official release base, or a mirror that copies SHA256SUMS.sig too",
      });
    }
    throw e;
  });
  if (!verifySums(sumsBytes, signature, req.publicKey)) {
    throw new UserError(
      `the signature of ${sumsUrl} does not verify with the release key built into ${BIN_NAME}; ${req.binary} is unchanged`,
      {
        exitCode: ExitCode.Verification,
        fix: "nothing was downloaded or run. The release base serves checksums that the release key did not sign: use the official release base, or report it",
      },
    );
  }
  const sums = sumsBytes.toString("utf8");
  if (!sumsNameVersion(sums, target)) {
    throw new UserError(
      `${sumsUrl} is signed but is not release ${target}'s: its ${VERSION_FILE} line names another version, or none; ${req.binary} is unchanged`,
      {
        exitCode: ExitCode.Verification,
        fix: "nothing was downloaded or run. The release base serves one release under another's name (a stale or hostile mirror): use the official release base, or report it",
      },
    );
  }
  req.progress(`verified the ed25519 signature of SHA256SUMS ${target}, which names ${target}`);
  const expected = checksumFor(sums, name);
  if (!expected) {
    throw new UserError(`${releaseUrl.sums(req.base, target)} has no checksum for ${name}`, {
      exitCode: ExitCode.Verification,
      fix: `this release has no ${req.arch} binary, or the mirror is incomplete: pick another version with --to`,
    });
  }
  const url = releaseUrl.binary(req.base, target, req.arch);
  await removeStaleDownloads(req.binary);
  const tmp = tempPathBeside(req.binary, DOWNLOAD_MARK);
  try {
    req.progress(`downloading ${url}`);
    const { sha256 } = await downloadFile(url, tmp, http);
    if (sha256 !== expected) {
      throw new UserError(
        `checksum mismatch for ${name} ${target}: got ${sha256}, SHA256SUMS says ${expected}; ${req.binary} is unchanged`,
        {
          exitCode: ExitCode.Verification,
          fix: "run self-upgrade again (a download may have been cut); if it persists, the release base serves a tampered or broken file",
        },
      );
    }
    req.progress(`verified SHA-256 ${sha256}`);
    // A dry run never executes what it downloaded.
    if (req.dryRun) return { kind: "checked", from: req.current, to: target, sha256 };
    await chmod(tmp, (await stat(req.binary)).mode & 0o755);
    await smokeTest(tmp, target, req.binary, req.signal);
    req.progress(`the new binary runs and reports ${BIN_NAME} ${target}`);
    const previous = await replace(req.binary, tmp);
    return { kind: "upgraded", from: req.current, to: target, sha256, previous };
  } finally {
    await rm(tmp, { force: true });
  }
}

/** Refuses (exit 3, before any download) when the binary's folder does not let us rename into it. */
export async function assertReplaceable(binary: string): Promise<void> {
  const dir = dirname(binary);
  const [d, f] = await Promise.all([stat(dir), stat(binary)]);
  const uid = process.getuid?.() ?? -1;
  const why = await access(dir, constants.W_OK).then(
    () => (d.mode & 0o1000 && f.uid !== uid && d.uid !== uid ? `${dir} is sticky and ${binary} belongs to uid ${f.uid}` : undefined),
    () =>
      `${dir} is not writable by you (uid ${uid}; the folder belongs to ${d.uid === 0 ? "root" : `uid ${d.uid}`}, mode ${(d.mode & 0o7777).toString(8)})`,
  );
  if (why) {
    throw new UserError(`cannot replace ${binary}: ${why}`, {
      exitCode: ExitCode.Refused,
      fix: `install ${BIN_NAME} into a folder you own (curl -fsSL <base>/install.sh | sh puts it in ~/.local/bin), or update it the way it was installed there`,
    });
  }
}

/** Downloads of an earlier run that was killed outright (SIGKILL, power loss): over an hour old. */
async function removeStaleDownloads(binary: string): Promise<void> {
  const dir = dirname(binary);
  const prefix = `.${basename(binary)}${DOWNLOAD_MARK}`;
  const hourAgo = Date.now() - 60 * 60 * 1000;
  for (const name of await readdir(dir)) {
    if (!name.startsWith(prefix)) continue;
    const file = join(dir, name);
    const st = await stat(file).catch(() => undefined);
    if (st?.isFile() && st.mtimeMs < hourAgo) await rm(file, { force: true });
  }
}

async function latestVersion(base: string, http: ReleaseRequest): Promise<string> {
  const text = await fetchText(releaseUrl.latest(base), http);
  const v = normalizeVersion(text);
  if (!v) {
    throw new UserError(`${releaseUrl.latest(base)} does not hold a release version`, {
      exitCode: ExitCode.Verification,
      fix: "check the release base (--base-url, ROOTLESS_K8S_DOWNLOAD_URL), or pin a version with --to",
    });
  }
  return v;
}

/** `<new binary> --version` must print exactly "rootless-k8s <version>". */
async function smokeTest(file: string, version: string, binary: string, signal: AbortSignal): Promise<void> {
  const want = `${BIN_NAME} ${version}`;
  const got = await new Promise<string>((resolve, reject) => {
    execFile(
      file,
      ["--version"],
      { timeout: 30_000, signal, env: { ...process.env, ROOTLESS_K8S_NO_UPDATE_CHECK: "1" } },
      (err, stdout, stderr) => (err ? reject(new Error(firstLine(stderr) || messageOf(err))) : resolve(stdout.trim())),
    );
  }).catch((e: Error) => {
    if (signal.aborted) throw new InterruptedError(`interrupted while testing the new binary (${version}); ${binary} is unchanged`);
    throw new UserError(`the new binary (${version}) failed its smoke test: ${e.message}; ${binary} is unchanged`, {
      exitCode: ExitCode.Verification,
      fix: "this release does not run here: stay on this version, or pick another with --to",
    });
  });
  if (got !== want) {
    throw new UserError(
      `the new binary failed its smoke test: \`--version\` printed "${firstLine(got)}", expected "${want}"; ${binary} is unchanged`,
      {
        exitCode: ExitCode.Verification,
        fix: "the release is mislabelled: stay on this version, or pick another with --to",
      },
    );
  }
}

function firstLine(s: string): string {
  return s.trim().split("\n")[0] ?? "";
}

/** Keeps the old binary as `.previous` (a hard link, else a copy), then renames the new one over it. */
async function replace(binary: string, tmp: string): Promise<string> {
  const previous = previousPathOf(binary);
  const fh = await open(tmp, "r");
  await fh.sync().finally(() => fh.close());
  await rm(previous, { force: true });
  await link(binary, previous).catch(() => copyFile(binary, previous));
  try {
    await rename(tmp, binary);
  } catch (e) {
    await rm(previous, { force: true });
    throw new UserError(`could not replace ${binary}: ${messageOf(e)}; it is unchanged`, { exitCode: ExitCode.Failure, cause: e });
  }
  const dir = await open(dirname(binary), "r");
  await dir
    .sync()
    .catch(() => undefined)
    .finally(() => dir.close());
  return previous;
}
