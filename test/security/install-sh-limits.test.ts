// Issue 34's findings on scripts/install.sh, thrown at the published script (the test release key
// written in) run as an ordinary user against hostile release servers on 127.0.0.1:
// 1. every download has a size cap (the binary 256 MiB, ROOTLESS_K8S_MAX_BINARY_MIB; latest.txt,
//    SHA256SUMS and SHA256SUMS.sig 1 MiB) enforced on what is written, not only on a Content-Length,
//    and a deadline (ROOTLESS_K8S_DOWNLOAD_TIMEOUT); past either, one error line and its fix, exit 5,
//    and the temporary files gone;
// 2. without OpenSSL 3 (OpenSSL 1.1.1 cannot verify ed25519: no `pkeyutl -rawin`) the script refuses
//    before any download, and installs without the signature check only when told
//    ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1, saying so; EPEL's `openssl3` is used when `openssl` is 1.1.
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import { join, normalize } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256, sha256File } from "../helpers/hash";
import { listen } from "../helpers/net";
import { tempDir } from "../helpers/temp";
import { runAs, testUser, USER_PATH } from "../helpers/user";
import { BINARY_NAME, installShWithKey, listFiles, newSigningKey, type SigningKey, writeRelease } from "../unit/binary/release-fixture";

const user = testUser("rk8s-ishlimits");
const VERSION = "1.0.0";
const MiB = 1024 * 1024;
/** A stand-in binary: it leaves $HOME/RAN behind when anything runs it. */
const FAKE_BINARY = Buffer.from(`#!/bin/sh\ntouch "$HOME/RAN"\necho "rootless-k8s ${VERSION}"\n`);

type Route = (res: http.ServerResponse) => void;

interface Site {
  url: string;
  /** The paths requested so far, in order. */
  paths: string[];
  /** Body bytes the hostile routes wrote so far. */
  sent(): number;
  close(): Promise<void>;
}

/**
 * A release of FAKE_BINARY (or `binary`), signed by the test key (or `signedBy`), served from
 * 127.0.0.1, where `routes` answer their paths instead of the files.
 */
async function hostileSite(
  routes: Record<string, (count: (n: number) => void) => Route>,
  opts: { binary?: Buffer; signedBy?: SigningKey } = {},
): Promise<Site> {
  const root = tempDir("rk8s-ish-site-");
  writeRelease(root, VERSION, { [BINARY_NAME]: opts.binary ?? FAKE_BINARY }, opts.signedBy ? { signedBy: opts.signedBy } : {});
  const paths: string[] = [];
  let sent = 0;
  const count = (n: number) => {
    sent += n;
  };
  const server = http.createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    paths.push(path);
    const route = routes[path];
    if (route) return route(count)(res);
    const file = join(root, normalize(path));
    if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) return void res.writeHead(404).end("not found\n");
    const body = readFileSync(file);
    res.writeHead(200, { "content-length": body.length }).end(body);
  });
  const l = await listen(server);
  return { url: l.url, paths, sent: () => sent, close: l.close };
}

/**
 * A body without Content-Length that goes on and on. It stops at `bound` (then cuts the connection)
 * only so that a script without a cap cannot fill this machine's disk: the bound is far above the cap.
 */
const endless =
  (bound: number) =>
  (count: (n: number) => void): Route =>
  (res) => {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    const chunk = Buffer.alloc(256 * 1024, 0x41);
    let n = 0;
    const pump = () => {
      while (!res.destroyed && n < bound) {
        n += chunk.length;
        count(chunk.length);
        if (!res.write(chunk)) return void res.once("drain", pump);
      }
      if (n >= bound) res.destroy();
    };
    pump();
  };

/**
 * A body that promises `length` bytes and sends one every 100 ms (1 MiB would take 29 hours). After
 * 8 s it cuts the connection, only so that a script without a deadline fails in this test's time
 * instead of hanging it: far past the 3 s deadline the tests set.
 */
const trickle =
  (length: number) =>
  (count: (n: number) => void): Route =>
  (res) => {
    res.writeHead(200, { "content-length": length });
    const t = setInterval(() => {
      if (res.destroyed) return clearInterval(t);
      count(1);
      res.write("x");
    }, 100);
    const cut = setTimeout(() => res.destroy(), 8_000);
    res.on("close", () => {
      clearInterval(t);
      clearTimeout(cut);
    });
  };

/** The largest total size of the files under `dir` seen while the attempt ran (polled every 20 ms). */
function watchSize(dir: string): () => number {
  let max = 0;
  const poll = () => {
    let total = 0;
    try {
      for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
        if (!e.isFile()) continue;
        try {
          total += statSync(join(e.parentPath, e.name)).size;
        } catch {
          // removed meanwhile
        }
      }
    } catch {
      // a folder removed meanwhile
    }
    max = Math.max(max, total);
  };
  const t = setInterval(poll, 20);
  return () => {
    clearInterval(t);
    poll();
    return max;
  };
}

/** A PATH folder with every command of /usr/bin except `without` (/bin is /usr/bin here). */
function binWithout(...without: string[]): string {
  const d = tempDir("rk8s-ish-bin-");
  chmodSync(d, 0o755);
  for (const f of readdirSync("/usr/bin")) if (!without.includes(f)) symlinkSync(join("/usr/bin", f), join(d, f));
  return d;
}

/**
 * A PATH folder whose `openssl` is a STAND-IN for OpenSSL 1.1.1 (Debian 11's 1.1.1n), since this
 * machine has OpenSSL 3 only: it prints what 1.1.1n prints for `openssl version`, and fails
 * `pkeyutl … -rawin` the way 1.1.1 does (its option parser, apps/opt.c, prints "Option unknown
 * option", then pkeyutl "Use -help for summary.", exit 1): -rawin came with OpenSSL 3.0. With
 * `openssl3` set, that name is the real OpenSSL 3, as EPEL's openssl3 package installs it on RHEL 8.
 */
function openssl11(opts: { openssl3?: boolean } = {}): string {
  const d = tempDir("rk8s-ish-openssl11-");
  chmodSync(d, 0o755);
  const standIn = [
    "#!/bin/sh",
    "# Stand-in for OpenSSL 1.1.1n (see install-sh-limits.test.ts).",
    "case $1 in",
    '  version) echo "OpenSSL 1.1.1n  15 Mar 2022"; exit 0 ;;',
    "  pkeyutl)",
    '    for a in "$@"; do',
    '      if [ "$a" = -rawin ]; then',
    '        echo "pkeyutl: Option unknown option -rawin" >&2',
    '        echo "pkeyutl: Use -help for summary." >&2',
    "        exit 1",
    "      fi",
    "    done",
    "    ;;",
    "esac",
    'echo "stand-in openssl 1.1: \\"$*\\" is not simulated" >&2',
    "exit 1",
    "",
  ].join("\n");
  writeFileSync(join(d, "openssl"), standIn, { mode: 0o755 });
  if (opts.openssl3) symlinkSync("/usr/bin/openssl", join(d, "openssl3"));
  return d;
}

interface Attempt {
  code: number | null;
  stdout: string;
  stderr: string;
  home: string;
  tmp: string;
  ms: number;
  /** The most the files under TMPDIR held at once. */
  tmpPeak: number;
}

let sh: string;
beforeAll(() => {
  const dir = user.newDir("rk8s-ish-sh-");
  chmodSync(dir, 0o755);
  sh = join(dir, "install.sh");
  writeFileSync(sh, installShWithKey(), { mode: 0o644 });
});

/** `sh install.sh --insecure-http --no-start ARGS` as the user, with a fresh HOME and TMPDIR. */
async function attempt(site: Site, env: Record<string, string> = {}, args: string[] = []): Promise<Attempt> {
  const home = user.newHome();
  const tmp = user.newDir("rk8s-ish-tmp-");
  const peak = watchSize(tmp);
  const started = Date.now();
  const r = await runAs(
    user,
    "sh",
    [sh, "--insecure-http", "--no-start", ...args],
    {
      HOME: home,
      TMPDIR: tmp,
      PATH: USER_PATH,
      SHELL: "/bin/sh",
      LC_ALL: "C",
      ROOTLESS_K8S_NO_UPDATE_CHECK: "1",
      ROOTLESS_K8S_DOWNLOAD_URL: site.url,
      ...env,
    },
    { timeoutMs: 30_000 },
  );
  return { code: r.code, stdout: r.stdout, stderr: r.stderr, home, tmp, ms: Date.now() - started, tmpPeak: peak() };
}

/** Refused with exactly one error line and one fix line, nothing installed, nothing left in TMPDIR. */
function refusedCleanly(a: Attempt, code: number, error: RegExp, fix: RegExp): void {
  expect(a.code, a.stderr).toBe(code);
  const lines = a.stderr.trimEnd().split("\n");
  expect(lines, a.stderr).toHaveLength(2);
  expect(lines[0]).toMatch(error);
  expect(lines[1]).toMatch(fix);
  expect(listFiles(a.home)).toEqual([]); // no binary, and it never ran ($HOME/RAN)
  expect(listFiles(a.tmp)).toEqual([]);
}

const sites: Site[] = [];
async function site(...args: Parameters<typeof hostileSite>): Promise<Site> {
  const s = await hostileSite(...args);
  sites.push(s);
  return s;
}
afterAll(async () => {
  for (const s of sites) await s.close();
});

describe("install.sh: a size cap and a deadline on every download", () => {
  for (const downloader of ["curl", "wget"] as const) {
    const pathEnv = (): Record<string, string> => (downloader === "wget" ? { PATH: binWithout("curl") } : {});

    it(`${downloader}: stops an endless binary body at the 256 MiB cap, says so, and leaves nothing behind`, async () => {
      const cap = 256 * MiB;
      const s = await site({ [`/${VERSION}/${BINARY_NAME}`]: endless(cap + 128 * MiB) });
      const a = await attempt(s, pathEnv());
      expect(a.tmpPeak, "bytes in TMPDIR at once").toBeLessThanOrEqual(cap + 64 * 1024);
      expect(s.sent(), "bytes the server got to send").toBeLessThan(cap + 64 * MiB); // the download stopped near the cap
      refusedCleanly(
        a,
        5,
        new RegExp(
          `^error: ${s.url}/${VERSION}/${BINARY_NAME} is larger than 256 MiB, far more than a rootless-k8s binary; .*nothing was installed$`,
        ),
        /^fix: .*ROOTLESS_K8S_MAX_BINARY_MIB=512$/,
      );
      expect(s.paths).toEqual(["/latest.txt", `/${VERSION}/SHA256SUMS`, `/${VERSION}/SHA256SUMS.sig`, `/${VERSION}/${BINARY_NAME}`]);
    });

    it(`${downloader}: stops an endless latest.txt, SHA256SUMS or SHA256SUMS.sig at 1 MiB`, async () => {
      for (const path of ["/latest.txt", `/${VERSION}/SHA256SUMS`, `/${VERSION}/SHA256SUMS.sig`]) {
        const s = await site({ [path]: endless(64 * MiB) });
        const a = await attempt(s, pathEnv(), path === "/latest.txt" ? [] : ["--version", VERSION]);
        expect(a.tmpPeak, `${path}: bytes in TMPDIR at once`).toBeLessThanOrEqual(MiB + 64 * 1024);
        refusedCleanly(
          a,
          5,
          new RegExp(`^error: ${s.url}${path} is larger than 1 MiB, far more than that file of a release; .*nothing was installed$`),
          /^fix: the download URL .* does not serve a rootless-k8s release/,
        );
        expect(s.paths).not.toContain(`/${VERSION}/${BINARY_NAME}`);
      }
    });

    it(`${downloader}: gives up on a trickling binary at ROOTLESS_K8S_DOWNLOAD_TIMEOUT, and on a trickling SHA256SUMS too`, async () => {
      const env = { ...pathEnv(), ROOTLESS_K8S_DOWNLOAD_TIMEOUT: "3" };
      const s = await site({ [`/${VERSION}/${BINARY_NAME}`]: trickle(MiB) });
      const bin = await attempt(s, env, ["--version", VERSION]);
      refusedCleanly(
        bin,
        5,
        new RegExp(`^error: ${s.url}/${VERSION}/${BINARY_NAME} did not finish within 3 s \\(or stalled\\); .*nothing was installed$`),
        /^fix: check the network .*ROOTLESS_K8S_DOWNLOAD_TIMEOUT=6$/,
      );
      expect(bin.ms).toBeLessThan(7_000);
      // The small files' deadline is 60 s, or the binary's when that is shorter.
      const s2 = await site({ [`/${VERSION}/SHA256SUMS`]: trickle(1000) });
      const sums = await attempt(s2, env, ["--version", VERSION]);
      refusedCleanly(sums, 5, new RegExp(`^error: ${s2.url}/${VERSION}/SHA256SUMS did not finish within 3 s \\(or stalled\\);`), /^fix: /);
      expect(sums.ms).toBeLessThan(7_000);
      expect(s2.paths).not.toContain(`/${VERSION}/${BINARY_NAME}`);
    }, 120_000);
  }

  it("curl: refuses a binary whose Content-Length is over ROOTLESS_K8S_MAX_BINARY_MIB, and takes it under a raised cap", async () => {
    // A real script padded to 3 MiB: it runs, and prints the version.
    const big = Buffer.concat([FAKE_BINARY, Buffer.from("exit 0\n"), Buffer.alloc(3 * MiB, "#")]);
    const s = await site({}, { binary: big });
    const refused = await attempt(s, { ROOTLESS_K8S_MAX_BINARY_MIB: "2" });
    refusedCleanly(refused, 5, /is larger than 2 MiB, far more than a rootless-k8s binary/, /ROOTLESS_K8S_MAX_BINARY_MIB=4$/);
    const taken = await attempt(s, { ROOTLESS_K8S_MAX_BINARY_MIB: "4" });
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stderr).toBe("");
    expect(sha256File(join(taken.home, ".local/bin/rootless-k8s"))).toBe(sha256(big));
    const bad = await attempt(s, { ROOTLESS_K8S_MAX_BINARY_MIB: "lots" });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('error: ROOTLESS_K8S_MAX_BINARY_MIB must be a whole number of MiB (1 to 999999), not "lots"');
  });
});

describe("install.sh without OpenSSL 3: refuses, unless told ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1", () => {
  it("refuses where openssl is OpenSSL 1.1 (stand-in), before any download, naming the opt-out", async () => {
    const s = await site({});
    const a = await attempt(s, { PATH: `${openssl11()}:${USER_PATH}` });
    refusedCleanly(
      a,
      4,
      /^error: the release signature \(ed25519\) can only be checked with OpenSSL 3 or newer, and this machine has OpenSSL 1\.1\.1n; nothing was downloaded or installed$/,
      /^fix: install OpenSSL 3 .*: curl -fsSL http:\/\/127\.0\.0\.1:\d+\/install\.sh \| ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 sh$/,
    );
    expect(s.paths).toEqual([]);
  });

  it("refuses where there is no openssl at all", async () => {
    const s = await site({});
    const a = await attempt(s, { PATH: binWithout("openssl") });
    refusedCleanly(
      a,
      4,
      /and this machine has no openssl; nothing was downloaded or installed$/,
      /ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 sh$/,
    );
    expect(s.paths).toEqual([]);
  });

  it("with ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 installs on the SHA-256 alone, saying so; it never skips a check OpenSSL 3 can make", async () => {
    const s = await site({});
    const a = await attempt(s, { PATH: `${openssl11()}:${USER_PATH}`, ROOTLESS_K8S_SKIP_SIGNATURE_CHECK: "1" });
    expect(a.code, a.stderr).toBe(0);
    expect(a.stderr).toBe(
      `warning: ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 and no OpenSSL 3: the release signature is NOT checked; the binary is checked only against the SHA-256 in a SHA256SUMS as trustworthy as ${s.url}\n`,
    );
    expect(a.stdout).not.toContain("verified the ed25519 signature");
    expect(listFiles(a.home)).toEqual([".local/bin/rootless-k8s", "RAN"]);
    expect(listFiles(a.tmp)).toEqual([]);
    // With OpenSSL 3 there, the opt-out changes nothing: a SHA256SUMS another key signed is refused.
    const forged = await site({}, { signedBy: newSigningKey(tempDir("rk8s-ish-key-")) });
    const refused = await attempt(forged, { ROOTLESS_K8S_SKIP_SIGNATURE_CHECK: "1" });
    refusedCleanly(refused, 4, /does not verify with the release key in this install\.sh; nothing was installed$/, /^fix: /);
    expect(forged.paths).not.toContain(`/${VERSION}/${BINARY_NAME}`);
  });

  it("verifies with EPEL's openssl3 where openssl is OpenSSL 1.1 (stand-in)", async () => {
    const s = await site({});
    const a = await attempt(s, { PATH: `${openssl11({ openssl3: true })}:${USER_PATH}` });
    expect(a.code, a.stderr).toBe(0);
    expect(a.stderr).toBe("");
    expect(a.stdout).toContain("verified the ed25519 signature of SHA256SUMS");
    expect(listFiles(a.home)).toEqual([".local/bin/rootless-k8s", "RAN"]);
  });
});
