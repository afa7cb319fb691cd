// The version set a plan is built for: component → version, plus a stable id for versions/<id>.
import { ExitCode, UserError } from "../errors";
import { versionSet, versionSetId } from "../fetch/select";
import type { Manifest } from "../fetch/types";
import type { VersionSet } from "./plan";

export function requireVersion(versions: VersionSet, component: string): string {
  const v = versions.components[component];
  if (!v) {
    throw new UserError(`the version set ${versions.id} has no ${component}`, {
      exitCode: ExitCode.Refused,
      fix: "use a components manifest that lists it (--manifest FILE), or the built-in one",
    });
  }
  return v;
}

/** The plan's view of a components manifest: component → version, and the set's folder id. */
export function versionSetOf(manifest: Manifest): VersionSet {
  return { id: versionSetId(manifest), components: versionSet(manifest) };
}
