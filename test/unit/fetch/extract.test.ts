// installBinaries on real archives: only the named members are written, as 0755 files owned by
// the caller, into a temporary folder renamed into place. Hostile archives (path traversal,
// absolute paths, escaping links, devices) are refused whole and leave nothing behind.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { fileSystemError } from "../../../cli/errors";
import { installBinaries } from "../../../cli/fetch/extract";
import type { FetchedArtifact, ManifestArtifact } from "../../../cli/fetch/types";
import { userErrorOf } from "../../helpers/errors";
import { sha256 } from "../../helpers/hash";
import { tempDir } from "../../helpers/temp";
import { randomBody, resolved, testArtifact } from "./helpers/artifacts";
import { tarBuffer, tarGz, type TarEntry } from "../../helpers/tar.mjs";

let work: string;
beforeEach(() => {
  work = tempDir("rk8s-extract-");
});

/** A fetched artifact backed by a real archive file (as if it came out of the cache). */
function fetchedArchive(entries: TarEntry[], binaries: ManifestArtifact["binaries"], gzip = true, id = "etcd"): FetchedArtifact {
  const data = gzip ? tarGz(entries) : tarBuffer(entries);
  const file = join(work, `${id}-${sha256(data).slice(0, 8)}.tar.gz`);
  writeFileSync(file, data);
  const a = resolved(testArtifact({ id, path: `/${id}.tar.gz`, body: data, format: gzip ? "tar.gz" : "tar", binaries }));
  return { artifact: a, file, size: data.length, source: "cache", verification: "test" };
}

/** Everything under work/ except the archives themselves: what an extraction left behind. */
const leftovers = (dir: string) => readdirSync(dir).filter((n) => !n.endsWith(".tar.gz"));

describe("installBinaries", () => {
  it("installs a real executable from an upstream-shaped .tar.gz, and it runs", async () => {
    const trueBin = readFileSync("/bin/true");
    const f = fetchedArchive(
      [
        { path: "etcd-v3.6.14-linux-amd64/", type: "dir" },
        { path: "etcd-v3.6.14-linux-amd64/etcd", content: trueBin, mode: 0o755 },
        { path: "etcd-v3.6.14-linux-amd64/etcdctl", content: trueBin, mode: 0o755 },
        { path: "etcd-v3.6.14-linux-amd64/README.md", content: "docs", mode: 0o644 },
        { path: "etcd-v3.6.14-linux-amd64/Documentation/dev.md", content: "more docs", mode: 0o644 },
      ],
      [
        { name: "etcd", path: "etcd-v3.6.14-linux-amd64/etcd" },
        { name: "etcdctl", path: "etcd-v3.6.14-linux-amd64/etcdctl" },
      ],
    );
    const dest = join(work, "versions", "set1", "bin");
    const bins = await installBinaries([f], dest);
    expect(readdirSync(dest).sort()).toEqual(["etcd", "etcdctl"]);
    expect(bins.map((b) => [b.name, b.path, b.sha256])).toEqual([
      ["etcd", join(dest, "etcd"), sha256(trueBin)],
      ["etcdctl", join(dest, "etcdctl"), sha256(trueBin)],
    ]);
    expect(execFileSync(join(dest, "etcd")).length).toBe(0); // ran and exited 0
    expect(readdirSync(join(work, "versions", "set1"))).toEqual(["bin"]); // no temporary folder left
  });

  it("on a full disk fails with ENOSPC naming the folder it was filling, and leaves nothing behind (#35)", async () => {
    // A 64 KiB file system of its own (the tests run as root, as CI does): a 1 MiB binary cannot fit.
    const small = join(work, "small");
    mkdirSync(small);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", small]);
    try {
      const big = randomBody(1024 * 1024);
      const f = fetchedArchive([{ path: "etcd", content: big, mode: 0o755 }], [{ name: "etcd", path: "etcd" }]);
      const dest = join(small, "versions", "set1", "bin");
      const e = await installBinaries([f], dest).catch((x: NodeJS.ErrnoException) => x);
      expect(e).toMatchObject({ code: "ENOSPC", path: dest });
      expect(fileSystemError(e)?.message).toBe(`no space left on the device of ${dest} (disk full)`);
      expect(readdirSync(join(small, "versions"))).toEqual([]); // the temporary folder went with it, and the set's folder made for it
    } finally {
      execFileSync("umount", [small]);
    }
  });

  it("takes CNI plugins from ./-prefixed members into the cni/ sub-folder, and raw binaries as they are", async () => {
    const cni = fetchedArchive(
      [
        { path: "./", type: "dir" },
        { path: "./bridge", content: "bridge" },
        { path: "./loopback", content: "loopback" },
        { path: "./LICENSE", content: "license" },
      ],
      [
        { name: "bridge", path: "./bridge", dir: "cni" },
        { name: "loopback", path: "loopback", dir: "cni" },
      ],
      false,
      "cni-plugins",
    );
    const runcBody = randomBody(5000, 4);
    const runcFile = join(work, "runc.amd64");
    writeFileSync(runcFile, runcBody, { mode: 0o600 });
    const runc: FetchedArtifact = {
      artifact: resolved(testArtifact({ id: "runc", path: "/runc.amd64", body: runcBody })),
      file: runcFile,
      size: runcBody.length,
      source: "cache",
      verification: "test",
    };
    const dest = join(work, "bin");
    await installBinaries([cni, runc], dest);
    expect(readdirSync(dest).sort()).toEqual(["cni", "runc"]);
    expect(readdirSync(join(dest, "cni")).sort()).toEqual(["bridge", "loopback"]);
    expect(readFileSync(join(dest, "runc")).equals(runcBody)).toBe(true);
    expect(statSync(join(dest, "runc")).mode & 0o7777).toBe(0o755);
    expect(statSync(runcFile).mode & 0o777).toBe(0o600); // the cache copy is untouched
  });

  it("drops setuid and setgid bits and never keeps the archive's owner", async () => {
    const f = fetchedArchive(
      [{ path: "bin/containerd", content: "x", mode: 0o6755, uid: 1234, gid: 4321 }],
      [{ name: "containerd", path: "bin/containerd" }],
    );
    const dest = join(work, "bin");
    await installBinaries([f], dest);
    const st = statSync(join(dest, "containerd"));
    expect(st.mode & 0o7777).toBe(0o755);
    expect(st.uid).toBe(process.getuid?.());
    expect(st.gid).toBe(process.getgid?.());
  });

  it("replaces an existing bin folder as a whole", async () => {
    const dest = join(work, "bin");
    mkdirSync(dest);
    writeFileSync(join(dest, "stale"), "old");
    await installBinaries([fetchedArchive([{ path: "crictl", content: "new" }], [{ name: "crictl", path: "crictl" }])], dest);
    expect(readdirSync(dest)).toEqual(["crictl"]);
    expect(leftovers(work)).toEqual(["bin"]);
  });

  const hostile: [string, TarEntry[], RegExp][] = [
    ["a path with ..", [{ path: "bin/../../../etc/evil", content: "x" }], /"bin\/\.\.\/\.\.\/\.\.\/etc\/evil" contains "\.\."/],
    ["an absolute path", [{ path: "/etc/evil", content: "x" }], /"\/etc\/evil" is an absolute path/],
    [
      "a symlink to an absolute path",
      [{ path: "bin/link", type: "symlink", linkpath: "/etc/passwd" }],
      /symlink "bin\/link" points to the absolute path/,
    ],
    [
      "a symlink that escapes",
      [{ path: "bin/link", type: "symlink", linkpath: "../../outside" }],
      /symlink "bin\/link" points outside the archive/,
    ],
    [
      "a hard link that escapes",
      [{ path: "bin/hl", type: "hardlink", linkpath: "../x" }],
      /hard link "bin\/hl" points outside the archive/,
    ],
    ["a character device", [{ path: "dev/null", type: "char" }], /"dev\/null" is a device file/],
    ["a fifo", [{ path: "pipe", type: "fifo" }], /"pipe" is a fifo/],
  ];
  for (const [what, bad, message] of hostile) {
    it(`refuses an archive with ${what}, and leaves nothing behind (exit 4)`, async () => {
      const f = fetchedArchive(
        [{ path: "bin/containerd", content: "good" }, ...bad, { path: "bin/ctr", content: "good" }],
        [
          { name: "containerd", path: "bin/containerd" },
          { name: "ctr", path: "bin/ctr" },
        ],
      );
      const dest = join(work, "bin");
      const e = await userErrorOf(installBinaries([f], dest));
      expect(e.exitCode).toBe(4);
      expect(e.message).toMatch(message);
      expect(e.message).toContain("refused etcd.tar.gz (etcd 1.0.0 for amd64)");
      expect(existsSync(dest)).toBe(false);
      expect(leftovers(work)).toEqual([]);
      expect(existsSync("/etc/evil")).toBe(false);
    });
  }

  it("refuses a named member that is a symlink rather than a file", async () => {
    const f = fetchedArchive(
      [
        { path: "bin/real", content: "x" },
        { path: "bin/containerd", type: "symlink", linkpath: "real" },
      ],
      [{ name: "containerd", path: "bin/containerd" }],
    );
    const e = await userErrorOf(installBinaries([f], join(work, "bin")));
    expect(e.message).toContain('the member "bin/containerd" (containerd) is a SymbolicLink, not a regular file');
    expect(leftovers(work)).toEqual([]);
  });

  it("says which member is missing when the layout does not match the manifest", async () => {
    const f = fetchedArchive(
      [{ path: "bin/containerd", content: "x" }],
      [
        { name: "containerd", path: "bin/containerd" },
        { name: "ctr", path: "bin/ctr" },
      ],
    );
    const e = await userErrorOf(installBinaries([f], join(work, "bin")));
    expect(e.exitCode).toBe(4);
    expect(e.message).toBe('etcd.tar.gz (etcd 1.0.0 for amd64) has no member "bin/ctr"');
    expect(leftovers(work)).toEqual([]);
  });

  it("refuses a file that is not a tar archive", async () => {
    const file = join(work, "junk.tar.gz");
    writeFileSync(file, randomBody(4096, 9));
    const a = resolved(
      testArtifact({ id: "junk", path: "/junk.tar.gz", body: readFileSync(file), format: "tar.gz", binaries: [{ name: "x", path: "x" }] }),
    );
    const e = await userErrorOf(
      installBinaries([{ artifact: a, file, size: 4096, source: "cache", verification: "test" }], join(work, "bin")),
    );
    expect(e.exitCode).toBe(4);
    expect(e.message).toMatch(/^refused junk\.tar\.gz \(junk 1\.0\.0 for amd64\): is not a readable tar archive/);
    expect(leftovers(work)).toEqual([]);
  });

  it("leaves nothing behind when aborted (exit 130)", async () => {
    const big = randomBody(8_000_000, 12);
    const f = fetchedArchive(
      [{ path: "kubernetes/server/bin/kubelet", content: big }],
      [{ name: "kubelet", path: "kubernetes/server/bin/kubelet" }],
    );
    const ac = new AbortController();
    ac.abort();
    const e = await userErrorOf(installBinaries([f], join(work, "bin"), { signal: ac.signal }));
    expect(e.exitCode).toBe(130);
    expect(leftovers(work)).toEqual([]);
  });

  it("extracts a binary from a real GNU tar archive (long names, pax headers)", async () => {
    const src = join(work, "src");
    const long = "kubernetes/server/bin/" + "deep/".repeat(25);
    mkdirSync(join(src, long), { recursive: true });
    copyFileSync("/bin/true", join(src, long, "kube-apiserver"));
    const file = join(work, "kubernetes-server-linux-amd64.tar.gz");
    execFileSync("tar", ["-czf", file, "-C", src, "kubernetes"]);
    const data = readFileSync(file);
    const a = resolved(
      testArtifact({
        id: "kubernetes-server",
        path: "/kubernetes-server-linux-amd64.tar.gz",
        body: data,
        format: "tar.gz",
        binaries: [{ name: "kube-apiserver", path: `${long}kube-apiserver` }],
      }),
    );
    const dest = join(work, "out");
    await installBinaries([{ artifact: a, file, size: data.length, source: "cache", verification: "test" }], dest);
    expect(execFileSync(join(dest, "kube-apiserver")).length).toBe(0);
  });
});
