// What `docker load` is fed for an OCI layout (Docker before 25 reads only manifest.json): the
// stream is read back as a tar, and its manifest.json must name members that hold the image's
// config and layers, byte for byte, with the image's name; the archive's own members follow
// unchanged. The real `docker load` of such a stream (Debian 12's Docker 20.10) runs in the e2e's
// docker node (test/e2e/scenarios/install.sh, scenario docker).
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { buffer } from "node:stream/consumers";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { dockerLoadStream, tarEntry } from "../../../cli/fetch/docker-load";
import { readImageArchive } from "../../../cli/fetch/image-archive";
import { isRegularFile, walkTar } from "../../../cli/fetch/tar";
import { dockerSaveArchive, ociArchive, ociImage, ociIndex } from "../../helpers/image-archives";
import { tempDir } from "../../helpers/temp";

const dir = tempDir("rk8s-docker-load-");
let n = 0;
const file = (body: Buffer, ext = "tar") => {
  const f = join(dir, `archive-${n++}.${ext}`);
  writeFileSync(f, body);
  return f;
};
const sha = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/** Every regular member of a tar file, by path. */
async function members(f: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  await walkTar(f, async (entry, path) => {
    if (!isRegularFile(entry)) return void entry.resume();
    const chunks: Buffer[] = [];
    for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c);
    out.set(path, Buffer.concat(chunks));
  });
  return out;
}

describe("dockerLoadStream", () => {
  const amd = ociImage("amd64", "app");
  const arm = ociImage("arm64", "app");
  const pause = ociImage("amd64", "pause");
  const body = ociArchive([
    {
      image: ociIndex([
        { image: amd, arch: "amd64" },
        { image: arm, arch: "arm64" },
      ]),
      annotations: { "io.containerd.image.name": "example.com/app:1" },
    },
    { image: pause, annotations: { "io.containerd.image.name": "registry.k8s.io/pause:3.10.1" } },
    { image: pause, annotations: { "io.containerd.image.name": "registry.k8s.io/pause:3.10" } },
  ]);

  for (const gz of [false, true]) {
    it(`puts a docker save manifest.json for the node's platform in front of an OCI layout${gz ? " (gzip, unpacked)" : ""}`, async () => {
      const a = await readImageArchive(file(gz ? gzipSync(body) : body, gz ? "tar.gz" : "tar"), { arch: "amd64" });
      expect(a.dockerManifest).toBe(false);
      const stream = await dockerLoadStream(a);
      expect(stream).not.toBeNull();
      const out = file(await buffer(stream!));
      const m = await members(out);
      const manifest = JSON.parse(m.get("manifest.json")!.toString("utf8")) as { Config: string; RepoTags: string[]; Layers: string[] }[];
      expect(manifest.map((e) => e.RepoTags)).toEqual([
        ["example.com/app:1"],
        ["registry.k8s.io/pause:3.10.1"],
        ["registry.k8s.io/pause:3.10"],
      ]);
      // Each entry's config is the image's (its digest is the image ID docker will give it), and
      // its layers are the config's diff_ids, in order: what docker load checks.
      for (const [entry, id] of manifest.map((e, i) => [e, [amd.id, pause.id, pause.id][i]] as const)) {
        const config = m.get(entry.Config)!;
        expect(sha(config)).toBe(id);
        const diffIds = (JSON.parse(config.toString("utf8")) as { rootfs: { diff_ids: string[] } }).rootfs.diff_ids;
        expect(entry.Layers.map((l) => sha(m.get(l)!))).toEqual(diffIds);
      }
      // The archive's own members follow, unchanged; read again, it is one archive with both layouts.
      const original = await members(file(body));
      for (const [p, b] of original) expect(m.get(p)?.equals(b), p).toBe(true);
      expect([...m.keys()].sort()).toEqual([...original.keys(), "manifest.json"].sort());
      const again = await readImageArchive(out, { arch: "amd64" });
      expect(again.dockerManifest).toBe(true);
      expect(again.images.map((i) => [i.name, i.id])).toEqual(a.images.map((i) => [i.name, i.id]));
    });
  }

  it("leaves an archive that has a manifest.json as it is (docker load --input FILE)", async () => {
    const a = await readImageArchive(file(dockerSaveArchive([{ repoTags: ["busybox:1"] }]).tar), { arch: "amd64" });
    expect(await dockerLoadStream(a)).toBeNull();
  });

  it("writes a tar entry padded to whole blocks, with a checksum tar accepts", async () => {
    const e = tarEntry("manifest.json", Buffer.from("[]"));
    expect(e.length).toBe(1024);
    const m = await members(file(Buffer.concat([e, Buffer.alloc(1024)])));
    expect(m.get("manifest.json")?.toString()).toBe("[]");
  });
});
