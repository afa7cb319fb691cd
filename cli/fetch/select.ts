// Pure views of a manifest: the version set (component → version), and the artifacts one node
// needs for an arch, a runtime and a network, with their URL and member templates expanded.
import { createHash } from "node:crypto";
import { ExitCode, UserError } from "../errors";
import { matchesWhen } from "./manifest";
import { ARCHES, type Arch, type Manifest, type ManifestArtifact, type ResolvedArtifact, type Selection } from "./types";

/** Component name → version, e.g. { kubernetes: "1.36.0", etcd: "3.6.14", ... }. */
export function versionSet(m: Manifest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of m.artifacts) out[a.component] = a.version;
  return out;
}

/**
 * A short, stable name for the version set, for folders like versions/<id>: the Kubernetes version
 * (when present) and 10 hex of a sha256.
 * - Without `arch`: over the whole manifest's artifacts, as written.
 * - With `arch`: over what decides the installed bits on that arch only (each artifact's id, version,
 *   format, binaries and pinned checksum), not URLs, sizes or notes. The built-in manifest and a
 *   bundle made from it (its manifest has one arch, with sizes) then name the same set.
 */
export function versionSetId(m: Manifest, arch?: Arch): string {
  const identity = arch
    ? m.artifacts
        .filter((a) => a.checksums[arch] !== undefined)
        .map((a) => [a.id, a.version, a.format, a.binaries, a.checksums[arch]?.algorithm, a.checksums[arch]?.value])
    : m.artifacts;
  const digest = createHash("sha256").update(JSON.stringify(identity)).digest("hex").slice(0, 10);
  const k8s = versionSet(m).kubernetes;
  return k8s ? `${k8s}-${digest}` : digest;
}

/** The artifacts a node with this selection needs, resolved for its arch. */
export function selectArtifacts(m: Manifest, sel: Selection): ResolvedArtifact[] {
  return m.artifacts
    .filter((a) => matchesWhen(a.when, sel.runtime, sel.network, sel.mode))
    .map((a) => resolveArtifact(a, sel.arch, m.origin));
}

/** Every artifact the manifest has for one arch (all runtimes and networks): what a bundle carries. */
export function allArtifactsFor(m: Manifest, arch: Arch): ResolvedArtifact[] {
  return m.artifacts.filter((a) => a.arch[arch] !== undefined).map((a) => resolveArtifact(a, arch, m.origin));
}

export function resolveArtifact(a: ManifestArtifact, arch: Arch, origin = "built-in"): ResolvedArtifact {
  const token = a.arch[arch];
  const checksum = a.checksums[arch];
  if (token === undefined || checksum === undefined) {
    throw new UserError(
      `${a.component} ${a.version} is not available for ${arch} in the ${origin === "built-in" ? "built-in manifest" : `manifest ${origin}`}`,
      {
        exitCode: ExitCode.Refused,
        fix: `use a manifest that lists ${a.id} for ${arch} (--manifest FILE), or run on ${ARCHES.filter((x) => a.arch[x] !== undefined).join(" or ")}`,
      },
    );
  }
  const expand = (t: string) => expandTemplate(t, a.version, token);
  const url = expand(a.url);
  return {
    id: a.id,
    component: a.component,
    version: a.version,
    arch,
    url,
    fileName: fileNameOf(url),
    format: a.format,
    binaries: a.binaries.map((b) => ({ name: b.name, path: b.path === undefined ? null : expand(b.path), dir: b.dir ?? null })),
    checksum,
    sideFiles: (a.sideFiles ?? []).map((s) => ({ url: expand(s.url), algorithm: s.algorithm })),
    label: `${a.id === a.component ? a.component : `${a.component} (${a.id})`} ${a.version} for ${arch}`,
  };
}

export function expandTemplate(template: string, version: string, archToken: string): string {
  return template.replaceAll("{version}", version).replaceAll("{arch}", archToken);
}

/** The last segment of a URL's path, decoded: the upstream file name. */
export function fileNameOf(url: string): string {
  const segments = new URL(url).pathname.split("/").filter(Boolean);
  return decodeURIComponent(segments.at(-1) ?? "download");
}
