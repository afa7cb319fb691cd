// scripts/release.sh: the release folder layout and its signature, from build folders whose
// "binary" is a small script double printing a version and carrying the release public key as the
// real binary does (the layout script only runs `--version`, looks for the key and copies files).
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "../../helpers/cli";
import { sumsNameVersion } from "../../../cli/self/releases";
import { tempDir } from "../../helpers/temp";
import { ARCH, installShWithKey, listFiles, newSigningKey, type SigningKey, testSigningKey } from "./release-fixture";

const KEY = testSigningKey();

/** A build folder with a binary double for this arch that says `version`, and its SHA256SUMS. */
function buildDouble(version: string, extra = "", key: SigningKey = KEY): string {
  const dir = tempDir("rk8s-build-double-");
  writeFileSync(
    join(dir, `rootless-k8s-linux-${ARCH}`),
    `#!/bin/sh\n# binary double ${extra} key ${key.publicKey}\necho "rootless-k8s ${version}"\n`,
    { mode: 0o755 },
  );
  execFileSync("sh", ["-c", "sha256sum rootless-k8s-linux-* > SHA256SUMS"], { cwd: dir });
  return dir;
}
const release = (args: string[], env: Record<string, string | undefined> = { ROOTLESS_K8S_SIGNING_KEY: KEY.file }) =>
  spawnSync("bash", [join(REPO, "scripts", "release.sh"), ...args], {
    encoding: "utf8",
    env: { ...process.env, ROOTLESS_K8S_SIGNING_KEY: undefined, ...env } as NodeJS.ProcessEnv,
  });

/** Whether `dir`/SHA256SUMS.sig verifies with `publicKey` under `openssl pkeyutl`, as install.sh checks it. */
function opensslVerifies(dir: string, publicKey: string): boolean {
  const pem = join(tempDir(), "pub.pem");
  writeFileSync(pem, `-----BEGIN PUBLIC KEY-----\n${publicKey}\n-----END PUBLIC KEY-----\n`);
  const r = spawnSync("openssl", [
    "pkeyutl",
    "-verify",
    "-pubin",
    "-inkey",
    pem,
    "-rawin",
    "-in",
    join(dir, "SHA256SUMS"),
    "-sigfile",
    join(dir, "SHA256SUMS.sig"),
  ]);
  return r.status === 0;
}

describe("scripts/release.sh", () => {
  it("lays out install.sh, latest.txt and <version>/{binary,VERSION,SHA256SUMS,SHA256SUMS.sig}, readable by a web server", () => {
    const out = join(tempDir("rk8s-rel-"), "site");
    const r = release(["--from", buildDouble("2.0.0"), out]);
    expect(r.status, r.stderr).toBe(0);
    expect(listFiles(out)).toEqual([
      "2.0.0/SHA256SUMS",
      "2.0.0/SHA256SUMS.sig",
      "2.0.0/VERSION",
      `2.0.0/rootless-k8s-linux-${ARCH}`,
      "install.sh",
      "latest.txt",
    ]);
    expect(readFileSync(join(out, "latest.txt"), "utf8")).toBe("2.0.0\n");
    // The version is under the signature: SHA256SUMS lists VERSION, which holds it.
    expect(readFileSync(join(out, "2.0.0", "VERSION"), "utf8")).toBe("2.0.0\n");
    expect(sumsNameVersion(readFileSync(join(out, "2.0.0", "SHA256SUMS"), "utf8"), "2.0.0")).toBe(true);
    // install.sh is the repository's, with the public key written in; the signature verifies with it.
    expect(readFileSync(join(out, "install.sh"), "utf8")).toBe(installShWithKey(KEY));
    expect(readFileSync(join(REPO, "scripts", "install.sh"), "utf8")).toMatch(/^ROOTLESS_K8S_RELEASE_KEY=$/m);
    expect(opensslVerifies(join(out, "2.0.0"), KEY.publicKey)).toBe(true);
    expect(opensslVerifies(join(out, "2.0.0"), newSigningKey(tempDir()).publicKey)).toBe(false);
    for (const f of listFiles(out)) expect(statSync(join(out, f)).mode & 0o777).toBe(0o644);
    expect(execFileSync("sha256sum", ["-c", "SHA256SUMS"], { cwd: join(out, "2.0.0"), encoding: "utf8" })).toContain(": OK");
  });

  it("adds versions side by side; --no-latest leaves latest.txt alone", () => {
    const out = tempDir("rk8s-rel-");
    expect(release(["--from", buildDouble("2.0.0"), out]).status).toBe(0);
    expect(release(["--from", buildDouble("2.1.0-rc.1"), "--no-latest", out]).status).toBe(0);
    expect(readFileSync(join(out, "latest.txt"), "utf8")).toBe("2.0.0\n");
    expect(listFiles(out).filter((f) => f.endsWith("SHA256SUMS"))).toEqual(["2.0.0/SHA256SUMS", "2.1.0-rc.1/SHA256SUMS"]);
  });

  it("never changes a published version, but accepts the very same files again", () => {
    const out = tempDir("rk8s-rel-");
    const first = buildDouble("2.0.0");
    expect(release(["--from", first, out]).status).toBe(0);
    const before = readFileSync(join(out, "2.0.0", `rootless-k8s-linux-${ARCH}`));
    expect(release(["--from", first, out]).status).toBe(0);
    const other = release(["--from", buildDouble("2.0.0", "rebuilt"), out]);
    expect(other.status).toBe(1);
    expect(other.stderr).toContain(`error: ${out}/2.0.0 exists with other binaries; releases are immutable`);
    expect(readFileSync(join(out, "2.0.0", `rootless-k8s-linux-${ARCH}`))).toEqual(before);
  });

  it("refuses a build whose files do not match its SHA256SUMS, or a --version the binary contradicts", () => {
    const out = tempDir("rk8s-rel-");
    const bad = buildDouble("2.0.0");
    writeFileSync(join(bad, `rootless-k8s-linux-${ARCH}`), "#!/bin/sh\necho changed\n");
    const r = release(["--from", bad, out]);
    expect(r.status).toBe(4);
    expect(r.stderr).toContain(`error: the binaries in ${bad} do not match their SHA256SUMS`);
    const wrong = release(["--from", buildDouble("2.0.0"), "--version", "3.0.0", out]);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain("error: --version 3.0.0, but the binaries in");
    expect(listFiles(out)).toEqual([]);
  });

  it("refuses to release without a signing key, and signs with a throwaway key only when told", () => {
    const out = tempDir("rk8s-rel-");
    const r = release(["--from", buildDouble("2.0.0"), out], {});
    expect(r.status).toBe(3);
    expect(r.stderr).toContain("error: ROOTLESS_K8S_SIGNING_KEY is not set: a release must be signed");
    expect(listFiles(out)).toEqual([]);
    const t = release(["--throwaway-key", "--from", buildDouble("2.0.0"), out], {});
    expect(t.status, t.stderr).toBe(0);
    expect(t.stderr).toContain("warning: signing with a throwaway key (tests only)");
    const key = /^ROOTLESS_K8S_RELEASE_KEY=(.+)$/m.exec(readFileSync(join(out, "install.sh"), "utf8"))?.[1] ?? "";
    expect(key).not.toBe(KEY.publicKey);
    expect(opensslVerifies(join(out, "2.0.0"), key)).toBe(true);
  });

  it("refuses a key inside the repository, one others can read, and binaries built without the key", () => {
    const out = tempDir("rk8s-rel-");
    const inRepo = join(REPO, "dist", `test-key-${process.pid}.pem`);
    copyFileSync(KEY.file, inRepo);
    try {
      const r = release(["--from", buildDouble("2.0.0"), out], { ROOTLESS_K8S_SIGNING_KEY: inRepo });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`error: the signing key ${inRepo} lies inside the repository`);
    } finally {
      spawnSync("rm", ["-f", inRepo]);
    }
    const open = newSigningKey(tempDir());
    chmodSync(open.file, 0o644);
    const o = release(["--from", buildDouble("2.0.0", "", open), out], { ROOTLESS_K8S_SIGNING_KEY: open.file });
    expect(o.status).toBe(1);
    expect(o.stderr).toContain("is readable by others (mode 644)");
    const other = newSigningKey(tempDir());
    const w = release(["--from", buildDouble("2.0.0", "", other), out]);
    expect(w.status).toBe(1);
    expect(w.stderr).toContain(`does not carry the release key of ${KEY.file}`);
    expect(listFiles(out)).toEqual([]);
  });

  it("refuses to re-release a version that another key signed", () => {
    const out = tempDir("rk8s-rel-");
    const build = buildDouble("2.0.0");
    expect(release(["--throwaway-key", "--from", build, out], {}).status).toBe(0);
    const r = release(["--from", build, out]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`error: ${out}/2.0.0/SHA256SUMS.sig does not verify with the key of ${KEY.file}`);
  });
});
