// The version set a plan is built for: component → version, plus a stable id for versions/<id>.
import { ExitCode, UserError } from "../errors";
import { versionSet, versionSetId } from "../fetch/select";
import type { Arch, Manifest } from "../fetch/types";
import type { VersionSet } from "./plan";

export function requireVersion(versions: VersionSet, component: string): string {
  const v = versions.components[component];
  if (!v) {
    const why = versions.unavailable?.[component];
    throw new UserError(`the version set ${versions.id} has no ${component}${why ? `: ${why}` : ""}`, {
      exitCode: ExitCode.Refused,
      fix: why
        ? "choose another runtime or network, another Kubernetes version, or the built-in set (--pinned)"
        : "use a components manifest that lists it (--manifest FILE), or the built-in one",
    });
  }
  return v;
}

function pinnedReason(origin: string): string {
  if (origin === "built-in") return "every checksum is a pin compiled into this rootless-k8s (its built-in set)";
  if (origin.startsWith("bundle ")) return `every checksum is the one the ${origin} records, each file verified again`;
  return `every checksum is a pin written in the manifest ${origin}`;
}

/**
 * The plan's view of a components manifest for one arch: component → version, and the set's folder
 * id. The id covers only what decides the installed bits of that arch, so an offline bundle made
 * from a manifest installs into the same versions/<id> as an online install of it.
 */
export function versionSetOf(manifest: Manifest, arch: string): VersionSet {
  const set: VersionSet = { id: versionSetId(manifest, arch as Arch), components: versionSet(manifest) };
  if (manifest.unavailable) set.unavailable = manifest.unavailable;
  set.reasons = manifest.choices ?? [pinnedReason(manifest.origin)];
  if (manifest.images?.length) set.images = Object.fromEntries(manifest.images.map((i) => [i.id, { name: i.name, digest: i.digest }]));
  return set;
}
