// The data of cli/fetch: the manifest as written in assets/components.json (schema: docs/manifest.md),
// an artifact resolved for one architecture, and what a fetch hands back. Plain types, no code.
import type { Arch } from "../host/facts";

export type { Arch };
export const ARCHES: readonly Arch[] = ["amd64", "arm64"];

export type Runtime = "containerd" | "crio" | "docker";
export const RUNTIMES: readonly Runtime[] = ["containerd", "crio", "docker"];

export type Network = "slirp4netns" | "pasta" | "builtin";
export const NETWORKS: readonly Network[] = ["slirp4netns", "pasta", "builtin"];

/** The cgroup mode of the node (cli/plan): some artifacts serve one mode only. */
export type NodeMode = "delegated" | "none";
export const NODE_MODES: readonly NodeMode[] = ["delegated", "none"];

export type HashAlgorithm = "sha256" | "sha512";
export const HASH_ALGORITHMS: readonly HashAlgorithm[] = ["sha256", "sha512"];

/** How an artifact is packed: a bare executable, or a tar archive (gzip-compressed or not). */
export type ArtifactFormat = "binary" | "tar.gz" | "tar";

/** What the node needs: the components that are downloaded depend on these choices. */
export interface Selection {
  arch: Arch;
  runtime: Runtime;
  network: Network;
  /** The node's cgroup mode; absent = either (what `components` and `cache fetch` list by default). */
  mode?: NodeMode;
}

/** A pinned checksum: the normal, strongest way an artifact is verified. */
export interface PinnedChecksum {
  algorithm: HashAlgorithm;
  /** Lower-case hex digest. */
  value: string;
  /** Where the value was read (repository, path, commit), for `rootless-k8s components`. */
  source: string;
  /** Size in bytes, when known (bundles record it). */
  size?: number;
  /**
   * Who vouches for the value: "pin" (compiled into the signed binary, or written in the --manifest
   * or bundle the user gave; the default) or "upstream" (read from the checksum file upstream
   * publishes beside the artifact, over HTTPS from the same origin: --kubernetes-version).
   */
  trust?: "pin" | "upstream";
}

/** A checksum file that upstream publishes next to the artifact, compared with the pin when fetched. */
export interface SideFile {
  /** URL template; same placeholders as the artifact URL. */
  url: string;
  algorithm: HashAlgorithm;
}

/** One binary taken from an artifact. */
export interface BinarySpec {
  /** Its name once installed. */
  name: string;
  /** Member path inside the archive (templated); absent for format "binary". */
  path?: string;
  /** Sub-folder of the bin folder it goes to ("cni" for CNI plugins); absent = the bin folder itself. */
  dir?: string;
}

/** Which selections need the artifact; an absent list means "any". */
export interface When {
  runtime?: Runtime[];
  network?: Network[];
  mode?: NodeMode[];
}

/** One downloadable file, as written in the manifest. */
export interface ManifestArtifact {
  /** Unique within the manifest, e.g. "kubernetes-server", "etcd". */
  id: string;
  /** The component it provides, e.g. "kubernetes", "cni-plugins" (the key of the version set). */
  component: string;
  version: string;
  /** Download URL template with {version} (no leading v) and {arch} (upstream's token). */
  url: string;
  /** Our arch → upstream's arch token. The artifact exists for exactly these arches. */
  arch: Partial<Record<Arch, string>>;
  format: ArtifactFormat;
  binaries: BinarySpec[];
  /** Mandatory for every arch listed in `arch`. */
  checksums: Partial<Record<Arch, PinnedChecksum>>;
  sideFiles?: SideFile[];
  when?: When;
  license?: string;
  homepage?: string;
  notes?: string;
}

/** The add-ons whose container image a manifest may pin. */
export const ADDON_IMAGE_IDS = ["coredns", "local-path-provisioner", "local-path-helper", "metrics-server"] as const;
export type AddonImageId = (typeof ADDON_IMAGE_IDS)[number];

/** A container image an add-on runs: its name with a tag, pinned by the digest the runtime resolves. */
export interface ManifestImage {
  id: AddonImageId;
  /** Normalized name with a tag, e.g. registry.k8s.io/coredns/coredns:v1.14.2. */
  name: string;
  /** sha256 of the image's manifest (or index); null when no digest with a source is known. */
  digest: string | null;
  /** Where the digest comes from (or why there is none). */
  source: string;
}

export interface Manifest {
  schema: 1;
  name: string;
  description?: string;
  artifacts: ManifestArtifact[];
  /** Add-on images (absent: the add-ons' default images, unpinned). */
  images?: ManifestImage[];
  /** Where it was loaded from: "built-in", a file path, or "bundle FILE" (not part of the JSON). */
  origin: string;
  /** Components a resolved set (--kubernetes-version) could not carry, with why (not part of the JSON). */
  unavailable?: Record<string, string>;
  /** How a resolved set was chosen and verified, a line per choice with its source (not part of the JSON). */
  choices?: string[];
}

/** An artifact with its templates expanded for one arch. */
export interface ResolvedArtifact {
  id: string;
  component: string;
  version: string;
  arch: Arch;
  /** Upstream URL (before any --mirror rewrite). */
  url: string;
  /** Last path segment of the URL: the name in a bundle and in SHA256SUMS-style side files. */
  fileName: string;
  format: ArtifactFormat;
  binaries: { name: string; path: string | null; dir: string | null }[];
  checksum: PinnedChecksum;
  sideFiles: SideFile[];
  /** "etcd 3.6.14 (amd64)", for messages. */
  label: string;
}

export type FetchSource = "cache" | "network" | "bundle";

/** A verified local file, in the cache, addressed by its checksum. */
export interface FetchedArtifact {
  artifact: ResolvedArtifact;
  /** Absolute path of the verified file in the cache. */
  file: string;
  size: number;
  source: FetchSource;
  /** How it was verified, in words: "sha256 pinned (…); side file agrees". */
  verification: string;
}
