// An offline bundle as `rootless-k8s bundle --image FILE...` writes it: one small verified
// component (served from loopback and fetched) and the given image archives, each written to
// `work`, checked and hashed as the bundle command does.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BundledImageInput, writeBundle } from "../../cli/fetch/bundle";
import { fetchArtifacts } from "../../cli/fetch/fetch";
import { readImageArchive } from "../../cli/fetch/image-archive";
import { parseManifest } from "../../cli/fetch/manifest";
import { allArtifactsFor } from "../../cli/fetch/select";
import type { Manifest } from "../../cli/fetch/types";
import { randomBody, testArtifact } from "../unit/fetch/helpers/artifacts";
import { startServer } from "./http-server";

export async function bundleWithImages(
  work: string,
  images: readonly (readonly [name: string, body: Buffer])[],
  file = join(work, "bundle.tar"),
): Promise<{ bundle: string; manifest: Manifest }> {
  const etcd = randomBody(10_000, 3);
  const manifest = parseManifest({ schema: 1, name: "t", artifacts: [testArtifact({ id: "etcd", path: "/etcd.bin", body: etcd })] }, "t");
  const server = await startServer();
  server.serve("/etcd.bin", etcd);
  try {
    const fetched = await fetchArtifacts(allArtifactsFor(manifest, "amd64"), {
      cacheDir: join(work, "dl"),
      mirror: server.url,
      http: { retries: 0, retryBaseMs: 5 },
      env: {},
    });
    const inputs: BundledImageInput[] = [];
    for (const [name, body] of images) {
      const f = join(work, name);
      writeFileSync(f, body);
      const a = await readImageArchive(f, { arch: "amd64", hash: true });
      inputs.push({ file: f, sha256: a.sha256 as string, size: a.size, names: a.images.map((i) => i.name) });
    }
    await writeBundle(fetched, manifest, "amd64", file, undefined, inputs);
    return { bundle: file, manifest };
  } finally {
    await server.close();
  }
}
