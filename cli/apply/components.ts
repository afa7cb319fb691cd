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
  /** --kubernetes-version: a version, minor or channel resolved through upstream's release files. */
  kubernetesVersion?: string;
  /** --pinned: only checksums compiled into this binary (the built-in set). */
  pinned?: boolean;
}

export interface Components {
  manifest: Manifest;
  versions: VersionSet;
}

/** The manifest of `source` and its version set for `arch` (the node's: plan.arch). */
export async function loadComponents(
  source: ComponentSource,
  arch: string,
  env: NodeJS.ProcessEnv = process.env,
  signal?: AbortSignal,
): Promise<Components> {
  if (source.trustBundle && !source.bundle) {
    throw new UserError("--trust-bundle needs --bundle FILE", {
      exitCode: ExitCode.Usage,
      fix: "add --bundle FILE, or drop --trust-bundle",
    });
  }
  const manifest =
    source.kubernetesVersion !== undefined
      ? await resolveSource(source, source.kubernetesVersion, arch as fetch.Arch, env, signal)
      : source.bundle && source.trustBundle
        ? await fetch.readBundleManifest(source.bundle)
        : fetch.loadManifest({ file: source.manifestFile });
  return { manifest, versions: versionSetOf(manifest, arch) };
}

/**
 * --kubernetes-version V: the set of V resolved online (channel files, upstream checksum files), or,
 * with --pinned, the built-in set when it is V. Never with --manifest or --bundle (their set is theirs).
 */
async function resolveSource(
  source: ComponentSource,
  raw: string,
  arch: fetch.Arch,
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
): Promise<Manifest> {
  const spec = fetch.parseVersionSpec(raw);
  const other = source.manifestFile ? "--manifest" : source.bundle ? "--bundle" : null;
  if (other) {
    throw new UserError(`--kubernetes-version ${raw} and ${other} both choose the version set`, {
      exitCode: ExitCode.Usage,
      fix: `drop one of them: ${other}'s set is the one its file names`,
    });
  }
  if (source.pinned) {
    const builtin = fetch.loadManifest();
    const k8s = fetch.versionSet(builtin).kubernetes ?? "";
    const ok = spec.kind === "exact" ? spec.version === k8s : spec.kind === "minor" ? k8s.startsWith(`${spec.minor}.`) : false;
    if (ok) return builtin;
    throw new UserError(`--pinned: the set built into this rootless-k8s is Kubernetes ${k8s}, not ${raw}`, {
      exitCode: ExitCode.Refused,
      fix: `drop --pinned to verify ${raw} by upstream's checksum files, or drop --kubernetes-version for Kubernetes ${k8s}`,
    });
  }
  const client = await fetch.createHttpClient({ ...(source.caFile ? { caFile: source.caFile } : {}), env });
  try {
    const src = { client, mirror: fetch.mirrorFrom(source.mirror, env), ...(signal ? { signal } : {}) };
    const k = await fetch.resolveKubernetesVersion(spec, src);
    return await fetch.resolvedManifest(k, arch, src);
  } finally {
    await client.close();
  }
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
  const installed = await fetch.installBinaries(fetched, plan.paths.versionBinDir, { signal: ctx.signal, cacheDir: plan.paths.cacheDir });
  return {
    id: plan.versions.id,
    binDir: plan.paths.versionBinDir,
    versions: { ...plan.versions.components },
    binaries: installed.map((b) => ({ path: b.path, sha256: b.sha256, mode: 0o755, kind: "binary" as const })),
  };
}
