// Atomic writes, exact modes, atomic link switches: real files in a temp folder.
import { promises as fsp, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { ensureDir, hashFile, isWithin, sha256, sweepTempFiles, switchSymlink, writeFileAtomic } from "../../../cli/apply/files";
import { tempDir } from "../../helpers/temp";

let dir: string;
beforeEach(() => {
  dir = tempDir("rk8s-files-");
});

describe("writeFileAtomic", () => {
  it("writes the content with the exact mode, whatever the umask", async () => {
    const old = process.umask(0o077);
    try {
      await writeFileAtomic(join(dir, "unit.service"), "[Unit]\n", { mode: 0o644 });
    } finally {
      process.umask(old);
    }
    expect(readFileSync(join(dir, "unit.service"), "utf8")).toBe("[Unit]\n");
    expect(statSync(join(dir, "unit.service")).mode & 0o777).toBe(0o644);
  });

  it("gives a key 0600 and replaces an existing file in one rename (same inode never half-written)", async () => {
    const f = join(dir, "ca.key");
    await fsp.writeFile(f, "old", { mode: 0o644 });
    const before = statSync(f).ino;
    await writeFileAtomic(f, "new-key", { mode: 0o600 });
    expect(readFileSync(f, "utf8")).toBe("new-key");
    expect(statSync(f).mode & 0o777).toBe(0o600);
    expect(statSync(f).ino).not.toBe(before); // a new file was renamed over the old one
    expect(readdirSync(dir)).toEqual(["ca.key"]); // no temp file left
  });

  it("leaves the old file and no temp file when the folder is missing", async () => {
    await expect(writeFileAtomic(join(dir, "missing", "x"), "y")).rejects.toThrow();
    expect(readdirSync(dir)).toEqual([]);
  });

  it("sweeps temp files an interrupted write left behind, and only those", async () => {
    await fsp.writeFile(join(dir, ".kubelet.yaml.rk8s-tmp-deadbeef"), "torn");
    await fsp.writeFile(join(dir, "kubelet.yaml"), "kept");
    await fsp.writeFile(join(dir, ".hidden-user-file"), "kept");
    const swept = await sweepTempFiles(dir);
    expect(swept).toEqual([join(dir, ".kubelet.yaml.rk8s-tmp-deadbeef")]);
    expect(readdirSync(dir).sort()).toEqual([".hidden-user-file", "kubelet.yaml"]);
  });
});

describe("ensureDir", () => {
  it("creates missing folders with the mode, reports them, and tightens an existing one", async () => {
    const pki = join(dir, "a", "b", "pki");
    const created = await ensureDir(pki, 0o700);
    expect(created).toEqual([join(dir, "a"), join(dir, "a", "b"), pki]);
    expect(statSync(pki).mode & 0o777).toBe(0o700);
    await fsp.chmod(pki, 0o755);
    expect(await ensureDir(pki, 0o700)).toEqual([]);
    expect(statSync(pki).mode & 0o777).toBe(0o700);
  });

  it("never opens an existing folder further (the user's private ~/.config/systemd/user stays 0700)", async () => {
    const units = join(dir, ".config", "systemd", "user");
    await fsp.mkdir(units, { recursive: true, mode: 0o700 });
    expect(await ensureDir(units, 0o755)).toEqual([]);
    expect(statSync(units).mode & 0o777).toBe(0o700);
    await fsp.chmod(units, 0o775);
    await ensureDir(units, 0o755);
    expect(statSync(units).mode & 0o777).toBe(0o755);
  });

  it("gives a folder it creates exactly the mode, whatever the umask", async () => {
    const old = process.umask(0o077);
    try {
      await ensureDir(join(dir, "data", "kubelet"), 0o755);
    } finally {
      process.umask(old);
    }
    expect(statSync(join(dir, "data", "kubelet")).mode & 0o777).toBe(0o755);
  });

  it("refuses a path that is a file", async () => {
    await fsp.writeFile(join(dir, "f"), "");
    await expect(ensureDir(join(dir, "f"))).rejects.toThrow(/not a folder/);
  });
});

describe("switchSymlink", () => {
  it("repoints a link atomically", async () => {
    await fsp.mkdir(join(dir, "v1"));
    await fsp.mkdir(join(dir, "v2"));
    const link = join(dir, "current");
    await switchSymlink(link, "v1");
    expect(await fsp.readlink(link)).toBe("v1");
    await switchSymlink(link, "v2");
    expect(await fsp.readlink(link)).toBe("v2");
    expect(readdirSync(dir).sort()).toEqual(["current", "v1", "v2"]);
  });
});

describe("hashes and paths", () => {
  it("hashes files and says null for a missing one", async () => {
    await fsp.writeFile(join(dir, "x"), "abc");
    expect(await hashFile(join(dir, "x"))).toBe(sha256("abc"));
    expect(sha256("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(await hashFile(join(dir, "nope"))).toBeNull();
  });

  it("isWithin resolves .. before comparing", () => {
    expect(isWithin("/home/u/.local/share/rootless-k8s/data", "/home/u/.local/share/rootless-k8s")).toBe(true);
    expect(isWithin("/home/u/.local/share/rootless-k8s/../other", "/home/u/.local/share/rootless-k8s")).toBe(false);
    expect(isWithin("/home/u/.local/share/rootless-k8s-evil", "/home/u/.local/share/rootless-k8s")).toBe(false);
  });
});
