// The command-line face of cli/fetch, shared by `components`, `cache` and `bundle` (and usable by
// install/upgrade/self-upgrade): the download flags with their help text, and turning parsed flags into options.
import { opt, type OptionSpec, type Parsed } from "../args";
import { UsageError } from "../errors";
import { defaultCacheDir } from "./cache";
import { DEFAULT_CONCURRENCY, type FetchOptions } from "./fetch";
import { loadManifest } from "./manifest";
import { MIRROR_ENV, mirrorFrom } from "./mirror";
import { parseVersionSpec, supportedMinors } from "./releases";
import {
  ARCHES,
  NETWORKS,
  NODE_MODES,
  RUNTIMES,
  type Arch,
  type Manifest,
  type Network,
  type NodeMode,
  type Runtime,
  type Selection,
} from "./types";

export const manifestOption: Record<string, OptionSpec> = {
  manifest: {
    type: "string",
    valueName: "FILE",
    description: "Use this components manifest instead of the built-in one (docs/manifest.md)",
  },
};

/** --kubernetes-version and --pinned: which version set, and who vouches for its checksums. */
export const versionOptions: Record<string, OptionSpec> = {
  "kubernetes-version": {
    type: "string",
    valueName: "V",
    description: `Kubernetes version (1.37.2), minor (1.37: its newest patch) or channel (stable, latest), resolved through dl.k8s.io's release files and verified by upstream's checksum files; minors ${supportedMinors().join(", ")}`,
  },
  pinned: { type: "boolean", description: "Use only checksums compiled into this rootless-k8s (its built-in set)" },
};

/** --kubernetes-version (syntax checked: exit 2) and --pinned. */
export function versionSourceFrom(args: Parsed, command: string): { kubernetesVersion?: string; pinned?: boolean } {
  const v = opt.str(args, "kubernetes-version");
  if (v !== undefined) parseVersionSpec(v, "--kubernetes-version", command);
  return { ...(v !== undefined ? { kubernetesVersion: v } : {}), ...(opt.bool(args, "pinned") ? { pinned: true } : {}) };
}

/** Where a version set comes from, as components, cache fetch, bundle and install take it: --manifest, --mirror, --ca-file, --kubernetes-version, --pinned. */
export function componentSourceFrom(
  args: Parsed,
  command: string,
): { manifestFile?: string; mirror?: string; caFile?: string; kubernetesVersion?: string; pinned?: boolean } {
  return {
    manifestFile: opt.str(args, "manifest"),
    mirror: opt.str(args, "mirror"),
    caFile: caFileFrom(args, command),
    ...versionSourceFrom(args, command),
  };
}

export const mirrorOption: OptionSpec = {
  type: "string",
  valueName: "URL",
  description: `Download from this mirror, keeping upstream paths (also ${MIRROR_ENV})`,
};
export const caFileOption: OptionSpec = {
  type: "string",
  valueName: "FILE",
  description: "Also trust the CA certificates in this PEM file (proxies, private mirrors)",
};

export const downloadOptions: Record<string, OptionSpec> = {
  mirror: mirrorOption,
  "ca-file": caFileOption,
  concurrency: { type: "string", valueName: "N", description: `Downloads at a time, 1 to 16 (default ${DEFAULT_CONCURRENCY})` },
};

export const selectionOptions: Record<string, OptionSpec> = {
  arch: { type: "string", valueName: "ARCH", description: "Architecture (default: this machine's)", choices: ARCHES },
  runtime: { type: "string", valueName: "NAME", description: "Container runtime (default containerd)", choices: RUNTIMES },
  network: {
    type: "string",
    valueName: "DRIVER",
    description: "Network driver whose binary is downloaded (default builtin: RootlessKit's own)",
    choices: NETWORKS,
  },
  mode: {
    type: "string",
    valueName: "MODE",
    description: "The node's cgroup mode, for artifacts of one mode (default: both)",
    choices: NODE_MODES,
  },
};

/** What every HTTP request of the tool honours (cli/fetch/http.ts). */
export const networkEnvironment = [
  { name: "HTTPS_PROXY, HTTP_PROXY, NO_PROXY", description: "Proxy settings, honoured for every download" },
  { name: "NODE_EXTRA_CA_CERTS", description: "Extra trusted CA certificates (PEM), like --ca-file" },
];

export const downloadEnvironment = [
  { name: MIRROR_ENV, description: "Mirror base URL, when --mirror is not given" },
  { name: "XDG_CACHE_HOME", description: "The download cache is $XDG_CACHE_HOME/rootless-k8s (default ~/.cache/rootless-k8s)" },
  ...networkEnvironment,
];

export function manifestFrom(args: Parsed): Manifest {
  const file = opt.str(args, "manifest");
  return loadManifest(file ? { file } : {});
}

/** The arch/runtime/network selection from flags; the arch defaults to the running binary's. */
export function selectionFrom(args: Parsed, hostArch: () => Arch): Selection {
  return {
    arch: (opt.str(args, "arch") as Arch | undefined) ?? hostArch(),
    runtime: (opt.str(args, "runtime") as Runtime | undefined) ?? "containerd",
    network: (opt.str(args, "network") as Network | undefined) ?? "builtin",
    ...(opt.str(args, "mode") ? { mode: opt.str(args, "mode") as NodeMode } : {}),
  };
}

/** --ca-file, when given (an empty name is refused). */
export function caFileFrom(args: Parsed, command: string): string | undefined {
  const caFile = opt.str(args, "ca-file");
  if (caFile === "") throw new UsageError("--ca-file needs a file name", command);
  return caFile;
}

export function fetchOptionsFrom(args: Parsed, env: NodeJS.ProcessEnv, signal: AbortSignal, command: string): FetchOptions {
  const caFile = caFileFrom(args, command);
  return {
    cacheDir: defaultCacheDir(env),
    mirror: mirrorFrom(opt.str(args, "mirror"), env),
    ...(caFile ? { caFile } : {}),
    concurrency: opt.int(args, "concurrency", 1, 16, command) ?? DEFAULT_CONCURRENCY,
    signal,
    env,
  };
}
