// The components of a version set: the manifest they come from (built-in, --manifest, or a
// --bundle's), and installing a set into versions/<set>/bin through cli/fetch, which downloads,
// verifies, caches and extracts (nothing unverified is ever installed).
import * as path from "node:path";
import { ExitCode, UserError } from "../errors";
import * as fetch from "../fetch/index";
import type { Manifest } from "../fetch/index";
import { versionSetOf } from "../plan/index";
import type { Plan, VersionSet } from "../plan/plan";
import type { Context } from "../context";
import type { ReceiptSet } from "./receipt";
import type { StepHandle } from "../ui/progress";

/** Where the components come from (flags shared by install and upgrade). */
export interface ComponentSource {
  manifestFile?: string;
  mirror?: string;
  bundle?: string;
  trustBundle?: boolean;
  caFile?: string;
}

export interface Components {
  manifest: Manifest;
  versions: VersionSet;
}

/** The manifest of `source` and its version set for `arch` (the node's: plan.arch). */
export async function loadComponents(source: ComponentSource, arch: string): Promise<Components> {
  if (source.trustBundle && !source.bundle) {
    throw new UserError("--trust-bundle needs --bundle FILE", {
      exitCode: ExitCode.Usage,
      fix: "add --bundle FILE, or drop --trust-bundle",
    });
  }
  const manifest =
    source.bundle && source.trustBundle ? await fetch.readBundleManifest(source.bundle) : fetch.loadManifest({ file: source.manifestFile });
  return { manifest, versions: versionSetOf(manifest, arch) };
}

/**
 * Fetches (verified, cached) and installs the plan's version set into its versions/<set>/bin.
 * `live` shows the download meter (bytes, speed, ETA) in the step's spinner on a terminal.
 */
export async function fetchSet(ctx: Context, plan: Plan, c: Components, source: ComponentSource, live?: StepHandle): Promise<ReceiptSet> {
  const arch = plan.arch as "amd64" | "arm64";
  // Only a slirp4netns the plan takes from the version set is downloaded. The host's slirp4netns or
  // pasta, RootlessKit's built-in driver and dockerd's own network need no artifact ("builtin").
  const bundled = plan.network.driver === "slirp4netns" && plan.network.binary === path.join(plan.paths.binDir, "slirp4netns");
  const network = bundled ? "slirp4netns" : "builtin";
  const artifacts = fetch.selectArtifacts(c.manifest, { arch, runtime: plan.runtime.name, network, mode: plan.mode.name });
  const fetched = await fetch.fetchArtifacts(artifacts, {
    cacheDir: plan.paths.cacheDir,
    mirror: fetch.mirrorFrom(source.mirror, ctx.env),
    caFile: source.caFile,
    signal: ctx.signal,
    progress: live && ctx.out.interactive ? fetch.meterProgress(live.update, artifacts.length) : fetch.plainProgress(ctx.out),
    bundle: source.bundle,
    trustBundle: source.trustBundle,
    env: ctx.env,
  });
  const installed = await fetch.installBinaries(fetched, plan.paths.versionBinDir, { signal: ctx.signal });
  return {
    id: plan.versions.id,
    binDir: plan.paths.versionBinDir,
    versions: { ...plan.versions.components },
    binaries: installed.map((b) => ({ path: b.path, sha256: b.sha256, mode: 0o755, kind: "binary" as const })),
  };
}
