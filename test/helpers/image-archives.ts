// Real image archives built in the test, byte for byte in the layouts `docker save` and OCI tools
// write: a layer tar, its config and manifest as blobs named by their sha256, and the index.
import { createHash } from "node:crypto";
import { tarBuffer, type TarEntry } from "./tar.mjs";

export const sha256 = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
const OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
const OCI_LAYER = "application/vnd.oci.image.layer.v1.tar";

export interface BuiltImage {
  /** The config's digest: the image ID. */
  id: string;
  /** The manifest's descriptor (for index.json). */
  manifest: { mediaType: string; digest: string; size: number };
  blobs: TarEntry[];
}

/** One image: a layer holding /hello (a different text per `seed`), its config and manifest. */
export function ociImage(arch = "amd64", seed = "hello"): BuiltImage {
  const layer = tarBuffer([{ path: "hello", content: `${seed} from ${arch}\n` }]);
  const config = Buffer.from(
    JSON.stringify({
      architecture: arch,
      os: "linux",
      config: { Cmd: ["/hello"] },
      rootfs: { type: "layers", diff_ids: [`sha256:${sha256(layer)}`] },
    }),
  );
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: OCI_CONFIG, digest: `sha256:${sha256(config)}`, size: config.length },
      layers: [{ mediaType: OCI_LAYER, digest: `sha256:${sha256(layer)}`, size: layer.length }],
    }),
  );
  return {
    id: `sha256:${sha256(config)}`,
    manifest: { mediaType: OCI_MANIFEST, digest: `sha256:${sha256(manifest)}`, size: manifest.length },
    blobs: [layer, config, manifest].map((b) => ({ path: `blobs/sha256/${sha256(b)}`, content: b })),
  };
}

/** An OCI image layout tar; each entry of index.json is an image and its annotations. */
export function ociArchive(entries: { image: BuiltImage | ReturnType<typeof ociIndex>; annotations?: Record<string, string> }[]): Buffer {
  const index = {
    schemaVersion: 2,
    mediaType: OCI_INDEX,
    manifests: entries.map((e) => ({ ...e.image.manifest, ...(e.annotations ? { annotations: e.annotations } : {}) })),
  };
  const blobs = new Map<string, TarEntry>();
  for (const e of entries) for (const b of e.image.blobs) blobs.set(b.path, b);
  return tarBuffer([
    { path: "oci-layout", content: JSON.stringify({ imageLayoutVersion: "1.0.0" }) },
    { path: "index.json", content: JSON.stringify(index) },
    { path: "blobs", type: "dir" },
    { path: "blobs/sha256", type: "dir" },
    ...blobs.values(),
  ]);
}

/** A multi-platform index over images, as a blob, with its descriptor. */
export function ociIndex(images: { image: BuiltImage; arch: string }[]): {
  manifest: { mediaType: string; digest: string; size: number };
  blobs: TarEntry[];
} {
  const body = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_INDEX,
      manifests: images.map((i) => ({ ...i.image.manifest, platform: { os: "linux", architecture: i.arch } })),
    }),
  );
  return {
    manifest: { mediaType: OCI_INDEX, digest: `sha256:${sha256(body)}`, size: body.length },
    blobs: [...images.flatMap((i) => i.image.blobs), { path: `blobs/sha256/${sha256(body)}`, content: body }],
  };
}

/** A `docker save` archive in the classic layout (v1.2): <id>.json, <layer id>/layer.tar, manifest.json, repositories. */
export function dockerSaveArchive(images: { repoTags: string[]; arch?: string; seed?: string }[]): { tar: Buffer; ids: string[] } {
  const entries: TarEntry[] = [];
  const manifest: { Config: string; RepoTags: string[]; Layers: string[] }[] = [];
  const repositories: Record<string, Record<string, string>> = {};
  const ids: string[] = [];
  for (const i of images) {
    const layer = tarBuffer([{ path: "hello", content: `${i.seed ?? "hello"}\n` }]);
    const layerId = sha256(`layer ${sha256(layer)}`);
    const config = Buffer.from(
      JSON.stringify({ architecture: i.arch ?? "amd64", os: "linux", rootfs: { type: "layers", diff_ids: [`sha256:${sha256(layer)}`] } }),
    );
    const id = sha256(config);
    ids.push(`sha256:${id}`);
    entries.push(
      { path: `${layerId}/`, type: "dir" },
      { path: `${layerId}/layer.tar`, content: layer },
      { path: `${id}.json`, content: config },
    );
    manifest.push({ Config: `${id}.json`, RepoTags: i.repoTags, Layers: [`${layerId}/layer.tar`] });
    for (const t of i.repoTags) {
      const [repo, tag] = [t.slice(0, t.lastIndexOf(":")), t.slice(t.lastIndexOf(":") + 1)];
      (repositories[repo] ??= {})[tag] = layerId;
    }
  }
  entries.push(
    { path: "manifest.json", content: JSON.stringify(manifest) },
    { path: "repositories", content: JSON.stringify(repositories) },
  );
  return { tar: tarBuffer(entries), ids };
}
