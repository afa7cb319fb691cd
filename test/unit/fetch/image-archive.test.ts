// Image archives read and validated before anything is loaded: real `docker save` and OCI layout
// tars built in the test, good ones and broken ones.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { UserError } from "../../../cli/errors";
import { readImageArchive } from "../../../cli/fetch/image-archive";
import { normalizeImageRef } from "../../../cli/fetch/image-ref";
import { type BuiltImage, dockerSaveArchive, ociArchive, ociImage, ociIndex, sha256 } from "../../helpers/image-archives";
import { tarBuffer } from "../../helpers/tar.mjs";
import { tempDir } from "../../helpers/temp";

const dir = tempDir("rk8s-images-");
let n = 0;
const file = (body: Buffer) => {
  const f = join(dir, `archive-${n++}.tar`);
  writeFileSync(f, body);
  return f;
};
const read = (body: Buffer, arch = "amd64") => readImageArchive(file(body), { arch });
/** An ociImage's config and layer members, as the archive names them (blobs: [layer, config, manifest]). */
const blobsOf = (img: BuiltImage) => ({ config: img.blobs[1]!.path, layers: [img.blobs[0]!.path] });

async function refusal(body: Buffer, arch = "amd64"): Promise<UserError> {
  const e = await read(body, arch).then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(UserError);
  const u = e as UserError;
  expect(u.exitCode).toBe(2);
  expect(u.message).not.toContain("\n");
  expect(u.fix).toBeTruthy();
  return u;
}

describe("image references", () => {
  it("normalizes as the runtimes do (ParseDockerRef)", () => {
    expect(normalizeImageRef("busybox")).toBe("docker.io/library/busybox:latest");
    expect(normalizeImageRef("busybox:1.36")).toBe("docker.io/library/busybox:1.36");
    expect(normalizeImageRef("user/app:v1")).toBe("docker.io/user/app:v1");
    expect(normalizeImageRef("index.docker.io/library/busybox:1")).toBe("docker.io/library/busybox:1");
    expect(normalizeImageRef("registry.k8s.io/pause:3.10")).toBe("registry.k8s.io/pause:3.10");
    expect(normalizeImageRef("localhost:5000/x/y")).toBe("localhost:5000/x/y:latest");
    const digest = `sha256:${"a".repeat(64)}`;
    expect(normalizeImageRef(`busybox:1@${digest}`)).toBe(`docker.io/library/busybox@${digest}`);
    for (const bad of ["", "Busybox", "a//b", "busybox:", "busybox:-x", "x@sha256:12", "UPPER.example/ok:1/x"])
      expect(normalizeImageRef(bad), bad).toBeNull();
  });
});

describe("docker save archives", () => {
  it("reads the names (normalized) and the image IDs, and no registry digest (the classic layout has no manifest)", async () => {
    const { tar, ids } = dockerSaveArchive([
      { repoTags: ["busybox:1.36.1", "example.com/team/tool:2"] },
      { repoTags: ["registry.k8s.io/pause:3.10"], seed: "pause" },
    ]);
    const a = await read(tar);
    expect(a.format).toBe("docker-save");
    expect(a.images).toEqual([
      { name: "docker.io/library/busybox:1.36.1", id: ids[0], platform: "linux/amd64", digest: null, blobs: null },
      { name: "example.com/team/tool:2", id: ids[0], platform: "linux/amd64", digest: null, blobs: null },
      { name: "registry.k8s.io/pause:3.10", id: ids[1], platform: "linux/amd64", digest: null, blobs: null },
    ]);
    expect(a.dockerManifest).toBe(true);
    expect(a.sha256).toBeNull();
  });

  it("hashes the whole file when asked (for bundles), and reads gzip", async () => {
    const { tar } = dockerSaveArchive([{ repoTags: ["busybox:1"] }]);
    const gz = gzipSync(tar);
    const a = await readImageArchive(file(gz), { arch: "amd64", hash: true });
    expect(a.sha256).toBe(sha256(gz));
    expect(a.size).toBe(gz.length);
    expect(a.images.map((i) => i.name)).toEqual(["docker.io/library/busybox:1"]);
  });

  it("refuses an image saved without a name", async () => {
    const e = await refusal(dockerSaveArchive([{ repoTags: [] }]).tar);
    expect(e.message).toMatch(/has no name \(no RepoTags/);
    expect(e.fix).toMatch(/docker save NAME:TAG/);
  });

  it("refuses an image of another architecture, naming the platform", async () => {
    const e = await refusal(dockerSaveArchive([{ repoTags: ["busybox:1"], arch: "arm64" }]).tar);
    expect(e.message).toMatch(/docker.io\/library\/busybox:1 is an image for linux\/arm64, but the node runs linux\/amd64/);
  });
});

describe("OCI image layouts", () => {
  it("takes io.containerd.image.name over a tag-only ref.name, the config digest as ID, the manifest's as digest", async () => {
    const img = ociImage();
    const a = await read(
      ociArchive([
        {
          image: img,
          annotations: { "io.containerd.image.name": "docker.io/library/busybox:1.36.1", "org.opencontainers.image.ref.name": "1.36.1" },
        },
      ]),
    );
    expect(a.format).toBe("oci-layout");
    expect(a.dockerManifest).toBe(false);
    expect(a.images).toEqual([
      { name: "docker.io/library/busybox:1.36.1", id: img.id, platform: "linux/amd64", digest: img.manifest.digest, blobs: blobsOf(img) },
    ]);
  });

  it("takes a full org.opencontainers.image.ref.name", async () => {
    const img = ociImage();
    const a = await read(ociArchive([{ image: img, annotations: { "org.opencontainers.image.ref.name": "registry.k8s.io/pause:3.10" } }]));
    expect(a.images.map((i) => i.name)).toEqual(["registry.k8s.io/pause:3.10"]);
  });

  it("follows a multi-platform index to the node's architecture; the digest is the index's, as a registry names it", async () => {
    const amd = ociImage("amd64");
    const arm = ociImage("arm64");
    const index = ociIndex([
      { image: amd, arch: "amd64" },
      { image: arm, arch: "arm64" },
    ]);
    const body = ociArchive([{ image: index, annotations: { "io.containerd.image.name": "example.com/app:1" } }]);
    const digest = index.manifest.digest;
    expect(digest).not.toBe(amd.manifest.digest);
    expect((await read(body, "amd64")).images).toEqual([
      { name: "example.com/app:1", id: amd.id, platform: "linux/amd64", digest, blobs: blobsOf(amd) },
    ]);
    expect((await read(body, "arm64")).images).toEqual([
      { name: "example.com/app:1", id: arm.id, platform: "linux/arm64", digest, blobs: blobsOf(arm) },
    ]);
    const only = ociArchive([
      { image: ociIndex([{ image: arm, arch: "arm64" }]), annotations: { "io.containerd.image.name": "example.com/app:1" } },
    ]);
    const e = await refusal(only, "amd64");
    expect(e.message).toMatch(/example.com\/app:1 has no image for linux\/amd64 \(the archive has: linux\/arm64\)/);
  });

  it("refuses images without a name, with only a tag, or with a name the kubelet would not find", async () => {
    const img = ociImage();
    let e = await refusal(ociArchive([{ image: img }]));
    expect(e.message).toMatch(
      /the image sha256:[0-9a-f]{12} has no name \(no io.containerd.image.name or org.opencontainers.image.ref.name annotation\)/,
    );
    e = await refusal(ociArchive([{ image: img, annotations: { "org.opencontainers.image.ref.name": "latest" } }]));
    expect(e.message).toMatch(/named only "latest", a tag without a repository/);
    e = await refusal(ociArchive([{ image: img, annotations: { "io.containerd.image.name": "busybox:1.36" } }]));
    expect(e.message).toMatch(/pods asking for it look up "docker.io\/library\/busybox:1.36"/);
    expect(e.fix).toBe('name it "docker.io/library/busybox:1.36" in the archive');
  });

  it("refuses a missing layer and a blob that does not match its digest", async () => {
    const img = ociImage();
    const named = { "io.containerd.image.name": "example.com/app:1" };
    const noLayer = { ...img, blobs: img.blobs.slice(1) };
    expect((await refusal(ociArchive([{ image: noLayer, annotations: named }]))).message).toMatch(
      /layer 1 blobs\/sha256\/[0-9a-f]{64} is missing \(the archive is incomplete\)/,
    );
    const [layer, config, manifest] = img.blobs;
    const tampered = {
      ...img,
      blobs: [layer!, { ...config!, content: Buffer.from(String(config!.content).replace("linux", "Linux")) }, manifest!],
    };
    expect((await refusal(ociArchive([{ image: tampered, annotations: named }]))).message).toMatch(
      /the config blobs\/sha256\/[0-9a-f]{64} does not match its digest/,
    );
  });
});

describe("files that are not image archives", () => {
  it("refuses a corrupt tar, a truncated one, random bytes and a missing file", async () => {
    const { tar } = dockerSaveArchive([{ repoTags: ["busybox:1"] }]);
    const corrupt = Buffer.from(tar);
    corrupt.write("garbage!", 148, "ascii"); // the header checksum of the first entry
    expect((await refusal(corrupt)).message).toMatch(/not a readable tar archive/);
    // Cut inside the first layer: node-tar ends quietly, and what is missing is refused.
    expect((await refusal(tar.subarray(0, 700))).message).toMatch(/not a readable tar archive|not an image archive/);
    expect((await refusal(Buffer.from("just some text, not a tar\n".repeat(40)))).message).toMatch(
      /not a readable tar archive|not an image archive/,
    );
    const missing = await readImageArchive(join(dir, "nope.tar"), { arch: "amd64" }).catch((x: UserError) => x);
    expect(missing).toMatchObject({ exitCode: 2, message: `${join(dir, "nope.tar")}: no such file` });
  });

  it("refuses a tar with neither layout, and an empty one", async () => {
    expect((await refusal(tarBuffer([{ path: "hello.txt", content: "hi" }]))).message).toMatch(
      /not an image archive: a tar without manifest.json \(docker save\) or oci-layout and index.json/,
    );
    expect((await refusal(tarBuffer([]))).message).toMatch(/not an image archive: an empty archive/);
  });
});
