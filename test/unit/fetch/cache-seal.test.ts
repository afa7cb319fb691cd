// The warm path of the cache (issue 33), on real files: a verified blob is sealed (seal.ts) and
// trusted while its stat still matches, hashed again once anything about it changed; an archive's
// binaries are unpacked once into the cache (unpacked.ts) and then hard-linked into each version
// set's bin folder, unpacked anew when a file there no longer matches its seal.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { cacheLayout, cleanCache, fromCache, listCache, sealBlob } from "../../../cli/fetch/cache";
import { installBinaries } from "../../../cli/fetch/extract";
import { sealOf, writeSealFile } from "../../../cli/fetch/seal";
import type { FetchedArtifact, ResolvedArtifact } from "../../../cli/fetch/types";
import { sha256 } from "../../helpers/hash";
import { tarGz } from "../../helpers/tar.mjs";
import { tempDir } from "../../helpers/temp";
import { randomBody, resolved, testArtifact } from "./helpers/artifacts";

let cacheDir: string;
beforeEach(() => {
  cacheDir = tempDir("rk8s-seal-");
});

/** A blob put in the cache as a download leaves it (0644, renamed into place), then sealed as fetch does. */
async function cached(a: ResolvedArtifact, body: Buffer): Promise<string> {
  const file = cacheLayout(cacheDir).blob(a.checksum);
  execFileSync("mkdir", ["-p", join(cacheDir, "blobs", a.checksum.algorithm)]);
  writeFileSync(file, body, { mode: 0o644 });
  expect(await sealBlob(a, cacheLayout(cacheDir), "verified")).toBe(true);
  return file;
}

describe("fromCache with seals", () => {
  const body = randomBody(300_000, 3);
  const a = resolved(testArtifact({ id: "kubelet", path: "/kubelet", body }));

  it("trusts a sealed blob without hashing it, and makes a raw binary 0755 so it can be linked where it runs", async () => {
    const file = await cached(a, body);
    expect(statSync(file).mode & 0o777).toBe(0o755);
    const f = await fromCache(a, cacheLayout(cacheDir));
    expect(f).toMatchObject({ file, size: body.length, source: "cache" });
    expect(f?.verification).toBe("sha256 matches the pin from test fixture, checked when cached and unchanged since");
  });

  it("hashes a blob again once it was written to, and removes it when it no longer matches", async () => {
    const file = await cached(a, body);
    const other = Buffer.from(body);
    other[1000] = (other[1000] ?? 0) ^ 0xff;
    writeFileSync(file, other); // same size; a new modification time
    expect(await fromCache(a, cacheLayout(cacheDir))).toBeNull();
    expect(existsSync(file)).toBe(false);
    expect(existsSync(cacheLayout(cacheDir).seal(a.checksum))).toBe(false);
  });

  it("hashes a blob again when its seal is gone or its mode changed, and seals it anew when it still matches", async () => {
    const file = await cached(a, body);
    rmSync(cacheLayout(cacheDir).seal(a.checksum));
    expect((await fromCache(a, cacheLayout(cacheDir)))?.verification).toBe(
      "sha256 matches the pin from test fixture, re-checked in the cache",
    );
    expect((await fromCache(a, cacheLayout(cacheDir)))?.verification).toContain("unchanged since");
    execFileSync("chmod", ["0700", file]);
    expect((await fromCache(a, cacheLayout(cacheDir)))?.verification).toContain("re-checked in the cache");
    expect(statSync(file).mode & 0o777).toBe(0o755);
  });

  it("never trusts a seal for a file another user owns, or for a symbolic link: it is hashed again, or taken as absent", async () => {
    const file = await cached(a, body);
    // Another user's file with a seal that matches its stat, as one could write into a cache folder others may write to.
    execFileSync("chown", ["65534", file]);
    await writeSealFile(cacheLayout(cacheDir).seal(a.checksum), await sealOf(file));
    expect((await fromCache(a, cacheLayout(cacheDir)))?.verification).toContain("re-checked in the cache");
    execFileSync("chown", ["0", file]);
    // A link where the blob should be: not a cached file at all.
    execFileSync("mv", [file, `${file}.real`]);
    execFileSync("ln", ["-s", `${file}.real`, file]);
    expect(await fromCache(a, cacheLayout(cacheDir))).toBeNull();
  });

  it("cannot see a write that puts the old modification time back (the limit docs/components.md names)", async () => {
    const file = await cached(a, body);
    const ref = join(cacheDir, "times");
    execFileSync("touch", ["-r", file, ref]); // to the nanosecond, as utimensat(2) sets it
    const other = Buffer.from(body);
    other[7] = (other[7] ?? 0) ^ 0xff;
    writeFileSync(file, other);
    execFileSync("touch", ["-r", ref, file]);
    expect((await fromCache(a, cacheLayout(cacheDir)))?.verification).toContain("unchanged since");
  });
});

describe("installBinaries through the cache's unpacked folders", () => {
  const etcd = randomBody(200_000, 5);
  const etcdctl = randomBody(100_000, 6);
  const archive = tarGz([
    { path: "etcd-v1/", type: "dir" },
    { path: "etcd-v1/etcd", content: etcd, mode: 0o755 },
    { path: "etcd-v1/etcdctl", content: etcdctl, mode: 0o755 },
  ]);
  const tarArt = resolved(
    testArtifact({
      id: "etcd",
      path: "/etcd.tar.gz",
      body: archive,
      format: "tar.gz",
      binaries: [
        { name: "etcd", path: "etcd-v1/etcd" },
        { name: "etcdctl", path: "etcd-v1/etcdctl" },
      ],
    }),
  );
  const kubelet = randomBody(150_000, 8);
  const rawArt = resolved(testArtifact({ id: "kubelet", path: "/kubelet", body: kubelet }));
  const fetched = async (): Promise<FetchedArtifact[]> => [
    { artifact: tarArt, file: await cached(tarArt, archive), size: archive.length, source: "cache", verification: "test" },
    { artifact: rawArt, file: await cached(rawArt, kubelet), size: kubelet.length, source: "cache", verification: "test" },
  ];
  const inode = (p: string) => statSync(p).ino;

  it("unpacks an archive once, links its binaries and a raw binary's blob into the bin folder, and records their sha256", async () => {
    const f = await fetched();
    const bin = join(cacheDir, "data", "versions", "s1", "bin");
    const bins = await installBinaries(f, bin, { cacheDir });
    expect(bins.map((b) => [b.name, b.path, b.sha256])).toEqual([
      ["etcd", join(bin, "etcd"), sha256(etcd)],
      ["etcdctl", join(bin, "etcdctl"), sha256(etcdctl)],
      ["kubelet", join(bin, "kubelet"), sha256(kubelet)],
    ]);
    expect(readFileSync(join(bin, "etcd")).equals(etcd)).toBe(true);
    // The raw binary is its blob, linked: no second copy on the disk.
    expect(inode(join(bin, "kubelet"))).toBe(inode(f[1]!.file));
    expect(statSync(join(bin, "etcd")).mode & 0o777).toBe(0o755);

    // A second set with the same archive: the archive is not read again (it is gone), the files are the same inodes.
    rmSync(f[0]!.file);
    const bin2 = join(cacheDir, "data", "versions", "s2", "bin");
    const again = await installBinaries(f, bin2, { cacheDir });
    expect(again.map((b) => b.sha256)).toEqual(bins.map((b) => b.sha256));
    expect(inode(join(bin2, "etcd"))).toBe(inode(join(bin, "etcd")));

    // `cache list` counts what the unpacked folders add (the raw binary's link adds nothing), and `cache clean` takes them too.
    const unpacked = (await listCache(cacheDir)).filter((e) => e.unpacked);
    expect(unpacked.map((e) => e.value).sort()).toEqual([tarArt.checksum.value, rawArt.checksum.value].sort());
    const sizeOf = (v: string) => unpacked.find((e) => e.value === v)!.size;
    expect(sizeOf(tarArt.checksum.value)).toBeGreaterThanOrEqual(etcd.length + etcdctl.length);
    expect(sizeOf(tarArt.checksum.value)).toBeLessThan(etcd.length + etcdctl.length + 4096);
    expect(sizeOf(rawArt.checksum.value)).toBeLessThan(4096);
    await cleanCache(cacheDir);
    expect(readdirSync(cacheDir).sort()).toEqual(["data"]);
    expect(readFileSync(join(bin2, "kubelet")).equals(kubelet)).toBe(true); // the node's links outlive the cache
  });

  it("unpacks anew when a file in the unpacked folder was changed, and installs the archive's own bytes", async () => {
    const f = await fetched();
    // What a run killed while unpacking leaves: swept by the next one, which holds the cache lock.
    const killed = join(cacheLayout(cacheDir).unpacked(tarArt.checksum), ".0123456789abcdef.new-Xy12Ab");
    execFileSync("mkdir", ["-p", killed]);
    writeFileSync(join(killed, "etcd"), "half");
    const bin = join(cacheDir, "data", "versions", "s1", "bin");
    await installBinaries(f, bin, { cacheDir });
    // Written through the link the node runs: the cache's copy is the same file, and its seal no longer matches.
    writeFileSync(join(bin, "etcd"), "tampered");
    const bin2 = join(cacheDir, "data", "versions", "s2", "bin");
    const again = await installBinaries(f, bin2, { cacheDir });
    expect(readFileSync(join(bin2, "etcd")).equals(etcd)).toBe(true);
    expect(again.find((b) => b.name === "etcd")?.sha256).toBe(sha256(etcd));
    expect(inode(join(bin2, "etcd"))).not.toBe(inode(join(bin, "etcd")));
    expect(existsSync(killed)).toBe(false);
    expect(existsSync(join(cacheDir, "lock"))).toBe(false); // released
  });

  it("copies where the bin folder is on another file system, and a full one names the bin folder, not the cache", async () => {
    const f = await fetched();
    // A file system of its own for the data (the tests run as root, as CI does): no hard link can cross it.
    const other = join(cacheDir, "other");
    execFileSync("mkdir", ["-p", other]);
    // Room for one set (450 KB), not for two.
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=700k", "tmpfs", other]);
    try {
      const bin = join(other, "versions", "s1", "bin");
      const bins = await installBinaries(f, bin, { cacheDir });
      expect(bins.map((b) => b.sha256)).toEqual([sha256(etcd), sha256(etcdctl), sha256(kubelet)]);
      expect(readFileSync(join(bin, "kubelet")).equals(kubelet)).toBe(true);
      expect(statSync(join(bin, "kubelet")).mode & 0o777).toBe(0o755);
      expect(statSync(join(bin, "kubelet")).nlink).toBe(1);
      const full = join(other, "versions", "s2", "bin");
      const e = await installBinaries(f, full, { cacheDir }).catch((x: NodeJS.ErrnoException) => x);
      expect(e).toMatchObject({ code: "ENOSPC", path: full });
    } finally {
      execFileSync("umount", [other]);
    }
  });
});
