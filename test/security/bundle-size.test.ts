// Issue 34: a bundle entry never writes more than the size its index declares. A gzip'd bundle whose
// index says `size: 10` for an artifact whose tar entry holds 8 MiB (random, so node-tar's
// decompression-ratio guard does not stop it first) is refused before the cache gets more than the
// declared bytes: exit 4, one line naming the entry and the declared size, and no partial file left.
// Run as an ordinary user against the bundled CLI (`cache fetch --bundle --trust-bundle`), on real
// files; the cache's lock folder (the run's own small record) is not the artifact's.
import { randomBytes } from "node:crypto";
import { chmodSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI_BUNDLE } from "../helpers/cli";
import { sha256 } from "../helpers/hash";
import { tarGz } from "../helpers/tar.mjs";
import { tempDir } from "../helpers/temp";
import { runAs, testUser, USER_PATH } from "../helpers/user";

const user = testUser("rk8s-sb-bundle");
const BIG = 8 << 20;
const DECLARED = 10;

/** Every file below `dir` but the lock folder's, with its size (none when `dir` does not exist; one gone mid-walk is skipped). */
function filesBelow(dir: string): [string, number][] {
  const out: [string, number][] = [];
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      // The run renames and removes its own temporary folders while this walk reads them.
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(p);
      else if (!p.slice(dir.length).includes("lock")) out.push([p, st.size]);
    }
  };
  walk(dir);
  return out;
}

describe("a bundle entry larger than its index declares (issue 34)", () => {
  it("is refused with exit 4 before more than the declared bytes reach the cache", async () => {
    const body = randomBytes(BIG);
    const value = sha256(body.subarray(0, DECLARED));
    const checksum = { algorithm: "sha256", value, source: "hostile bundle", size: DECLARED };
    const artifact = {
      id: "runc",
      component: "runc",
      version: "1.0.0",
      url: "https://upstream.invalid/runc/v1.0.0/runc.amd64",
      arch: { amd64: "amd64" },
      format: "binary",
      binaries: [{ name: "runc" }],
      checksums: { amd64: checksum },
    };
    const index = {
      schema: 1,
      kind: "rootless-k8s-bundle",
      createdBy: "rootless-k8s 0.0.0",
      createdAt: new Date(0).toISOString(),
      arch: "amd64",
      manifest: { schema: 1, name: "hostile", artifacts: [artifact] },
      files: [{ id: "runc", path: "artifacts/runc/runc.amd64", algorithm: "sha256", value, size: DECLARED }],
    };
    const root = tempDir("rk8s-sb-bundle-");
    chmodSync(root, 0o755);
    const home = join(root, "home");
    mkdirSync(home);
    const bundle = join(root, "hostile.tar.gz");
    writeFileSync(
      bundle,
      tarGz([
        { path: "rootless-k8s-bundle.json", content: JSON.stringify(index) },
        { path: "artifacts/runc/runc.amd64", content: body },
      ]),
    );
    user.own(root);
    const cache = join(home, ".cache/rootless-k8s");
    const env = { HOME: home, USER: user.name, PATH: USER_PATH, NO_COLOR: "1", ROOTLESS_K8S_NO_UPDATE_CHECK: "1" };
    // Watch the cache while the CLI runs: no file in it may ever grow past the declared size.
    let largest = 0;
    const watch = setInterval(() => {
      for (const [, size] of filesBelow(cache)) largest = Math.max(largest, size);
    }, 2);
    const r = await runAs(
      user,
      process.execPath,
      [CLI_BUNDLE, "cache", "fetch", "--bundle", bundle, "--trust-bundle", "--arch", "amd64"],
      env,
      {
        timeoutMs: 60_000,
      },
    );
    clearInterval(watch);
    for (const [, size] of filesBelow(cache)) largest = Math.max(largest, size);
    expect(r.stderr).not.toMatch(/\bat .*\.(js|ts|cjs):\d+|This is a bug/);
    expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(4);
    expect(largest, "the most bytes any cache file held").toBeLessThanOrEqual(DECLARED);
    const error = r.stderr.split("\n").filter((l) => l.startsWith("error:"));
    expect(error).toEqual([
      `error: bundle ${bundle}: the entry artifacts/runc/runc.amd64 is larger than the ${DECLARED} bytes its index declares`,
    ]);
    // No partial file is left.
    expect(filesBelow(cache)).toEqual([]);
  });
});
