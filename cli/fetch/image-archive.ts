// Image archives for `rootless-k8s image load` and `bundle --images`: `docker save` output
// (manifest.json with RepoTags; Docker 25+ also writes an OCI layout, which is then what counts,
// as for containerd) and OCI image layouts in a tar (oci-layout, index.json, blobs/<alg>/<hex>),
// named by `io.containerd.image.name` or `org.opencontainers.image.ref.name`. Gzip is accepted.
//
// The whole archive is read once before anything is handed to a runtime: a readable tar, one of
// the two layouts, every image named with a full reference the kubelet can find, an image for the
// node's platform, and every blob it needs present (manifests and configs are hashed against
// their digests). Nothing is written.
import { createHash } from "node:crypto";
import { createReadStream, promises as fsp } from "node:fs";
import { posix } from "node:path";
import { ExitCode, InterruptedError, UserError, messageOf } from "../errors";
import { normalizeImageRef } from "./image-ref";
import { UnsafeArchiveError, isRegularFile, walkTar } from "./tar";

export type ImageArchiveFormat = "docker-save" | "oci-layout";

export interface ArchiveImage {
  /** The full, normalized name the runtime will store (docker.io/library/busybox:1.36.1). */
  name: string;
  /** The image ID: the digest of the image config for the node's platform (what `crictl images` shows). */
  id: string;
  /** The platform of that config, os/arch. */
  platform: string;
  /**
   * The digest a registry names this image by, which the runtime keeps as the image's target: the
   * OCI layout's index.json descriptor (a manifest, or an index over platforms). Null for a classic
   * `docker save` archive, which carries no manifest: the runtime makes one up on import.
   */
  digest: string | null;
  /**
   * OCI layouts only: the members holding the node's platform's config and layers, in order (what
   * a `docker save` manifest.json names for the image); null for a `docker save` archive.
   */
  blobs: { config: string; layers: string[] } | null;
}

export interface ImageArchive {
  file: string;
  format: ImageArchiveFormat;
  images: ArchiveImage[];
  /**
   * Whether the archive has a `docker save` manifest.json (a classic one, or beside the OCI layout
   * as Docker 25+ writes): what `docker load` before Docker 25 reads, and needs.
   */
  dockerManifest: boolean;
  /** sha256 of the whole file (only when read with `hash: true`, else null). */
  sha256: string | null;
  size: number;
}

const ANNOTATION_CONTAINERD_NAME = "io.containerd.image.name";
const ANNOTATION_REF_NAME = "org.opencontainers.image.ref.name";
const INDEX_TYPES = new Set(["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"]);
/** JSON members (manifests, indexes, configs) are kept in memory up to this size each, and in all. */
const JSON_MAX = 4 << 20;
const JSON_TOTAL_MAX = 64 << 20;

interface Member {
  size: number;
  /** Parsed when the member is a small JSON document. */
  json?: unknown;
  sha256?: string;
}

interface Descriptor {
  mediaType?: string;
  digest: string;
  size: number;
  platform?: { os?: string; architecture?: string };
  annotations?: Record<string, string>;
}

/** What the archive fix line says, for every kind of bad archive. */
const FIX =
  "pass a file written by `docker save NAME:TAG -o FILE`, or an OCI image layout tar whose images are named (e.g. `skopeo copy docker://IMAGE oci-archive:FILE:NAME:TAG`)";

function bad(file: string, why: string, fix = FIX): UserError {
  return new UserError(`${file}: ${why}`, { exitCode: ExitCode.Usage, fix });
}

/**
 * Reads and validates one image archive for a node of `arch` (amd64, arm64). Throws a UserError
 * (exit 2) naming what is wrong and how to make a good archive.
 */
export async function readImageArchive(file: string, opts: { arch: string; signal?: AbortSignal; hash?: boolean }): Promise<ImageArchive> {
  const st = await fsp.stat(file).catch(() => null);
  if (!st) throw bad(file, "no such file");
  if (!st.isFile()) throw bad(file, "not a regular file");
  const members = new Map<string, Member>();
  const links = new Map<string, string>();
  const whole = createHash("sha256");
  let kept = 0;
  try {
    await walkTar(
      file,
      async (entry, path) => {
        if (entry.type === "SymbolicLink" || entry.type === "Link") {
          const base = entry.type === "SymbolicLink" ? posix.dirname(path) : ".";
          links.set(path, posix.normalize(posix.join(base, entry.linkpath ?? "")));
          return void entry.resume();
        }
        if (!isRegularFile(entry)) return void entry.resume();
        const member: Member = { size: entry.size };
        members.set(path, member);
        if (entry.size > JSON_MAX) return void entry.resume();
        const chunks: Buffer[] = [];
        for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c);
        const body = Buffer.concat(chunks);
        const text = body.toString("utf8").trimStart();
        if (!text.startsWith("{") && !text.startsWith("[")) return;
        try {
          member.json = JSON.parse(text);
        } catch {
          return; // not JSON after all; only members read as JSON below must parse
        }
        member.sha256 = createHash("sha256").update(body).digest("hex");
        kept += body.length;
        if (kept > JSON_TOTAL_MAX)
          throw bad(file, `it holds more than ${JSON_TOTAL_MAX >> 20} MiB of JSON documents; not an image archive`);
      },
      opts.signal,
    );
  } catch (e) {
    if (opts.signal?.aborted) throw new InterruptedError(`interrupted while reading ${file}; nothing was loaded`);
    if (e instanceof UserError) throw e;
    if (/TAR_BAD_ARCHIVE: Unrecognized/.test(messageOf(e)) && st.size <= 10240 && (await fsp.readFile(file)).every((b) => b === 0)) {
      throw bad(file, "not an image archive: an empty archive");
    }
    const why = e instanceof UnsafeArchiveError ? `it has an unsafe entry: ${e.message}` : messageOf(e);
    throw bad(file, `not a readable tar archive (${why})`);
  }
  // The whole file's checksum, for bundles: a second read of the file, only when asked for.
  if (opts.hash) for await (const c of createReadStream(file)) whole.update(c as Buffer);
  const archive = { file, members, links, arch: opts.arch };
  const oci = members.has("oci-layout");
  const images = oci ? ociImages(archive) : members.has("manifest.json") ? dockerImages(archive) : null;
  if (!images) {
    const what =
      members.size === 0 && links.size === 0
        ? "an empty archive"
        : "a tar without manifest.json (docker save) or oci-layout and index.json (OCI image layout)";
    throw bad(file, `not an image archive: ${what}`);
  }
  return {
    file,
    format: oci ? "oci-layout" : "docker-save",
    images,
    dockerManifest: members.has("manifest.json"),
    sha256: opts.hash ? whole.digest("hex") : null,
    size: st.size,
  };
}

interface Archive {
  file: string;
  members: Map<string, Member>;
  links: Map<string, string>;
  arch: string;
}

/** A member by path, following links inside the archive. */
function member(a: Archive, path: string): Member | undefined {
  let p = posix.normalize(path).replace(/^\.\//, "");
  for (let i = 0; i < 16 && !a.members.has(p) && a.links.has(p); i++) p = a.links.get(p) as string;
  return a.members.get(p);
}

function jsonMember(a: Archive, path: string, what: string): unknown {
  const m = member(a, path);
  if (!m) throw bad(a.file, `${what} ${path} is missing`);
  if (m.json === undefined) throw bad(a.file, `${what} ${path} is not a JSON document`);
  return m.json;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

// ---- OCI image layout ---------------------------------------------------------------------------

function blobPath(a: Archive, digest: string, what: string): string {
  const m = /^([a-z0-9]+):([a-f0-9]{32,})$/.exec(digest);
  if (!m) throw bad(a.file, `${what} has a malformed digest "${digest}"`);
  return `blobs/${m[1]}/${m[2]}`;
}

function descriptor(a: Archive, v: unknown, what: string): Descriptor {
  if (!isObject(v) || typeof v.digest !== "string" || typeof v.size !== "number") throw bad(a.file, `${what} is not a valid descriptor`);
  return v as unknown as Descriptor;
}

/** A JSON blob, checked against its descriptor's digest. */
function jsonBlob(a: Archive, d: Descriptor, what: string): Record<string, unknown> {
  const path = blobPath(a, d.digest, what);
  const json = jsonMember(a, path, what);
  const m = member(a, path) as Member;
  if (d.digest.startsWith("sha256:") && m.sha256 !== d.digest.slice(7))
    throw bad(a.file, `${what} ${path} does not match its digest (the archive is damaged)`);
  if (!isObject(json)) throw bad(a.file, `${what} ${path} is not a JSON object`);
  return json;
}

function requireBlob(a: Archive, d: Descriptor, what: string): void {
  const path = blobPath(a, d.digest, what);
  const m = member(a, path);
  if (!m) throw bad(a.file, `${what} ${path} is missing (the archive is incomplete)`);
  if (m.size !== d.size) throw bad(a.file, `${what} ${path} has ${m.size} bytes, its descriptor says ${d.size} (the archive is damaged)`);
}

const platformOf = (p: { os?: unknown; architecture?: unknown } | undefined) => `${String(p?.os ?? "?")}/${String(p?.architecture ?? "?")}`;

function ociImages(a: Archive): ArchiveImage[] {
  const layout = jsonMember(a, "oci-layout", "the OCI layout file");
  if (!isObject(layout) || typeof layout.imageLayoutVersion !== "string") throw bad(a.file, "oci-layout has no imageLayoutVersion");
  if (layout.imageLayoutVersion !== "1.0.0")
    throw bad(a.file, `unsupported OCI layout version ${layout.imageLayoutVersion} (1.0.0 is supported)`);
  const index = jsonMember(a, "index.json", "the OCI index");
  if (!isObject(index) || !Array.isArray(index.manifests)) throw bad(a.file, "index.json has no manifests list");
  if (index.manifests.length === 0) throw bad(a.file, "index.json lists no images");
  return index.manifests.map((raw, i) => {
    const d = descriptor(a, raw, `index.json manifest ${i + 1}`);
    const name = ociName(a, d);
    return { name, ...resolvePlatform(a, d, name), digest: d.digest };
  });
}

/** The image's full name from its annotations, refusing names the kubelet could not find. */
function ociName(a: Archive, d: Descriptor): string {
  const annotations = d.annotations ?? {};
  const given = annotations[ANNOTATION_CONTAINERD_NAME] || annotations[ANNOTATION_REF_NAME];
  const short = d.digest.slice(0, 19);
  const fix =
    "name every image with a full reference when writing the archive: `docker save NAME:TAG`, or the io.containerd.image.name annotation (docker.io/library/busybox:1.36.1)";
  if (!given)
    throw bad(a.file, `the image ${short} has no name (no ${ANNOTATION_CONTAINERD_NAME} or ${ANNOTATION_REF_NAME} annotation)`, fix);
  if (!/[/:@]/.test(given)) throw bad(a.file, `the image ${short} is named only "${given}", a tag without a repository`, fix);
  const normalized = normalizeImageRef(given);
  if (!normalized) throw bad(a.file, `the image ${short} has the name "${given}", which is not a valid image reference`, fix);
  if (normalized !== given) {
    throw bad(
      a.file,
      `the image ${short} is named "${given}"; the runtime stores that name as is, and pods asking for it look up "${normalized}"`,
      `name it "${normalized}" in the archive`,
    );
  }
  return given;
}

/** The config of the image for linux/<arch>, following an index if the descriptor is one. */
function resolvePlatform(
  a: Archive,
  d: Descriptor,
  name: string,
  depth = 0,
): { id: string; platform: string; blobs: { config: string; layers: string[] } } {
  const want = `linux/${a.arch}`;
  if (d.mediaType && INDEX_TYPES.has(d.mediaType)) {
    if (depth > 2) throw bad(a.file, `${name}: indexes nested too deep`);
    const index = jsonBlob(a, d, `${name}: the index`);
    const entries = Array.isArray(index.manifests) ? index.manifests.map((m, i) => descriptor(a, m, `${name}: index entry ${i + 1}`)) : [];
    const match = entries.find((e) => platformOf(e.platform) === want);
    if (!match) {
      const have = entries.map((e) => platformOf(e.platform)).join(", ") || "none";
      throw bad(
        a.file,
        `${name} has no image for ${want} (the archive has: ${have})`,
        `save the ${want} image: docker save --platform ${want} NAME:TAG`,
      );
    }
    return resolvePlatform(a, match, name, depth + 1);
  }
  const manifest = jsonBlob(a, d, `${name}: the manifest`);
  const config = descriptor(a, manifest.config, `${name}: the manifest's config`);
  const cfg = jsonBlob(a, config, `${name}: the config`);
  const layers = (Array.isArray(manifest.layers) ? manifest.layers : []).map((l, i) => {
    const layer = descriptor(a, l, `${name}: layer ${i + 1}`);
    requireBlob(a, layer, `${name}: layer ${i + 1}`);
    return blobPath(a, layer.digest, `${name}: layer ${i + 1}`);
  });
  const platform = platformOf(cfg as { os?: unknown; architecture?: unknown });
  if (platform !== want)
    throw bad(
      a.file,
      `${name} is an image for ${platform}, but the node runs ${want}`,
      `save the ${want} image: docker save --platform ${want} NAME:TAG`,
    );
  return { id: config.digest, platform, blobs: { config: blobPath(a, config.digest, `${name}: the config`), layers } };
}

// ---- docker save (manifest.json) ----------------------------------------------------------------

function dockerImages(a: Archive): ArchiveImage[] {
  const manifest = jsonMember(a, "manifest.json", "the docker manifest");
  if (!Array.isArray(manifest) || manifest.length === 0) throw bad(a.file, "manifest.json lists no images");
  const images: ArchiveImage[] = [];
  manifest.forEach((raw, i) => {
    const entry = raw as { Config?: unknown; RepoTags?: unknown; Layers?: unknown };
    if (typeof entry.Config !== "string") throw bad(a.file, `manifest.json entry ${i + 1} has no Config`);
    const configMember = member(a, entry.Config);
    const cfg = jsonMember(a, entry.Config, `manifest.json entry ${i + 1}: the config`);
    const tags = Array.isArray(entry.RepoTags) ? entry.RepoTags.filter((t): t is string => typeof t === "string") : [];
    const what = `the image ${String(entry.Config)
      .replace(/^blobs\/sha256\//, "")
      .slice(0, 12)}`;
    if (tags.length === 0) {
      throw bad(
        a.file,
        `${what} has no name (no RepoTags in manifest.json)`,
        "save it by name: `docker save NAME:TAG -o FILE` (saving by image ID writes no name)",
      );
    }
    for (const [j, l] of (Array.isArray(entry.Layers) ? entry.Layers : []).entries()) {
      if (typeof l !== "string" || !member(a, l))
        throw bad(a.file, `${what}: layer ${j + 1} (${String(l)}) is missing (the archive is incomplete)`);
    }
    const platform = platformOf(cfg as { os?: unknown; architecture?: unknown });
    const want = `linux/${a.arch}`;
    for (const tag of tags) {
      const name = normalizeImageRef(tag);
      if (!name) throw bad(a.file, `${what} has the name "${tag}", which is not a valid image reference`);
      if (platform !== want)
        throw bad(
          a.file,
          `${name} is an image for ${platform}, but the node runs ${want}`,
          `save the ${want} image: docker save --platform ${want} NAME:TAG`,
        );
      images.push({ name, id: `sha256:${configMember?.sha256 ?? ""}`, platform, digest: null, blobs: null });
    }
  });
  return images;
}
