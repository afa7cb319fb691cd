// The components manifest: the built-in assets/components.json (bundled into the binary) or a
// --manifest FILE of the same schema (docs/manifest.md). Loading validates everything, checksums
// first: a manifest that names an artifact without a pinned checksum for each arch is refused.
import builtin from "../../assets/components.json";
import { ExitCode, UserError, messageOf } from "../errors";
import { FileTooLargeError, readSmallFileSync } from "../small-file";
import { CONTROL, printable } from "../text";
import { normalizeMemberPath } from "./tar";
import { normalizeImageRef, parseImageRef } from "./image-ref";
import {
  ADDON_IMAGE_IDS,
  ARCHES,
  HASH_ALGORITHMS,
  NETWORKS,
  NODE_MODES,
  RUNTIMES,
  type Arch,
  type ArtifactFormat,
  type BinarySpec,
  type HashAlgorithm,
  type Manifest,
  type ManifestArtifact,
  type ManifestImage,
  type PinnedChecksum,
  type SideFile,
  type When,
} from "./types";

export const MANIFEST_SCHEMA_DOC = "docs/manifest.md";
const FORMATS: readonly ArtifactFormat[] = ["binary", "tar.gz", "tar"];
export const DIGEST_HEX_LENGTH: Record<HashAlgorithm, number> = { sha256: 64, sha512: 128 };
const NAME = /^[a-z0-9][a-z0-9._-]*$/;
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;
const TOKEN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+_~-]*$/;
const PLACEHOLDER = /\{([^}]*)\}/g;
/** A manifest is a few kilobytes; anything past this is not one (`--manifest /dev/zero`). */
export const MANIFEST_MAX_BYTES = 4 << 20;

/** Loads and validates the built-in manifest, or `file` when given (--manifest FILE). */
export function loadManifest(opts: { file?: string } = {}): Manifest {
  if (!opts.file) return parseManifest(builtin, "built-in");
  let text: string;
  try {
    text = readSmallFileSync(opts.file, MANIFEST_MAX_BYTES);
  } catch (e) {
    if (e instanceof FileTooLargeError) {
      throw manifestError(
        opts.file,
        `is larger than ${MANIFEST_MAX_BYTES >> 20} MiB, so it is not a manifest`,
        "pass the path of a components manifest (a JSON file of a few kilobytes; docs/manifest.md)",
      );
    }
    const code = (e as NodeJS.ErrnoException).code;
    throw manifestError(
      opts.file,
      code === "ENOENT" ? "file not found" : `cannot be read (${code ?? messageOf(e)})`,
      "pass the path of a readable manifest file to --manifest",
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw manifestError(opts.file, `is not valid JSON (${messageOf(e)})`);
  }
  return parseManifest(data, opts.file);
}

/** Validates parsed JSON as a manifest. `origin` names it in errors ("built-in", a path, "bundle X"). */
export function parseManifest(data: unknown, origin: string): Manifest {
  const v = new Validator(origin);
  const root = v.object(data, "");
  v.equal(root.schema, 1, "schema");
  const name = v.text(root.name, "name");
  const description = root.description === undefined ? undefined : v.text(root.description, "description");
  const list = v.array(root.artifacts, "artifacts");
  if (list.length === 0) v.fail("artifacts", "is empty; a manifest lists at least one artifact");
  const artifacts = list.map((a, i) => parseArtifact(v, a, `artifacts[${i}]`));
  checkUnique(v, artifacts);
  const images = root.images === undefined ? undefined : v.array(root.images, "images").map((x, i) => parseImage(v, x, `images[${i}]`));
  if (images) {
    const seen = new Set<string>();
    for (const i of images) {
      if (seen.has(i.id)) v.fail("images", `has two images with id "${i.id}"`);
      seen.add(i.id);
    }
  }
  return { schema: 1, name, ...(description !== undefined ? { description } : {}), artifacts, ...(images ? { images } : {}), origin };
}

function parseImage(v: Validator, data: unknown, at: string): ManifestImage {
  const o = v.object(data, at);
  const id = v.oneOf(o.id, `${at} id`, ADDON_IMAGE_IDS);
  at = `image "${id}"`;
  const name = v.string(o.name, `${at} name`);
  const ref = parseImageRef(name);
  if (!ref || ref.digest || !ref.tag || normalizeImageRef(name) !== name)
    v.fail(
      `${at} name`,
      `must be a full image name with a tag and no digest, e.g. registry.k8s.io/coredns/coredns:v1.14.2 (got "${name}")`,
    );
  const digest =
    o.digest === null ? null : v.match(o.digest, `${at} digest`, /^sha256:[0-9a-f]{64}$/, "sha256: and 64 lower-case hex digits, or null");
  const source = v.text(o.source, `${at} source`);
  if (source.trim() === "") v.fail(`${at} source`, "is empty; say where the digest comes from, or why there is none");
  return { id, name, digest, source };
}

function parseArtifact(v: Validator, data: unknown, at: string): ManifestArtifact {
  const o = v.object(data, at);
  const id = v.match(o.id, `${at} id`, NAME, "lower-case letters, digits, '.', '_' or '-'");
  at = `artifact "${id}"`;
  const component = v.match(o.component, `${at} component`, NAME, "lower-case letters, digits, '.', '_' or '-'");
  const version = v.match(o.version, `${at} version`, VERSION, "a version without spaces or slashes, e.g. 1.36.0");
  const url = parseUrlTemplate(v, o.url, `${at} url`);
  const archObj = v.object(o.arch, `${at} arch`);
  const arch: Partial<Record<Arch, string>> = {};
  for (const [k, token] of Object.entries(archObj)) {
    if (!ARCHES.includes(k as Arch)) v.fail(`${at} arch`, `has unknown arch "${k}" (use ${ARCHES.join(" or ")})`);
    arch[k as Arch] = v.match(token, `${at} arch.${k}`, TOKEN, "upstream's arch token, e.g. amd64 or x86_64");
  }
  if (Object.keys(arch).length === 0) v.fail(`${at} arch`, "lists no arch");
  const format = v.oneOf(o.format, `${at} format`, FORMATS);
  const binaries = v.array(o.binaries, `${at} binaries`).map((b, i) => parseBinary(v, b, `${at} binaries[${i}]`, format));
  if (binaries.length === 0) v.fail(`${at} binaries`, "is empty; name the binaries to install");
  if (format === "binary" && binaries.length !== 1) v.fail(`${at} binaries`, 'must name exactly one binary for format "binary"');
  if (format !== "binary") checkMembers(v, binaries, version, arch, at);
  const sums = o.checksums === undefined ? {} : v.object(o.checksums, `${at} checksums`);
  const checksums: Partial<Record<Arch, PinnedChecksum>> = {};
  for (const a of ARCHES) {
    if (arch[a] === undefined) {
      if (sums[a] !== undefined) v.fail(`${at} checksums.${a}`, `is given but "${a}" is not in its arch list`);
      continue;
    }
    if (sums[a] === undefined) {
      v.fail(`${at} checksums.${a}`, "is missing; every artifact needs a pinned sha256 or sha512 for each arch it lists");
    }
    checksums[a] = parseChecksum(v, sums[a], `${at} checksums.${a}`);
  }
  for (const k of Object.keys(sums)) if (!ARCHES.includes(k as Arch)) v.fail(`${at} checksums`, `has unknown arch "${k}"`);
  const sideFiles =
    o.sideFiles === undefined
      ? undefined
      : v.array(o.sideFiles, `${at} sideFiles`).map((s, i) => parseSideFile(v, s, `${at} sideFiles[${i}]`));
  const when = o.when === undefined ? undefined : parseWhen(v, o.when, `${at} when`);
  const text = (k: "license" | "homepage" | "notes") => (o[k] === undefined ? {} : { [k]: v.text(o[k], `${at} ${k}`) });
  return {
    id,
    component,
    version,
    url,
    arch,
    format,
    binaries,
    checksums,
    ...(sideFiles ? { sideFiles } : {}),
    ...(when ? { when } : {}),
    ...text("license"),
    ...text("homepage"),
    ...text("notes"),
  };
}

function parseBinary(v: Validator, data: unknown, at: string, format: ArtifactFormat): BinarySpec {
  const o = v.object(data, at);
  const name = v.match(o.name, `${at} name`, FILE_NAME, "a file name without slashes");
  const b: BinarySpec = { name };
  if (format === "binary") {
    if (o.path !== undefined) v.fail(`${at} path`, 'is not used for format "binary" (the download is the binary)');
  } else {
    const path = v.string(o.path, `${at} path`);
    if (CONTROL.test(path)) v.fail(`${at} path`, "holds a control character");
    if (normalizeMemberPath(path) === "" || normalizeMemberPath(path) === ".")
      v.fail(`${at} path`, "is empty; name the file inside the archive, e.g. bin/etcd");
    if (path.startsWith("/") || path.split("/").includes(".."))
      v.fail(`${at} path`, "must be a relative path inside the archive, without '..'");
    checkPlaceholders(v, path, `${at} path`);
    b.path = path;
  }
  if (o.dir !== undefined) b.dir = v.match(o.dir, `${at} dir`, FILE_NAME, "one folder name, e.g. cni");
  return b;
}

function parseChecksum(v: Validator, data: unknown, at: string): PinnedChecksum {
  const o = v.object(data, at);
  const algorithm = v.oneOf(o.algorithm, `${at} algorithm`, HASH_ALGORITHMS);
  const len = DIGEST_HEX_LENGTH[algorithm];
  const value = v.match(o.value, `${at} value`, new RegExp(`^[0-9a-f]{${len}}$`), `${len} lower-case hex digits for ${algorithm}`);
  const source = v.text(o.source, `${at} source`);
  if (source.trim() === "") v.fail(`${at} source`, "is empty; say where the checksum comes from");
  const c: PinnedChecksum = { algorithm, value, source };
  if (o.size !== undefined) {
    if (typeof o.size !== "number" || !Number.isSafeInteger(o.size) || o.size < 0) v.fail(`${at} size`, "must be a whole number of bytes");
    c.size = o.size as number;
  }
  // A bundle made from a --kubernetes-version set says its checksums came from upstream's files.
  if (o.trust !== undefined) c.trust = v.oneOf(o.trust, `${at} trust`, ["pin", "upstream"] as const);
  return c;
}

function parseSideFile(v: Validator, data: unknown, at: string): SideFile {
  const o = v.object(data, at);
  return { url: parseUrlTemplate(v, o.url, `${at} url`), algorithm: v.oneOf(o.algorithm, `${at} algorithm`, HASH_ALGORITHMS) };
}

function parseWhen(v: Validator, data: unknown, at: string): When {
  const o = v.object(data, at);
  const w: When = {};
  for (const k of Object.keys(o))
    if (k !== "runtime" && k !== "network" && k !== "mode") v.fail(at, `has unknown key "${k}" (use runtime, network or mode)`);
  if (o.runtime !== undefined) w.runtime = v.array(o.runtime, `${at} runtime`).map((r, i) => v.oneOf(r, `${at} runtime[${i}]`, RUNTIMES));
  if (o.network !== undefined) w.network = v.array(o.network, `${at} network`).map((r, i) => v.oneOf(r, `${at} network[${i}]`, NETWORKS));
  if (o.mode !== undefined) w.mode = v.array(o.mode, `${at} mode`).map((r, i) => v.oneOf(r, `${at} mode[${i}]`, NODE_MODES));
  return w;
}

function parseUrlTemplate(v: Validator, data: unknown, at: string): string {
  const url = v.string(data, at);
  if (CONTROL.test(url)) v.fail(at, "holds a control character");
  checkPlaceholders(v, url, at);
  let parsed: URL;
  try {
    parsed = new URL(url.replace(PLACEHOLDER, "x"));
  } catch {
    return v.fail(at, `is not a URL ("${url}")`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") v.fail(at, `must be an https:// or http:// URL ("${url}")`);
  return url;
}

/** Each binary of an archive is its own member, for every arch: two names on one member are refused. */
function checkMembers(v: Validator, binaries: BinarySpec[], version: string, arch: Partial<Record<Arch, string>>, at: string): void {
  for (const token of Object.values(arch)) {
    const seen = new Map<string, number>();
    binaries.forEach((b, i) => {
      const member = normalizeMemberPath((b.path ?? "").replaceAll("{version}", version).replaceAll("{arch}", token));
      const first = seen.get(member);
      if (first !== undefined) {
        v.fail(
          `${at} binaries[${i}] path`,
          `names the archive member "${member}" that binaries[${first}] already installs; each binary needs its own member`,
        );
      }
      seen.set(member, i);
    });
  }
}

function checkPlaceholders(v: Validator, s: string, at: string): void {
  for (const m of s.matchAll(PLACEHOLDER)) {
    if (m[1] !== "version" && m[1] !== "arch") v.fail(at, `has unknown placeholder {${m[1]}} (use {version} or {arch})`);
  }
}

/** Ids are unique; one component has one version; no two binaries of a selection share a path. */
function checkUnique(v: Validator, artifacts: ManifestArtifact[]): void {
  const ids = new Set<string>();
  const versions = new Map<string, string>();
  for (const a of artifacts) {
    if (ids.has(a.id)) v.fail("artifacts", `has two artifacts with id "${a.id}"`);
    ids.add(a.id);
    const seen = versions.get(a.component);
    if (seen !== undefined && seen !== a.version) {
      v.fail("artifacts", `gives component "${a.component}" two versions (${seen} and ${a.version})`);
    }
    versions.set(a.component, a.version);
  }
  for (const arch of ARCHES) {
    for (const runtime of RUNTIMES) {
      for (const network of NETWORKS) {
        for (const mode of NODE_MODES) {
          const owner = new Map<string, string>();
          for (const a of artifacts) {
            if (a.arch[arch] === undefined || !matchesWhen(a.when, runtime, network, mode)) continue;
            for (const b of a.binaries) {
              const key = b.dir ? `${b.dir}/${b.name}` : b.name;
              const other = owner.get(key);
              if (other !== undefined) {
                v.fail(
                  "artifacts",
                  `installs "${key}" twice (from "${other}" and "${a.id}") for ${arch}, runtime ${runtime}, network ${network}, mode ${mode}`,
                );
              }
              owner.set(key, a.id);
            }
          }
        }
      }
    }
  }
}

/** Whether a selection needs an artifact; an absent `mode` matches an artifact of either mode. */
export function matchesWhen(when: When | undefined, runtime: string, network: string, mode?: string): boolean {
  if (!when) return true;
  if (when.runtime && !when.runtime.includes(runtime as never)) return false;
  if (when.network && !when.network.includes(network as never)) return false;
  if (mode !== undefined && when.mode && !when.mode.includes(mode as never)) return false;
  return true;
}

function manifestError(
  origin: string,
  what: string,
  fix = `fix the manifest; its schema is documented in ${MANIFEST_SCHEMA_DOC}`,
): UserError {
  const name = origin === "built-in" ? "the built-in manifest" : `manifest ${origin}`;
  return new UserError(`${name}: ${what}`, { exitCode: ExitCode.Usage, fix });
}

/** Typed field checks that throw one-line errors naming the field. */
class Validator {
  constructor(private readonly origin: string) {}

  fail(at: string, what: string): never {
    throw manifestError(this.origin, at ? `${at} ${what}` : what);
  }
  object(x: unknown, at: string): Record<string, unknown> {
    if (typeof x !== "object" || x === null || Array.isArray(x)) this.fail(at, "must be a JSON object");
    return x as Record<string, unknown>;
  }
  array(x: unknown, at: string): unknown[] {
    if (!Array.isArray(x)) this.fail(at, "must be a JSON array");
    return x as unknown[];
  }
  string(x: unknown, at: string): string {
    if (typeof x !== "string") this.fail(at, x === undefined ? "is missing" : "must be a string");
    return x as string;
  }
  /** Free text that may be printed (names, notes, checksum sources): control characters made visible escapes. */
  text(x: unknown, at: string): string {
    return printable(this.string(x, at));
  }
  match(x: unknown, at: string, re: RegExp, what: string): string {
    const s = this.string(x, at);
    if (!re.test(s)) this.fail(at, `must be ${what} (got "${s}")`);
    return s;
  }
  oneOf<T extends string>(x: unknown, at: string, allowed: readonly T[]): T {
    const s = this.string(x, at);
    if (!allowed.includes(s as T)) this.fail(at, `must be one of ${allowed.join(", ")} (got "${s}")`);
    return s as T;
  }
  equal(x: unknown, want: unknown, at: string): void {
    if (x !== want) this.fail(at, `must be ${JSON.stringify(want)} (got ${JSON.stringify(x)})`);
  }
}
