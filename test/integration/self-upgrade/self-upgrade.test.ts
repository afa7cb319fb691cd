// `rootless-k8s self-upgrade` for real: two binaries built from this checkout (1.0.0 and 1.1.0)
// carrying the public half of a throwaway test key, a release base on 127.0.0.1 signed with it
// (plain http, so every run passes --insecure-http), and a non-root user whose ~/.local/bin holds
// the running binary.
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli";
import { sha256File } from "../../helpers/hash";
import { serveDir, type StaticServer } from "../../helpers/http-server";
import { listen } from "../../helpers/net";
import { tempDir } from "../../helpers/temp";
import { makeTestCa } from "../../helpers/tls";
import { isRoot, runAs, type TestUser } from "../../helpers/user";
import { addRelease, BINARY_NAME, installUser, newSigningKey, testBinary, writeRelease } from "../../unit/binary/release-fixture";

describe("self-upgrade under node (the bundle, not the binary)", () => {
  it("refuses plainly: there is no binary to replace", async () => {
    const r = await runCli(["self-upgrade", "--insecure-http", "--base-url", "http://127.0.0.1:9"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      "error: self-upgrade replaces the rootless-k8s binary, but this is the JavaScript bundle running under node",
    );
    expect(r.stderr).toMatch(/^fix: /m);
  });

  it("rejects a --to that is not a version and a base that is not http(s)", async () => {
    const bad = await runCli(["self-upgrade", "--to", "latest"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--to must be a release version like 0.2.0 (got "latest")');
    const ftp = await runCli(["self-upgrade", "--base-url", "ftp://example.org"]);
    expect(ftp.code).toBe(2);
    expect(ftp.stderr).toContain("the release base must be an http(s) URL, not ftp:");
  });

  it("refuses a plain-http base without --insecure-http (exit 2)", async () => {
    for (const r of [
      await runCli(["self-upgrade", "--base-url", "http://127.0.0.1:9"]),
      await runCli(["self-upgrade"], { env: { ROOTLESS_K8S_DOWNLOAD_URL: "http://127.0.0.1:9" } }),
    ]) {
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("error: refused the plain-http release base http://127.0.0.1:9");
      expect(r.stderr).toContain("pass --insecure-http to accept it");
    }
  });

  it("rejects an empty --ca-file", async () => {
    const r = await runCli(["self-upgrade", "--ca-file", ""]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("error: --ca-file needs a file name");
  });
});

describe.skipIf(!isRoot)("self-upgrade of the real binary, as a non-root user (needs root to create the user)", () => {
  let v1: string;
  let v2: string;
  let base: string;
  let server: StaticServer;
  let stale: string;
  let staleServer: StaticServer;
  let user: TestUser;

  const sum1 = () => sha256File(join(v1, BINARY_NAME));
  const sum2 = () => sha256File(join(v2, BINARY_NAME));

  /** A HOME whose ~/.local/bin/rootless-k8s is the 1.0.0 binary, owned by the user. */
  const installed = (version: "1.0.0" | "1.1.0" = "1.0.0") => {
    const home = user.newHome();
    const dir = join(home, ".local", "bin");
    mkdirSync(dir, { recursive: true });
    const bin = join(dir, "rootless-k8s");
    copyFileSync(join(version === "1.0.0" ? v1 : v2, BINARY_NAME), bin);
    chmodSync(bin, 0o755);
    for (const p of [join(home, ".local"), dir, bin]) chownSync(p, user.uid, user.gid);
    return { home, dir, bin, env: { HOME: home, PATH: "/usr/bin:/bin", ROOTLESS_K8S_DOWNLOAD_URL: server.url } };
  };
  const binaryRequests = (from: number) =>
    server
      .paths()
      .slice(from)
      .filter((p) => p.endsWith(BINARY_NAME));

  beforeAll(async () => {
    v1 = testBinary("1.0.0");
    v2 = testBinary("1.1.0");
    base = tempDir("rk8s-upgrade-release-");
    addRelease(base, v1);
    addRelease(base, v2); // latest.txt: 1.1.0
    const bin2 = readFileSync(join(v2, BINARY_NAME));
    // 1.2.0 holds the 1.1.0 binary (right checksum, wrong version); 1.3.0 a program that fails;
    // 1.4.0 a tampered binary listed with the checksum of the real one.
    writeRelease(base, "1.2.0", { [BINARY_NAME]: bin2 }, { latest: false });
    writeRelease(base, "1.3.0", { [BINARY_NAME]: Buffer.from("#!/bin/sh\necho 'cannot start: boom' >&2\nexit 1\n") }, { latest: false });
    const tampered = Buffer.from(bin2);
    tampered[tampered.length >> 1] = tampered[tampered.length >> 1]! ^ 0xff;
    writeRelease(base, "1.4.0", { [BINARY_NAME]: tampered }, { latest: false, sumsOf: { [BINARY_NAME]: sum2() } });
    // 1.5.0 a program that hangs when asked its version (the smoke test waits on it).
    writeRelease(base, "1.5.0", { [BINARY_NAME]: Buffer.from("#!/bin/sh\nexec sleep 60\n") }, { latest: false });
    // 1.6.0 a program that leaves a mark when run (a dry run must never run it);
    // 1.7.0 a swapped binary with matching sums, signed by another key; 1.8.0 not signed at all.
    writeRelease(
      base,
      "1.6.0",
      { [BINARY_NAME]: Buffer.from('#!/bin/sh\ntouch "$HOME/RAN"\necho "rootless-k8s 1.6.0"\n') },
      { latest: false },
    );
    const swapped = Buffer.from('#!/bin/sh\ntouch "$HOME/RAN"\necho "rootless-k8s 1.7.0"\n');
    writeRelease(base, "1.7.0", { [BINARY_NAME]: swapped }, { latest: false, signedBy: newSigningKey(tempDir()) });
    writeRelease(base, "1.8.0", { [BINARY_NAME]: swapped }, { latest: false, signedBy: null });
    // 1.9.0 the genuine, signed 1.1.0 release served under another name; 1.10.0 a signed release
    // whose SHA256SUMS names no version (the layout before the VERSION line).
    cpSync(join(base, "1.1.0"), join(base, "1.9.0"), { recursive: true });
    writeRelease(base, "1.10.0", { [BINARY_NAME]: swapped }, { latest: false, names: null });
    server = await serveDir(base);
    // A stale (or hostile) base whose latest.txt went back to 1.0.0, a genuine release.
    stale = tempDir("rk8s-upgrade-stale-");
    addRelease(stale, v2);
    addRelease(stale, v1);
    staleServer = await serveDir(stale);
    user = installUser();
  });

  afterAll(async () => {
    await server?.close();
    await staleServer?.close();
  });

  it("upgrades 1.0.0 to the latest 1.1.0, keeps .previous until the new binary has run once", async () => {
    const { dir, bin, env } = installed();
    const r = await runAs(user, bin, ["self-upgrade", "--insecure-http"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("upgraded rootless-k8s 1.0.0 → 1.1.0");
    expect(r.stderr).toContain("verified the ed25519 signature of SHA256SUMS 1.1.0, which names 1.1.0");
    expect(r.stderr).toContain(`verified SHA-256 ${sum2()}`);
    expect(sha256File(bin)).toBe(sum2());
    expect(sha256File(`${bin}.previous`)).toBe(sum1());
    expect(readdirSync(dir).sort()).toEqual(["rootless-k8s", "rootless-k8s.previous"]);

    const after = await runAs(user, bin, ["--version"], env);
    expect(after.stdout.trim()).toBe("rootless-k8s 1.1.0");
    expect(readdirSync(dir)).toEqual(["rootless-k8s"]);

    const from = server.requests.length;
    const again = await runAs(user, bin, ["self-upgrade", "--insecure-http"], env);
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe("rootless-k8s 1.1.0 is up to date (latest release: 1.1.0)");
    expect(server.paths().slice(from)).toEqual(["/latest.txt"]);
  });

  it("--dry-run downloads and verifies the new binary, and neither runs nor replaces anything", async () => {
    const { dir, bin, env } = installed();
    // what a run killed outright left behind: an old download goes, a current one (another run's) stays
    const stale = join(dir, ".rootless-k8s.upgrade-0123456789ab");
    const current = join(dir, ".rootless-k8s.upgrade-ba9876543210");
    writeFileSync(stale, "partial");
    writeFileSync(current, "partial");
    utimesSync(stale, new Date(Date.now() - 2 * 3600_000), new Date(Date.now() - 2 * 3600_000));
    const from = server.requests.length;
    const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--dry-run"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("dry run: 1.0.0 → 1.1.0 verified (signature and SHA-256); nothing was run or replaced");
    expect(binaryRequests(from)).toEqual([`/1.1.0/${BINARY_NAME}`]);
    expect(sha256File(bin)).toBe(sum1());
    expect(readdirSync(dir).sort()).toEqual([".rootless-k8s.upgrade-ba9876543210", "rootless-k8s"]);
  });

  it("--dry-run never executes the downloaded binary", async () => {
    const { home, dir, bin, env } = installed();
    const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--dry-run", "--to", "1.6.0"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("dry run: 1.0.0 → 1.6.0 verified");
    expect(existsSync(join(home, "RAN"))).toBe(false);
    expect(readdirSync(dir)).toEqual(["rootless-k8s"]);
  });

  it("refuses SHA256SUMS signed by another key, or not signed, before downloading the binary (exit 4)", async () => {
    for (const [version, message] of [
      ["1.7.0", `error: the signature of ${server.url}/1.7.0/SHA256SUMS does not verify with the release key built into rootless-k8s`],
      ["1.8.0", `error: release 1.8.0 at ${server.url} is not signed: ${server.url}/1.8.0/SHA256SUMS.sig is missing`],
    ] as const) {
      const { home, dir, bin, env } = installed();
      const from = server.requests.length;
      const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--to", version], env);
      expect(r.code, version).toBe(4);
      expect(r.stderr).toContain(message);
      expect(binaryRequests(from)).toEqual([]);
      expect(existsSync(join(home, "RAN"))).toBe(false);
      expect(sha256File(bin)).toBe(sum1());
      expect(readdirSync(dir)).toEqual(["rootless-k8s"]);
    }
  });

  it("refuses a signed release served under another version's name, or naming none, before downloading the binary (exit 4)", async () => {
    for (const [version, args] of [
      ["1.9.0", []],
      ["1.9.0", ["--dry-run"]],
      ["1.10.0", []],
    ] as const) {
      const { home, dir, bin, env } = installed();
      const from = server.requests.length;
      const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--to", version, ...args], env);
      expect(r.code, `${version} ${r.stderr}`).toBe(4);
      expect(r.stderr).toContain(
        `error: ${server.url}/${version}/SHA256SUMS is signed but is not release ${version}'s: its VERSION line names another version, or none; ${bin} is unchanged`,
      );
      expect(r.stderr).toContain("fix: nothing was downloaded or run. The release base serves one release under another's name");
      expect(binaryRequests(from)).toEqual([]);
      expect(existsSync(join(home, "RAN"))).toBe(false);
      expect(sha256File(bin)).toBe(sum1());
      expect(readdirSync(dir)).toEqual(["rootless-k8s"]);
    }
  });

  it("never goes back to an older latest.txt, --force or not, and says the base went back", async () => {
    const { bin, env } = installed("1.1.0");
    for (const extra of [[], ["--force"]]) {
      const from = staleServer.requests.length;
      const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--base-url", staleServer.url, ...extra], env);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("rootless-k8s 1.1.0 is newer than the release base's latest.txt (1.0.0): nothing to do");
      expect(staleServer.paths().slice(from)).toEqual(["/latest.txt"]);
      expect(sha256File(bin)).toBe(sum2());
    }
  });

  it("refuses a pinned older version (exit 3, nothing downloaded) unless --allow-downgrade", async () => {
    const { bin, env } = installed("1.1.0");
    const from = server.requests.length;
    const refused = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--to", "1.0.0", "--force"], env);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain("error: 1.0.0 is older than this rootless-k8s 1.1.0; self-upgrade goes back only when asked");
    expect(refused.stderr).toContain(
      "fix: nothing was downloaded. To go back on purpose: rootless-k8s self-upgrade --to 1.0.0 --allow-downgrade",
    );
    expect(server.requests.length).toBe(from);
    expect(sha256File(bin)).toBe(sum2());
  });

  it("installs a pinned older version with --to --allow-downgrade, from --base-url over the environment", async () => {
    const { bin, env } = installed("1.1.0");
    const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--to", "v1.0.0", "--allow-downgrade", "--base-url", server.url], {
      ...env,
      ROOTLESS_K8S_DOWNLOAD_URL: "http://127.0.0.1:9",
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("upgraded rootless-k8s 1.1.0 → 1.0.0");
    expect((await runAs(user, bin, ["--version"], env)).stdout.trim()).toBe("rootless-k8s 1.0.0");
  });

  it("replaces the real file behind a symlink, and leaves the link as it was", async () => {
    const { home, bin, env } = installed();
    const link = join(home, "rootless-k8s-link");
    symlinkSync(bin, link);
    const r = await runAs(user, link, ["self-upgrade", "--insecure-http"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(sha256File(bin)).toBe(sum2());
    expect(existsSync(`${link}.previous`)).toBe(false);
    expect(existsSync(`${bin}.previous`)).toBe(true);
  });

  it("leaves the old binary in place when the new one reports another version", async () => {
    const { dir, bin, env } = installed();
    const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--to", "1.2.0"], env);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(
      'error: the new binary failed its smoke test: `--version` printed "rootless-k8s 1.1.0", expected "rootless-k8s 1.2.0"',
    );
    expect(r.stderr).toContain(`${bin} is unchanged`);
    expect(sha256File(bin)).toBe(sum1());
    expect(readdirSync(dir)).toEqual(["rootless-k8s"]);
  });

  it("leaves the old binary in place when the new one does not run", async () => {
    const { dir, bin, env } = installed();
    const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--to", "1.3.0"], env);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("error: the new binary (1.3.0) failed its smoke test: cannot start: boom");
    expect(sha256File(bin)).toBe(sum1());
    expect(readdirSync(dir)).toEqual(["rootless-k8s"]);
  });

  it("refuses a tampered download and removes it", async () => {
    const { dir, bin, env } = installed();
    const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--to", "1.4.0"], env);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`error: checksum mismatch for ${BINARY_NAME} 1.4.0`);
    expect(r.stderr).toContain(`SHA256SUMS says ${sum2()}`);
    expect(sha256File(bin)).toBe(sum1());
    expect(readdirSync(dir)).toEqual(["rootless-k8s"]);
  });

  it("reads an https release base whose private CA is given with --ca-file, and without it names --ca-file", async () => {
    const tls = makeTestCa();
    const secure = await serveDir(base, { tls });
    try {
      const { home, bin, env } = installed();
      const ca = join(home, "ca.pem");
      copyFileSync(tls.caFile, ca);
      chownSync(ca, user.uid, user.gid);
      const untrusted = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--base-url", secure.url], env);
      expect(untrusted.code).toBe(5);
      expect(untrusted.stderr).toMatch(
        /^error: could not download https:\/\/127\.0\.0\.1:\d+\/latest\.txt: the TLS certificate of 127\.0\.0\.1:\d+ is not trusted/m,
      );
      expect(untrusted.stderr).toContain(
        "fix: if a proxy or mirror uses a private CA, pass it with --ca-file FILE (or NODE_EXTRA_CA_CERTS=FILE)",
      );
      const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--base-url", secure.url, "--ca-file", ca], env);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("upgraded rootless-k8s 1.0.0 → 1.1.0");
      expect(sha256File(bin)).toBe(sum2());
      expect(secure.paths()).toEqual(["/latest.txt", "/1.1.0/SHA256SUMS", "/1.1.0/SHA256SUMS.sig", `/1.1.0/${BINARY_NAME}`]);
    } finally {
      await secure.close();
    }
  });

  it("fails with the network exit code for a version that is not published", async () => {
    const { bin, env } = installed();
    const r = await runAs(user, bin, ["self-upgrade", "--insecure-http", "--to", "9.9.9"], env);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain(`error: could not download ${server.url}/9.9.9/SHA256SUMS: HTTP 404`);
  });

  it("refuses, before downloading, when the binary sits in a folder the user cannot write", async () => {
    const dir = tempDir("rk8s-rootowned-");
    chmodSync(dir, 0o755);
    const bin = join(dir, "rootless-k8s");
    copyFileSync(join(v1, BINARY_NAME), bin);
    chmodSync(bin, 0o755);
    const home = user.newHome();
    const from = server.requests.length;
    const r = await runAs(user, bin, ["self-upgrade", "--insecure-http"], {
      HOME: home,
      PATH: "/usr/bin:/bin",
      ROOTLESS_K8S_DOWNLOAD_URL: server.url,
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      `error: cannot replace ${bin}: ${dir} is not writable by you (uid ${user.uid}; the folder belongs to root, mode 755)`,
    );
    expect(r.stderr).toContain("fix: install rootless-k8s into a folder you own");
    expect(server.requests.length).toBe(from);
    expect(sha256File(bin)).toBe(sum1());
  });

  it("Ctrl-C during the download stops with exit 130 and leaves only the old binary", async () => {
    // A server that sends the start of the binary and then nothing more.
    const stall = createServer((req, res) => {
      if (req.url === "/latest.txt") res.end("1.1.0\n");
      else if (req.url === "/1.1.0/SHA256SUMS") res.end(readFileSync(join(base, "1.1.0", "SHA256SUMS")));
      else if (req.url === "/1.1.0/SHA256SUMS.sig") res.end(readFileSync(join(base, "1.1.0", "SHA256SUMS.sig")));
      else if (req.url === `/1.1.0/${BINARY_NAME}`) {
        res.writeHead(200, { "content-length": String(statSync(join(v2, BINARY_NAME)).size) });
        res.write(readFileSync(join(v2, BINARY_NAME)).subarray(0, 1 << 20));
      } else res.writeHead(404).end();
    });
    const stalling = await listen(stall);
    try {
      const { dir, bin, env } = installed();
      env.ROOTLESS_K8S_DOWNLOAD_URL = stalling.url;
      const child = user.spawn(bin, ["self-upgrade", "--insecure-http"], env);
      let stderr = "";
      const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
      await new Promise<void>((resolve) =>
        child.stderr!.on("data", (d) => {
          stderr += d;
          if (stderr.includes("downloading")) resolve();
        }),
      );
      await new Promise((r) => setTimeout(r, 300)); // the download has started writing
      child.kill("SIGINT");
      expect(await exited).toBe(130);
      expect(stderr).toMatch(/^error: interrupted$/m);
      expect(readdirSync(dir)).toEqual(["rootless-k8s"]);
      expect(sha256File(bin)).toBe(sum1());
    } finally {
      await stalling.close();
    }
  });

  it("Ctrl-C during the smoke test stops with exit 130 (not as a broken release) and leaves only the old binary", async () => {
    const { dir, bin, env } = installed();
    const child = user.spawn(bin, ["self-upgrade", "--insecure-http", "--to", "1.5.0"], env);
    let stderr = "";
    const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
    await new Promise<void>((resolve) =>
      child.stderr!.on("data", (d) => {
        stderr += d;
        if (stderr.includes("verified SHA-256")) resolve();
      }),
    );
    await new Promise((r) => setTimeout(r, 300)); // the new binary is running its --version
    child.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(stderr).toMatch(/^error: interrupted while testing the new binary \(1\.5\.0\); .* is unchanged$/m);
    expect(stderr).not.toMatch(/failed its smoke test/);
    expect(readdirSync(dir)).toEqual(["rootless-k8s"]);
    expect(sha256File(bin)).toBe(sum1());
  });

  it("a full disk stops the download, removes it and leaves the old binary", async () => {
    const mnt = tempDir("rk8s-full-");
    const size = Math.ceil(statSync(join(v1, BINARY_NAME)).size / 1048576) + 20;
    const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}m,uid=${user.uid},gid=${user.gid},mode=0755`, "tmpfs", mnt], {
      encoding: "utf8",
    });
    // (the tests run as root, as CI does: a mount that fails fails the test, never skips it)
    expect(mounted.status, mounted.stderr).toBe(0);
    try {
      const bin = join(mnt, "rootless-k8s");
      copyFileSync(join(v1, BINARY_NAME), bin);
      chmodSync(bin, 0o755);
      chownSync(bin, user.uid, user.gid);
      const home = user.newHome();
      const r = await runAs(user, bin, ["self-upgrade", "--insecure-http"], {
        HOME: home,
        PATH: "/usr/bin:/bin",
        ROOTLESS_K8S_DOWNLOAD_URL: server.url,
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`error: no space left to download ${server.url}/1.1.0/${BINARY_NAME}`);
      expect(r.stderr).toContain("fix: free some disk space and run this again");
      expect(readdirSync(mnt)).toEqual(["rootless-k8s"]);
      expect(sha256File(bin)).toBe(sum1());
    } finally {
      spawnSync("umount", [mnt]);
    }
  });
});
