// What `docker load` reads for an image archive. Before Docker 25, `docker load` reads only the
// `docker save` layout: a manifest.json naming each image's config, layers and tags. An OCI image
// layout without one fails there ("open .../manifest.json: no such file or directory"). Docker 25+
// writes both in one archive (its manifest.json names blobs/sha256/<hex> members), and every
// version reads that. So an OCI layout that has no manifest.json is streamed to `docker load` with
// one put in front: a tar entry, then the archive's own entries (gunzipped) and its end. Nothing
// is written to disk, and the archive itself is not changed.
import { createReadStream, promises as fsp } from "node:fs";
import { PassThrough, type Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { Header } from "tar";
import type { ImageArchive } from "./image-archive";

/** The `docker save` manifest.json for an OCI layout's images: one entry per name. */
export function dockerSaveManifest(a: ImageArchive): Buffer {
  const entries = a.images.map((i) => {
    if (!i.blobs) throw new Error(`${a.file}: ${i.name} has no OCI blobs to name`);
    return { Config: i.blobs.config, RepoTags: [i.name], Layers: i.blobs.layers };
  });
  return Buffer.from(JSON.stringify(entries));
}

/** One regular-file tar entry: its 512-byte header, the body, and the padding to a whole block. */
export function tarEntry(name: string, body: Buffer): Buffer {
  const header = new Header({ path: name, mode: 0o644, uid: 0, gid: 0, size: body.length, mtime: new Date(0), type: "File" });
  header.encode();
  const pad = (512 - (body.length % 512)) % 512;
  return Buffer.concat([header.block as Buffer, body, Buffer.alloc(pad)]);
}

const isGzip = async (file: string) => {
  const fh = await fsp.open(file, "r");
  try {
    const b = Buffer.alloc(2);
    const { bytesRead } = await fh.read(b, 0, 2, 0);
    return bytesRead === 2 && b[0] === 0x1f && b[1] === 0x8b;
  } finally {
    await fh.close();
  }
};

/**
 * The stream to feed `docker load` for `a`, or null when the archive already has a manifest.json
 * (then `docker load --input FILE` reads it as it is).
 */
export async function dockerLoadStream(a: ImageArchive): Promise<Readable | null> {
  if (a.dockerManifest) return null;
  const head = tarEntry("manifest.json", dockerSaveManifest(a));
  const out = new PassThrough();
  out.write(head);
  const body = createReadStream(a.file);
  const src = (await isGzip(a.file)) ? body.pipe(createGunzip()) : body;
  body.on("error", (e) => out.destroy(e));
  src.on("error", (e: Error) => out.destroy(e));
  src.pipe(out);
  return out;
}
