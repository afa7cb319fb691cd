// The version set a plan is built for: component → version, plus a stable id for versions/<id>.
import { createHash } from "node:crypto";
import { ExitCode, UserError } from "../errors";
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

/**
 * A version set from component versions, with an id that names the Kubernetes version and a short
 * hash of every version, so two sets that differ in any component never share a folder.
 */
export function versionSet(components: Readonly<Record<string, string>>): VersionSet {
  const sorted = Object.keys(components)
    .sort()
    .map((k) => `${k}=${components[k]}`)
    .join("\n");
  const hash = createHash("sha256").update(sorted).digest("hex").slice(0, 8);
  const k8s = components.kubernetes ?? "unknown";
  return { id: `${k8s}-${hash}`, components: { ...components } };
}
