// scripts/install.sh for real: `curl … | sh` and `wget … | sh` as a non-root user with a temporary
// HOME, against a release folder (laid out and signed by scripts/release.sh, with a throwaway test
// key, from a freshly built binary) served on 127.0.0.1 over plain http, hence --insecure-http.
import { execFileSync } from "node:child_process";
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
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO } from "../../helpers/cli";
import { sha256File } from "../../helpers/hash";
import { serveDir, type StaticServer } from "../../helpers/http-server";
import { tempDir } from "../../helpers/temp";
import { isRoot, runAs, type TestUser } from "../../helpers/user";
import {
  addRelease,
  BINARY_NAME,
  installUser,
  listFiles,
  newSigningKey,
  testBinary,
  writeRelease,
} from "../../unit/binary/release-fixture";

/** The repository's copy: no release key written in yet. */
const INSTALL_SH = join(REPO, "scripts", "install.sh");
const INSECURE = "--insecure-http";
const VERSION = "1.0.0";

describe("install.sh, statically", () => {
  it("is clean under shellcheck as POSIX sh", () => {
    const r = execFileSync("shellcheck", ["--shell=sh", "--severity=style", INSTALL_SH], { encoding: "utf8" });
    expect(r).toBe("");
  });

  it("is one { … } block ending in the call to main, so a cut download cannot run a part of it", () => {
    const lines = readFileSync(INSTALL_SH, "utf8").trimEnd().split("\n");
    const code = lines.filter((l) => l.trim() && !l.startsWith("#"));
    expect(code[0]).toBe("{");
    expect(code.at(-2)).toBe('main "$@"');
    expect(code.at(-1)).toBe("}");
  });

  it("prints its help and exits 0, and rejects an unknown option with exit 2", () => {
    const help = execFileSync("sh", [INSTALL_SH, "--help"], { encoding: "utf8" });
    expect(help).toContain("--no-start");
    expect(help).toContain("ROOTLESS_K8S_INSTALL_DIR");
    let code = 0;
    let stderr = "";
    try {
      execFileSync("sh", [INSTALL_SH, "--frobnicate"], { encoding: "utf8", stdio: "pipe" });
    } catch (e) {
      code = (e as { status: number }).status;
      stderr = String((e as { stderr: string }).stderr);
    }
    expect(code).toBe(2);
    expect(stderr).toContain('unknown option "--frobnicate"');
  });
});

describe.skipIf(!isRoot)("install.sh through a real pipe, as a non-root user (needs root to create the user)", () => {
  let build: string;
  let base: string;
  let server: StaticServer;
  let user: TestUser;
  let binSum: string;
  /** The install.sh scripts/release.sh published (with the release key), where the user can read it. */
  let released: string;

  /** A fresh empty folder owned by the user. */
  const userDir = (prefix: string) => user.newDir(`rk8s-${prefix}-`);
  const newHome = () => user.newHome();
  const envFor = (home: string, tmp: string, extra: Record<string, string> = {}) => ({
    HOME: home,
    PATH: "/usr/bin:/bin",
    SHELL: "/bin/bash",
    TMPDIR: tmp,
    ROOTLESS_K8S_DOWNLOAD_URL: server.url,
    ...extra,
  });
  /** `<fetcher> <base>/install.sh | sh -s -- <args>` as the user. */
  const pipe = (fetch: string, env: Record<string, string>, args: string) =>
    runAs(user, "sh", ["-c", `${fetch} "$ROOTLESS_K8S_DOWNLOAD_URL/install.sh" | sh -s -- ${INSECURE} ${args}`], env);
  /** A PATH folder with every command of /usr/bin except `without`. */
  const binWithout = (...without: string[]) => {
    const d = tempDir("rk8s-bin-");
    chmodSync(d, 0o755);
    for (const f of readdirSync("/usr/bin")) if (!without.includes(f)) symlinkSync(join("/usr/bin", f), join(d, f));
    return d;
  };
  const newRequests = (from: number) => server.paths().slice(from);

  beforeAll(async () => {
    build = testBinary(VERSION);
    base = tempDir("rk8s-release-");
    addRelease(base, build);
    server = await serveDir(base);
    user = installUser();
    binSum = sha256File(join(build, BINARY_NAME));
    const shDir = tempDir("rk8s-released-sh-");
    chmodSync(shDir, 0o755);
    released = join(shDir, "install.sh");
    copyFileSync(join(base, "install.sh"), released);
    chmodSync(released, 0o644);
  });

  afterAll(async () => {
    await server?.close();
  });

  it("curl | sh installs the verified binary, which runs, and prints the PATH line for the user's shell", async () => {
    const home = newHome();
    const tmp = userDir("tmp");
    const from = server.requests.length;
    const r = await pipe("curl -fsSL", envFor(home, tmp), "--no-start");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const bin = join(home, ".local", "bin", "rootless-k8s");
    expect(sha256File(bin)).toBe(binSum);
    const st = statSync(bin);
    expect(st.mode & 0o777).toBe(0o755);
    expect(st.uid).toBe(user.uid);
    const ran = await runAs(user, bin, ["--version"], envFor(home, tmp));
    expect(ran.stdout.trim()).toBe(`rootless-k8s ${VERSION}`);
    expect(r.stdout).toContain(`installed rootless-k8s ${VERSION} to ${bin}`);
    expect(r.stdout).toContain(`is not on your PATH. For bash, add this line to ${home}/.bashrc:`);
    expect(r.stdout).toContain(`  export PATH="${home}/.local/bin:$PATH"`);
    expect(newRequests(from)).toEqual([
      "/install.sh",
      "/latest.txt",
      `/${VERSION}/SHA256SUMS`,
      `/${VERSION}/SHA256SUMS.sig`,
      `/${VERSION}/${BINARY_NAME}`,
    ]);
    expect(listFiles(home)).toEqual([".local/bin/rootless-k8s"]);
    expect(listFiles(tmp)).toEqual([]);
  });

  it("refuses a tampered binary and installs nothing", async () => {
    const bad = tempDir("rk8s-tampered-");
    const tampered = readFileSync(join(build, BINARY_NAME));
    tampered[tampered.length >> 1] = tampered[tampered.length >> 1]! ^ 0xff;
    writeRelease(bad, VERSION, { [BINARY_NAME]: tampered }, { sumsOf: { [BINARY_NAME]: binSum } });
    const badServer = await serveDir(bad);
    try {
      const home = newHome();
      const tmp = userDir("tmp");
      const r = await pipe("curl -fsSL", envFor(home, tmp, { ROOTLESS_K8S_DOWNLOAD_URL: badServer.url }), "--no-start");
      expect(r.code).toBe(4);
      expect(r.stderr).toContain(`error: checksum mismatch for ${BINARY_NAME}`);
      expect(r.stderr).toContain(`SHA256SUMS says ${binSum}; nothing was installed`);
      expect(r.stderr).toMatch(/^fix: /m);
      expect(badServer.paths()).toContain(`/${VERSION}/${BINARY_NAME}`);
      expect(listFiles(home)).toEqual([]);
      expect(existsSync(join(home, ".local"))).toBe(false);
      expect(listFiles(tmp)).toEqual([]);
    } finally {
      await badServer.close();
    }
  });

  it("wget | sh installs the same way on a machine without curl", async () => {
    const home = newHome();
    const tmp = userDir("tmp");
    const from = server.requests.length;
    const env = envFor(home, tmp, { PATH: binWithout("curl") });
    const noCurl = await runAs(user, "sh", ["-c", "command -v curl || echo none"], env);
    expect(noCurl.stdout.trim()).toBe("none");
    const r = await pipe("wget -qO-", env, "--no-start");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const bin = join(home, ".local", "bin", "rootless-k8s");
    expect(sha256File(bin)).toBe(binSum);
    expect((await runAs(user, bin, ["--version"], env)).stdout.trim()).toBe(`rootless-k8s ${VERSION}`);
    expect(r.stdout).toContain(`  export PATH="${home}/.local/bin:$PATH"`);
    const reqs = server.requests.slice(from);
    expect(reqs.map((q) => q.path)).toEqual([
      "/install.sh",
      "/latest.txt",
      `/${VERSION}/SHA256SUMS`,
      `/${VERSION}/SHA256SUMS.sig`,
      `/${VERSION}/${BINARY_NAME}`,
    ]);
    for (const q of reqs) expect(q.agent).toMatch(/^Wget\//);
  });

  it("hands over to `rootless-k8s install` with --yes and the arguments after --, and exits with its status", async () => {
    const home = newHome();
    const r = await pipe("curl -fsSL", envFor(home, userDir("tmp")), "--yes -- --no-such-flag");
    expect(r.stdout).toContain("Running: rootless-k8s install --yes --no-such-flag\n");
    expect(r.stderr).toContain("error: unknown option --no-such-flag\nusage: rootless-k8s install");
    expect(r.code).toBe(2);
    expect(sha256File(join(home, ".local", "bin", "rootless-k8s"))).toBe(binSum);
  });

  it("verifies with `shasum -a 256` where sha256sum is missing, and refuses when neither is there", async () => {
    const home = newHome();
    const r = await runAs(user, "sh", [released, INSECURE, "--no-start"], envFor(home, userDir("tmp"), { PATH: binWithout("sha256sum") }));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`verified SHA-256 ${binSum}`);
    expect(sha256File(join(home, ".local", "bin", "rootless-k8s"))).toBe(binSum);
    const none = newHome();
    const refused = await runAs(
      user,
      "sh",
      [released, INSECURE, "--no-start"],
      envFor(none, userDir("tmp"), { PATH: binWithout("sha256sum", "shasum") }),
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("error: neither sha256sum nor shasum is installed, so the download cannot be verified");
    expect(listFiles(none)).toEqual([]);
  });

  it("says which downloader is missing when neither curl nor wget is installed", async () => {
    const home = newHome();
    const r = await runAs(
      user,
      "sh",
      [released, INSECURE, "--no-start"],
      envFor(home, userDir("tmp"), { PATH: binWithout("curl", "wget") }),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error: curl is not installed, and neither is wget");
    expect(r.stderr).toContain("fix: install curl");
    expect(listFiles(home)).toEqual([]);
  });

  it("pins a version with --version or ROOTLESS_K8S_VERSION, without reading latest.txt", async () => {
    for (const [args, extra] of [
      [`--no-start --version v${VERSION}`, {}],
      ["--no-start", { ROOTLESS_K8S_VERSION: VERSION }],
    ] as const) {
      const home = newHome();
      const from = server.requests.length;
      const r = await runAs(user, "sh", ["-c", `sh "${released}" ${INSECURE} ${args}`], envFor(home, userDir("tmp"), extra));
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`rootless-k8s ${VERSION} (pinned) for linux-`);
      expect(newRequests(from)).toEqual([`/${VERSION}/SHA256SUMS`, `/${VERSION}/SHA256SUMS.sig`, `/${VERSION}/${BINARY_NAME}`]);
    }
  });

  it("fails with the download exit code, naming the URL, when the version does not exist", async () => {
    const home = newHome();
    const r = await runAs(user, "sh", [released, INSECURE, "--no-start", "--version", "9.9.9"], envFor(home, userDir("tmp")));
    expect(r.code).toBe(5);
    expect(r.stderr).toContain(`error: could not download ${server.url}/9.9.9/SHA256SUMS`);
    expect(listFiles(home)).toEqual([]);
  });

  it("does not download the binary again when the installed one already matches", async () => {
    const home = newHome();
    const env = envFor(home, userDir("tmp"));
    expect((await runAs(user, "sh", [released, INSECURE, "--no-start"], env)).code).toBe(0);
    const from = server.requests.length;
    const again = await runAs(user, "sh", [released, INSECURE, "--no-start"], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("is already this version (same SHA-256)");
    expect(newRequests(from)).toEqual(["/latest.txt", `/${VERSION}/SHA256SUMS`, `/${VERSION}/SHA256SUMS.sig`]);
  });

  it("prints no PATH line when the folder is already on PATH, and honours ROOTLESS_K8S_INSTALL_DIR", async () => {
    const home = newHome();
    const dir = join(home, "tools");
    const r = await runAs(
      user,
      "sh",
      [released, INSECURE, "--no-start"],
      envFor(home, userDir("tmp"), { ROOTLESS_K8S_INSTALL_DIR: dir, PATH: `${dir}:/usr/bin:/bin` }),
    );
    expect(r.code).toBe(0);
    expect(sha256File(join(dir, "rootless-k8s"))).toBe(binSum);
    expect(r.stdout).not.toContain("not on your PATH");
    expect(r.stdout).toContain("Next: `rootless-k8s doctor`");
  });

  it("--modify-path puts the folder on PATH for bash, zsh and fish, backing up the rc file, once", async () => {
    const cases = [
      {
        shell: "/bin/bash",
        rc: ".bashrc",
        before: "# my bashrc\nalias ll='ls -l'\n",
        check: ["bash", "-c", ". ~/.bashrc; rootless-k8s --version"],
      },
      { shell: "/usr/bin/zsh", rc: ".zshrc", before: undefined, check: ["zsh", "-c", "source ~/.zshrc; rootless-k8s --version"] },
      {
        shell: "/usr/bin/fish",
        rc: ".config/fish/conf.d/rootless-k8s.fish",
        before: undefined,
        check: ["fish", "-c", "rootless-k8s --version"],
      },
    ];
    for (const c of cases) {
      const home = newHome();
      const env = envFor(home, userDir("tmp"), { SHELL: c.shell });
      const rc = join(home, c.rc);
      if (c.before !== undefined) {
        writeFileSync(rc, c.before);
        chownSync(rc, user.uid, user.gid);
      }
      const r = await runAs(user, "sh", [released, INSECURE, "--no-start", "--modify-path"], env);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`added ${home}/.local/bin to PATH in ${rc}`);
      const text = readFileSync(rc, "utf8");
      expect(text.startsWith(c.before ?? "")).toBe(true);
      const backups = readdirSync(join(rc, "..")).filter((f) => f.includes(".rootless-k8s-backup."));
      if (c.before === undefined) {
        expect(backups).toEqual([]);
      } else {
        expect(backups).toHaveLength(1);
        expect(readFileSync(join(rc, "..", backups[0]!), "utf8")).toBe(c.before);
      }
      const check = await runAs(user, c.check[0]!, c.check.slice(1), env);
      expect(check.stdout.trim(), `${c.shell}: ${check.stderr}`).toBe(`rootless-k8s ${VERSION}`);
      const again = await runAs(user, "sh", [released, INSECURE, "--no-start", "--modify-path"], env);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain("already puts");
      expect(readFileSync(rc, "utf8")).toBe(text);
      expect(readdirSync(join(rc, "..")).filter((f) => f.includes(".rootless-k8s-backup."))).toHaveLength(backups.length);
    }
  });

  it("refuses root unless ROOTLESS_K8S_FORCE_ROOT=1", async () => {
    const home = tempDir("rk8s-roothome-");
    const env = { ...envFor(home, home), TMPDIR: tmpdir() };
    const from = server.requests.length;
    const refused = await runAs(null, "sh", [released, INSECURE, "--no-start"], env);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain("error: refusing to run as root");
    expect(refused.stderr).toContain("ROOTLESS_K8S_FORCE_ROOT=1");
    expect(newRequests(from)).toEqual([]);
    expect(listFiles(home)).toEqual([]);
    const forced = await runAs(null, "sh", [released, INSECURE, "--no-start"], { ...env, ROOTLESS_K8S_FORCE_ROOT: "1" });
    expect(forced.code).toBe(0);
    expect(sha256File(join(home, ".local", "bin", "rootless-k8s"))).toBe(binSum);
  });

  it("refuses an OS or CPU it has no binary for, with one clear line", async () => {
    for (const [uname, message] of [
      ["Linux armv7l", "error: unsupported CPU architecture armv7l"],
      ["Darwin arm64", "error: rootless-k8s runs on Linux only; this is Darwin"],
    ] as const) {
      const fake = tempDir("rk8s-uname-");
      chmodSync(fake, 0o755);
      writeFileSync(join(fake, "uname"), `#!/bin/sh\necho "${uname}"\n`, { mode: 0o755 });
      const home = newHome();
      const r = await runAs(
        user,
        "sh",
        [released, INSECURE, "--no-start"],
        envFor(home, userDir("tmp"), { PATH: `${fake}:/usr/bin:/bin` }),
      );
      expect(r.code).toBe(3);
      expect(r.stderr.split("\n")[0]).toContain(message);
      expect(listFiles(home)).toEqual([]);
    }
  });

  it("refuses a plain-http download URL without --insecure-http, before any request (exit 2)", async () => {
    const home = newHome();
    const from = server.requests.length;
    const r = await runAs(user, "sh", [released, "--no-start"], envFor(home, userDir("tmp")));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`error: refused the plain-http download URL ${server.url}`);
    expect(r.stderr).toContain("pass --insecure-http to accept it");
    expect(newRequests(from)).toEqual([]);
    expect(listFiles(home)).toEqual([]);
  });

  it("refuses SHA256SUMS signed by another key, or not signed, before downloading the binary (exit 4)", async () => {
    const swapped = Buffer.from('#!/bin/sh\ntouch "$HOME/RAN"\necho "rootless-k8s 1.0.0"\n');
    for (const [signedBy, message] of [
      [newSigningKey(tempDir()), "does not verify with the release key in this install.sh; nothing was installed"],
      [null, "is not signed"],
    ] as const) {
      const bad = tempDir("rk8s-swapped-");
      writeRelease(bad, VERSION, { [BINARY_NAME]: swapped }, { signedBy });
      const badServer = await serveDir(bad);
      try {
        const home = newHome();
        const r = await runAs(
          user,
          "sh",
          [released, INSECURE, "--no-start"],
          envFor(home, userDir("tmp"), { ROOTLESS_K8S_DOWNLOAD_URL: badServer.url }),
        );
        expect(r.code).toBe(4);
        expect(r.stderr).toContain(message);
        expect(badServer.paths()).not.toContain(`/${VERSION}/${BINARY_NAME}`);
        expect(listFiles(home)).toEqual([]);
      } finally {
        await badServer.close();
      }
    }
  });

  it("refuses a signed release served under another version's name, or naming none, before downloading the binary (exit 4)", async () => {
    const bad = tempDir("rk8s-misnamed-");
    cpSync(join(base, VERSION), join(bad, "1.2.0"), { recursive: true });
    writeRelease(bad, "1.3.0", { [BINARY_NAME]: readFileSync(join(build, BINARY_NAME)) }, { latest: false, names: null });
    writeFileSync(join(bad, "latest.txt"), "1.2.0\n");
    const badServer = await serveDir(bad);
    try {
      for (const [version, args] of [
        ["1.2.0", "--no-start"],
        ["1.3.0", "--no-start --version 1.3.0"],
      ] as const) {
        const home = newHome();
        const r = await runAs(
          user,
          "sh",
          ["-c", `sh "${released}" ${INSECURE} ${args}`],
          envFor(home, userDir("tmp"), { ROOTLESS_K8S_DOWNLOAD_URL: badServer.url }),
        );
        expect(r.code, r.stderr).toBe(4);
        expect(r.stdout).toContain("verified the ed25519 signature of SHA256SUMS");
        expect(r.stderr).toContain(
          `error: ${badServer.url}/${version}/SHA256SUMS is not release ${version}'s: its VERSION line names another version, or none; nothing was installed`,
        );
        expect(badServer.paths()).not.toContain(`/${version}/${BINARY_NAME}`);
        expect(listFiles(home)).toEqual([]);
      }
    } finally {
      await badServer.close();
    }
  });

  it("never replaces a newer installed binary: an older latest.txt keeps it, an older --version needs --allow-downgrade", async () => {
    const newer = join(testBinary("1.1.0"), BINARY_NAME);
    const newerSum = sha256File(newer);
    const withNewer = () => {
      const home = newHome();
      const dir = join(home, ".local", "bin");
      mkdirSync(dir, { recursive: true });
      const bin = join(dir, "rootless-k8s");
      copyFileSync(newer, bin);
      chmodSync(bin, 0o755);
      for (const p of [join(home, ".local"), dir, bin]) chownSync(p, user.uid, user.gid);
      return { home, bin, env: envFor(home, userDir("tmp"), { PATH: `${dir}:/usr/bin:/bin` }) };
    };

    const kept = withNewer();
    let from = server.requests.length;
    const latest = await runAs(user, "sh", [released, INSECURE, "--no-start"], kept.env);
    expect(latest.code, latest.stderr).toBe(0);
    expect(latest.stderr).toContain(
      `warning: ${server.url}/latest.txt names ${VERSION}, older than the installed ${kept.bin} 1.1.0: keeping 1.1.0`,
    );
    expect(newRequests(from)).toEqual(["/latest.txt"]);
    expect(sha256File(kept.bin)).toBe(newerSum);

    const pinned = withNewer();
    from = server.requests.length;
    const refused = await runAs(user, "sh", [released, INSECURE, "--no-start", "--version", VERSION], pinned.env);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`error: ${pinned.bin} is 1.1.0, newer than ${VERSION}; nothing was downloaded or installed`);
    expect(refused.stderr).toContain(`fix: to go back on purpose: sh -s -- --version ${VERSION} --allow-downgrade`);
    expect(newRequests(from)).toEqual([]);
    expect(sha256File(pinned.bin)).toBe(newerSum);

    for (const [args, extra] of [
      [`--version ${VERSION} --allow-downgrade`, {}],
      [`--version ${VERSION}`, { ROOTLESS_K8S_ALLOW_DOWNGRADE: "1" }],
    ] as const) {
      const back = withNewer();
      const r = await runAs(user, "sh", ["-c", `sh "${released}" ${INSECURE} --no-start ${args}`], { ...back.env, ...extra });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`going back from rootless-k8s 1.1.0 to ${VERSION} (--allow-downgrade)`);
      expect(sha256File(back.bin)).toBe(binSum);
    }
  });

  it("an installed binary that hangs when asked its version counts as none after 30 s, and is replaced", async () => {
    const home = newHome();
    const dir = join(home, ".local", "bin");
    mkdirSync(dir, { recursive: true });
    const bin = join(dir, "rootless-k8s");
    writeFileSync(bin, "#!/bin/sh\nexec sleep 600\n", { mode: 0o755 });
    for (const p of [join(home, ".local"), dir, bin]) chownSync(p, user.uid, user.gid);
    const r = await runAs(user, "sh", [released, INSECURE, "--no-start"], envFor(home, userDir("tmp"), { PATH: `${dir}:/usr/bin:/bin` }));
    expect(r.code, r.stderr).toBe(0);
    expect(sha256File(bin)).toBe(binSum);
  }, 180_000);

  it("refuses where openssl 3 is missing, and installs on the SHA-256 alone only with ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1, saying so", async () => {
    const home = newHome();
    const env = envFor(home, userDir("tmp"), { PATH: binWithout("openssl") });
    const from = server.requests.length;
    const r = await runAs(user, "sh", [released, INSECURE, "--no-start"], env);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(
      "error: the release signature (ed25519) can only be checked with OpenSSL 3 or newer, and this machine has no openssl; nothing was downloaded or installed",
    );
    expect(r.stderr).toContain("ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 sh");
    expect(newRequests(from)).toEqual([]);
    expect(listFiles(home)).toEqual([]);
    const skipped = await runAs(user, "sh", [released, INSECURE, "--no-start"], { ...env, ROOTLESS_K8S_SKIP_SIGNATURE_CHECK: "1" });
    expect(skipped.code, skipped.stderr).toBe(0);
    expect(skipped.stderr).toContain("warning: ROOTLESS_K8S_SKIP_SIGNATURE_CHECK=1 and no OpenSSL 3: the release signature is NOT checked");
    expect(skipped.stdout).not.toContain("verified the ed25519 signature");
    expect(sha256File(join(home, ".local", "bin", "rootless-k8s"))).toBe(binSum);
    const withSsl = await runAs(user, "sh", [released, INSECURE, "--no-start"], envFor(newHome(), userDir("tmp")));
    expect(withSsl.stdout).toContain("verified the ed25519 signature of SHA256SUMS");
  });

  it("refuses to install from the repository's copy, which carries no release key (exit 4)", async () => {
    const home = newHome();
    const r = await runAs(user, "sh", [INSTALL_SH, INSECURE, "--no-start"], envFor(home, userDir("tmp")));
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("error: this install.sh carries no release key (it was not made by scripts/release.sh)");
    expect(listFiles(home)).toEqual([]);
  });

  it("runs nothing when the script is cut short anywhere", async () => {
    const text = readFileSync(INSTALL_SH);
    const cuts = new Set<number>();
    for (let i = 0; i < text.length; i += 251) cuts.add(i);
    for (let i = text.length - 40; i < text.length - 1; i++) cuts.add(i); // inside the last lines
    const block = text.indexOf("\n{\n") + 1; // before it: comments only
    const home = newHome();
    const dir = userDir("cut");
    const from = server.requests.length;
    for (const cut of cuts) {
      const file = join(dir, "install.sh");
      writeFileSync(file, text.subarray(0, cut));
      const r = await runAs(user, "sh", [file, "--no-start"], envFor(home, dir));
      expect(r.stdout, `cut at ${cut}`).toBe("");
      if (cut <= block) expect(r.code, `cut at ${cut}`).toBe(0);
      else expect(r.stderr, `cut at ${cut}`).toMatch(/: Syntax error: /);
    }
    expect(newRequests(from)).toEqual([]);
    expect(listFiles(home)).toEqual([]);
  });
});
