// Offline bundles: written from verified downloads, then used with no server at all; every file
// is verified again, and a bundle that disagrees with the pins (or was altered) is refused.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { extractBundleImages, readBundleIndex, readBundleManifest, writeBundle } from "../../../cli/fetch/bundle";
import { listCache } from "../../../cli/fetch/cache";
import { installBinaries } from "../../../cli/fetch/extract";
import { fetchArtifacts } from "../../../cli/fetch/fetch";
import { parseManifest } from "../../../cli/fetch/manifest";
import { allArtifactsFor, versionSetId } from "../../../cli/fetch/select";
import type { Manifest, ManifestArtifact } from "../../../cli/fetch/types";
import { userErrorOf } from "../../helpers/errors";
import { startServer, type TestServer } from "../../helpers/http-server";
import { tempDir } from "../../helpers/temp";
import { randomBody, testArtifact } from "./helpers/artifacts";
import { tarGz } from "../../helpers/tar.mjs";
import { dockerSaveArchive } from "../../helpers/image-archives";
import { bundleWithImages } from "../../helpers/bundles";

const FAST = { retries: 0, retryBaseMs: 5 };

function manifestOf(artifacts: ManifestArtifact[]): Manifest {
  return parseManifest({ schema: 1, name: "test set", artifacts }, "test");
}

describe("offline bundles", () => {
  let server: TestServer;
  let work: string;
  let bundle: string;
  const etcdTar = tarGz([
    { path: "etcd-v1.0.0-linux-amd64/etcd", content: readFileSync("/bin/true") },
    { path: "etcd-v1.0.0-linux-amd64/README.md", content: "docs" },
  ]);
  const runc = randomBody(70_000, 31);
  const arts = [
    testArtifact({
      id: "etcd",
      path: "/etcd/v1.0.0/etcd-v1.0.0-linux-amd64.tar.gz",
      body: etcdTar,
      format: "tar.gz",
      binaries: [{ name: "etcd", path: "etcd-v{version}-linux-{arch}/etcd" }],
    }),
    testArtifact({ id: "runc", path: "/runc/v1.0.0/runc.amd64", body: runc, algorithm: "sha512" }),
  ];
  const manifest = manifestOf(arts);

  beforeEach(async () => {
    server = await startServer();
    server.serve("/etcd/v1.0.0/etcd-v1.0.0-linux-amd64.tar.gz", etcdTar);
    server.serve("/runc/v1.0.0/runc.amd64", runc);
    work = tempDir("rk8s-bundle-");
    const fetched = await fetchArtifacts(allArtifactsFor(manifest, "amd64"), {
      cacheDir: join(work, "online-cache"),
      mirror: server.url,
      http: FAST,
      env: {},
    });
    bundle = join(work, "bundle.tar");
    await writeBundle(fetched, manifest, "amd64", bundle);
    await server.close();
  });
  afterEach(async () => {
    await server.close();
  });

  it("is one tar: its manifest first, then each artifact under its id, and nothing else left beside it", () => {
    const names = execFileSync("tar", ["-tf", bundle], { encoding: "utf8" }).trim().split("\n");
    expect(names[0]).toBe("rootless-k8s-bundle.json");
    expect(names).toContain("artifacts/etcd/etcd-v1.0.0-linux-amd64.tar.gz");
    expect(names).toContain("artifacts/runc/runc.amd64");
    expect(readdirSync(work).sort()).toEqual(["bundle.tar", "online-cache"]);
    const index = JSON.parse(execFileSync("tar", ["-xOf", bundle, "rootless-k8s-bundle.json"], { encoding: "utf8" }));
    expect(index.arch).toBe("amd64");
    expect(index.files.map((f: { id: string; size: number }) => [f.id, f.size])).toEqual([
      ["etcd", etcdTar.length],
      ["runc", runc.length],
    ]);
  });

  it("installs with no network at all, verifying every file again", async () => {
    const cacheDir = join(work, "offline-cache");
    const requests = server.requests.length;
    const fetched = await fetchArtifacts(allArtifactsFor(manifest, "amd64"), {
      cacheDir,
      bundle,
      env: { HTTPS_PROXY: "http://127.0.0.1:9" },
    });
    expect(fetched.map((f) => [f.artifact.id, f.source])).toEqual([
      ["etcd", "bundle"],
      ["runc", "bundle"],
    ]);
    expect(fetched[1]?.verification).toContain("sha512 matches the pin from test fixture, re-checked from the bundle");
    expect(readFileSync(fetched[1]!.file).equals(runc)).toBe(true);
    expect(server.requests.length).toBe(requests);
    // Installed as install does, through the cache's unpacked folders: the raw binary, a link to its
    // blob, is 0755 (a blob copied from a bundle into an empty cache was once linked as it was, 0644).
    const bins = await installBinaries(fetched, join(work, "bin"), { cacheDir });
    expect(bins.map((b) => b.name)).toEqual(["etcd", "runc"]);
    expect(execFileSync(join(work, "bin", "etcd")).length).toBe(0);
    expect(statSync(join(work, "bin", "runc")).mode & 0o777).toBe(0o755);
    expect(bins[1]?.sha256).toBe(createHash("sha256").update(runc).digest("hex"));
  });

  it("gives the bundle's own manifest, with sizes, naming the same version set for its arch", async () => {
    const m = await readBundleManifest(bundle);
    expect(versionSetId(m, "amd64")).toBe(versionSetId(manifest, "amd64"));
    expect(m.origin).toBe(`bundle ${bundle}`);
    expect(m.artifacts.map((a) => [a.id, a.checksums.amd64?.size])).toEqual([
      ["etcd", etcdTar.length],
      ["runc", runc.length],
    ]);
  });

  it("refuses a bundle whose checksums differ from the pins, unless --trust-bundle", async () => {
    const newer = randomBody(70_000, 99);
    const pinned = manifestOf([
      arts[0]!,
      testArtifact({ id: "runc", version: "2.0.0", path: "/runc/v2.0.0/runc.amd64", body: newer, algorithm: "sha512" }),
    ]);
    const cacheDir = join(work, "offline-cache");
    const e = await userErrorOf(fetchArtifacts(allArtifactsFor(pinned, "amd64"), { cacheDir, bundle }));
    expect(e.exitCode).toBe(4);
    expect(e.message).toContain("does not match the pinned checksums: runc 2.0.0 for amd64 is sha512");
    expect(e.fix).toContain("--trust-bundle");
    expect((await listCache(cacheDir)).filter((x) => x.partial)).toEqual([]);

    const trusted = await fetchArtifacts(allArtifactsFor(pinned, "amd64"), { cacheDir, bundle, trustBundle: true });
    expect(trusted[1]?.artifact.version).toBe("1.0.0");
    expect(readFileSync(trusted[1]!.file).equals(runc)).toBe(true);
  });

  it("refuses an altered bundle and keeps nothing unverified from it (exit 4)", async () => {
    const data = readFileSync(bundle);
    const at = data.indexOf(runc.subarray(1000, 1032));
    data[at] = (data[at] ?? 0) ^ 0xff;
    const altered = join(work, "altered.tar");
    writeFileSync(altered, data);
    const cacheDir = join(work, "offline-cache");
    const e = await userErrorOf(fetchArtifacts(allArtifactsFor(manifest, "amd64"), { cacheDir, bundle: altered }));
    expect(e.exitCode).toBe(4);
    expect(e.message).toMatch(/runc 1\.0\.0 for amd64 does not match its checksum: expected sha512 [0-9a-f]{128}, got [0-9a-f]{128}/);
    // Only the intact file, verified, is in the cache: no partial file, nothing for runc.
    expect((await listCache(cacheDir)).map((x) => [x.value, x.partial])).toEqual([[arts[0]!.checksums.amd64!.value, false]]);
  });

  it("refuses a bundle made for another arch (exit 3)", async () => {
    const arm = manifestOf(arts.map((a) => ({ ...a, arch: { arm64: "arm64" }, checksums: { arm64: a.checksums.amd64! } })));
    const e = await userErrorOf(fetchArtifacts(allArtifactsFor(arm, "arm64"), { cacheDir: join(work, "c"), bundle }));
    expect(e.exitCode).toBe(3);
    expect(e.message).toBe(`bundle ${bundle} is for amd64, but arm64 is needed`);
  });

  it("refuses a tar that is not a bundle, and a missing file", async () => {
    const other = join(work, "other.tar.gz");
    writeFileSync(other, tarGz([{ path: "hello.txt", content: "hi" }]));
    const e = await userErrorOf(fetchArtifacts(allArtifactsFor(manifest, "amd64"), { cacheDir: join(work, "c"), bundle: other }));
    expect(e.message).toBe(`${other} is not a usable rootless-k8s bundle: its first entry is "hello.txt", not rootless-k8s-bundle.json`);
    const missing = await userErrorOf(
      fetchArtifacts(allArtifactsFor(manifest, "amd64"), { cacheDir: join(work, "c"), bundle: join(work, "nope.tar") }),
    );
    expect(missing.exitCode).toBe(2);
  });
});

describe("offline bundles that carry image archives (bundle --image)", () => {
  const arts = [testArtifact({ id: "etcd", path: "/etcd/etcd.bin", body: randomBody(20_000, 7) })];
  const busybox = dockerSaveArchive([{ repoTags: ["busybox:1.36.1"], seed: "bb" }]).tar;
  const app = dockerSaveArchive([{ repoTags: ["example.org/team/app:v2"], seed: "app" }]).tar;

  const make = async (work: string) =>
    bundleWithImages(work, [
      ["busybox.tar", busybox],
      ["app.tar", app],
    ]);

  it("carries each archive byte for byte, with its sha256 and names in the index, and gives them back verified", async () => {
    const work = tempDir("rk8s-bundle-img-");
    const { bundle, manifest } = await make(work);
    const names = execFileSync("tar", ["-tf", bundle], { encoding: "utf8" }).trim().split("\n");
    expect(names).toContain("images/1-busybox.tar");
    expect(names).toContain("images/2-app.tar");
    const index = await readBundleIndex(bundle);
    expect(index.images?.map((i) => [i.path, i.size, i.names])).toEqual([
      ["images/1-busybox.tar", busybox.length, ["docker.io/library/busybox:1.36.1"]],
      ["images/2-app.tar", app.length, ["example.org/team/app:v2"]],
    ]);
    const out = tempDir("rk8s-bundle-out-");
    const files = await extractBundleImages(bundle, out);
    expect(files).toEqual([join(out, "1-busybox.tar"), join(out, "2-app.tar")]);
    expect(readFileSync(files[0]!).equals(busybox)).toBe(true);
    expect(readFileSync(files[1]!).equals(app)).toBe(true);
    expect(statSync(files[0]!).mode & 0o777).toBe(0o600);
    // the components of the same bundle still install as before
    const fetched = await fetchArtifacts(allArtifactsFor(manifest, "amd64"), { cacheDir: join(work, "offline"), bundle });
    expect(fetched.map((f) => f.source)).toEqual(["bundle"]);
  });

  it("a bundle without images gives none back", async () => {
    const { bundle } = await bundleWithImages(tempDir("rk8s-bundle-img-"), []);
    expect((await readBundleIndex(bundle)).images).toBeUndefined();
    expect(await extractBundleImages(bundle, tempDir())).toEqual([]);
  });

  it("refuses an altered image archive (exit 4) and leaves nothing of it behind", async () => {
    const work = tempDir("rk8s-bundle-img-");
    const { bundle } = await make(work);
    const data = readFileSync(bundle);
    const at = data.indexOf(app) + 600; // the archive is stored whole in the bundle's tar
    expect(at).toBeGreaterThan(600);
    data[at] = (data[at] ?? 0) ^ 0xff;
    const altered = join(work, "altered.tar");
    writeFileSync(altered, data);
    const out = tempDir("rk8s-bundle-out-");
    const e = await userErrorOf(extractBundleImages(altered, out));
    expect(e.exitCode).toBe(4);
    expect(e.message).toMatch(/the image archive images\/2-app\.tar does not match its checksum/);
    expect(readdirSync(out)).toEqual(["1-busybox.tar"]);
  });

  /** `bundle` again, its index changed by `edit` (issue 34): the same entries, in the same order. */
  const rewritten = (work: string, bundle: string, edit: (index: Record<string, unknown> & { images: { size: unknown }[] }) => void) => {
    const stage = tempDir();
    execFileSync("tar", ["-xf", bundle, "-C", stage]);
    const file = join(stage, "rootless-k8s-bundle.json");
    const index = JSON.parse(readFileSync(file, "utf8"));
    edit(index);
    writeFileSync(file, JSON.stringify(index));
    const out = join(work, "edited.tar");
    execFileSync("tar", ["-cf", out, "-C", stage, "rootless-k8s-bundle.json", "artifacts", "images"]);
    return out;
  };

  it("refuses an image archive larger than the size its index declares, before writing it (exit 4, issue 34)", async () => {
    const work = tempDir("rk8s-bundle-img-");
    const { bundle } = await make(work);
    const edited = rewritten(work, bundle, (index) => {
      index.images[1]!.size = 100;
    });
    const out = tempDir("rk8s-bundle-out-");
    const e = await userErrorOf(extractBundleImages(edited, out));
    expect(e.exitCode).toBe(4);
    expect(e.message).toMatch(/the entry images\/2-app\.tar is larger than the 100 bytes its index declares$/);
    expect(readdirSync(out)).toEqual(["1-busybox.tar"]);
  });

  it("refuses an image archive shorter than the size its index declares, leaving nothing of it (exit 4)", async () => {
    const work = tempDir("rk8s-bundle-img-");
    const { bundle } = await make(work);
    const edited = rewritten(work, bundle, (index) => {
      index.images[1]!.size = app.length + 1;
    });
    const out = tempDir("rk8s-bundle-out-");
    const e = await userErrorOf(extractBundleImages(edited, out));
    expect(e.exitCode).toBe(4);
    expect(e.message).toContain(`the entry images/2-app.tar holds ${app.length} bytes, not the ${app.length + 1} bytes its index declares`);
    expect(readdirSync(out)).toEqual(["1-busybox.tar"]);
  });

  it("refuses an index whose image size is missing or not a whole number of bytes (exit 4, issue 34)", async () => {
    const work = tempDir("rk8s-bundle-img-");
    const { bundle } = await make(work);
    for (const size of [undefined, -1, 1.5, "7", 2 ** 60]) {
      const edited = rewritten(work, bundle, (index) => {
        index.images[0]!.size = size;
      });
      const e = await userErrorOf(extractBundleImages(edited, tempDir()));
      expect(e.exitCode).toBe(4);
      expect(e.message).toMatch(/its image list gives images\/1-busybox\.tar (no size|the size .*, not a byte count)/);
    }
  });

  it("refuses an index whose image entry points outside images/ (exit 4)", async () => {
    const work = tempDir("rk8s-bundle-img-");
    const index = { schema: 1, kind: "rootless-k8s-bundle", arch: "amd64", manifest: { schema: 1, name: "x", artifacts: arts }, files: [] };
    for (const bad of [
      { path: "../../.bashrc", sha256: "a".repeat(64), size: 1, names: [] },
      { path: "images/x", sha256: "nope", size: 1, names: [] },
    ]) {
      const stage = tempDir();
      writeFileSync(join(stage, "rootless-k8s-bundle.json"), JSON.stringify({ ...index, images: [bad] }));
      const f = join(work, "evil.tar");
      execFileSync("tar", ["-cf", f, "-C", stage, "rootless-k8s-bundle.json"]);
      const e = await userErrorOf(extractBundleImages(f, tempDir()));
      expect(e.exitCode).toBe(4);
      expect(e.message).toContain("its image list has a malformed entry");
    }
  });
});
