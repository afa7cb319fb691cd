// scripts/release.sh: the release folder layout, from build folders whose "binary" is a small
// script double printing a version (the layout script only runs `--version` and copies files).
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "../../helpers/cli";
import { tempDir } from "../../helpers/temp";
import { ARCH, listFiles } from "./release-fixture";

/** A build folder with a binary double for this arch that says `version`, and its SHA256SUMS. */
function buildDouble(version: string, extra = ""): string {
  const dir = tempDir("rk8s-build-double-");
  writeFileSync(join(dir, `rootless-k8s-linux-${ARCH}`), `#!/bin/sh\n# binary double ${extra}\necho "rootless-k8s ${version}"\n`, { mode: 0o755 });
  execFileSync("sh", ["-c", "sha256sum rootless-k8s-linux-* > SHA256SUMS"], { cwd: dir });
  return dir;
}
const release = (...args: string[]) => spawnSync("bash", [join(REPO, "scripts", "release.sh"), ...args], { encoding: "utf8" });

describe("scripts/release.sh", () => {
  it("lays out install.sh, latest.txt and <version>/{binary,SHA256SUMS}, readable by a web server", () => {
    const out = join(tempDir("rk8s-rel-"), "site");
    const r = release("--from", buildDouble("2.0.0"), out);
    expect(r.status, r.stderr).toBe(0);
    expect(listFiles(out)).toEqual(["2.0.0/SHA256SUMS", `2.0.0/rootless-k8s-linux-${ARCH}`, "install.sh", "latest.txt"]);
    expect(readFileSync(join(out, "latest.txt"), "utf8")).toBe("2.0.0\n");
    expect(readFileSync(join(out, "install.sh"))).toEqual(readFileSync(join(REPO, "scripts", "install.sh")));
    for (const f of listFiles(out)) expect(statSync(join(out, f)).mode & 0o777).toBe(0o644);
    expect(execFileSync("sha256sum", ["-c", "SHA256SUMS"], { cwd: join(out, "2.0.0"), encoding: "utf8" })).toContain(": OK");
  });

  it("adds versions side by side; --no-latest leaves latest.txt alone", () => {
    const out = tempDir("rk8s-rel-");
    expect(release("--from", buildDouble("2.0.0"), out).status).toBe(0);
    expect(release("--from", buildDouble("2.1.0-rc.1"), "--no-latest", out).status).toBe(0);
    expect(readFileSync(join(out, "latest.txt"), "utf8")).toBe("2.0.0\n");
    expect(listFiles(out).filter((f) => f.endsWith("SHA256SUMS"))).toEqual(["2.0.0/SHA256SUMS", "2.1.0-rc.1/SHA256SUMS"]);
  });

  it("never changes a published version, but accepts the very same files again", () => {
    const out = tempDir("rk8s-rel-");
    const first = buildDouble("2.0.0");
    expect(release("--from", first, out).status).toBe(0);
    const before = readFileSync(join(out, "2.0.0", `rootless-k8s-linux-${ARCH}`));
    expect(release("--from", first, out).status).toBe(0);
    const other = release("--from", buildDouble("2.0.0", "rebuilt"), out);
    expect(other.status).toBe(1);
    expect(other.stderr).toContain(`error: ${out}/2.0.0 exists with other binaries; releases are immutable`);
    expect(readFileSync(join(out, "2.0.0", `rootless-k8s-linux-${ARCH}`))).toEqual(before);
  });

  it("refuses a build whose files do not match its SHA256SUMS, or a --version the binary contradicts", () => {
    const out = tempDir("rk8s-rel-");
    const bad = buildDouble("2.0.0");
    writeFileSync(join(bad, `rootless-k8s-linux-${ARCH}`), "#!/bin/sh\necho changed\n");
    const r = release("--from", bad, out);
    expect(r.status).toBe(4);
    expect(r.stderr).toContain(`error: the binaries in ${bad} do not match their SHA256SUMS`);
    const wrong = release("--from", buildDouble("2.0.0"), "--version", "3.0.0", out);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain("error: --version 3.0.0, but the binaries in");
    expect(listFiles(out)).toEqual([]);
  });
});
