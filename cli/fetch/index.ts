/**
 * cli/fetch: the components manifest, verified downloads, the cache, extraction and offline bundles.
 * Nothing unverified is ever returned or installed.
 *
 * Typical use (install / upgrade):
 *
 *   const manifest = trustBundle && bundle ? await readBundleManifest(bundle) : loadManifest({ file: manifestFlag });
 *   const versions = versionSet(manifest);                       // { kubernetes: "1.36.0", etcd: "3.6.14", ... }
 *   const setId = versionSetId(manifest, arch);                  // same id for the manifest and a bundle made from it
 *   // network: the driver whose binary must be downloaded: "slirp4netns" only when the node uses
 *   // the bundled slirp4netns; "builtin" (or "pasta") when it uses RootlessKit's driver or a host binary.
 *   const artifacts = selectArtifacts(manifest, { arch, runtime, network });
 *   const lock = await acquireInstallLock();                     // exit 6 when another run holds it
 *   try {
 *     const fetched = await fetchArtifacts(artifacts, {
 *       cacheDir: defaultCacheDir(env), mirror: mirrorFrom(flags.mirror, env), caFile, signal,
 *       progress: await createFetchProgress(out, artifacts.length), bundle, trustBundle,
 *     });
 *     const bins = await installBinaries(fetched, `${dataDir}/versions/${setId}/bin`, { signal });
 *     // bins: [{ name, path, dir, artifactId, component, version, sha256 }] for the receipt
 *   } finally {
 *     await lock.release();
 *   }
 *
 * Errors are UserError with exit code 2 (bad manifest/flag), 3 (bundle for another arch), 4 (verification:
 * checksum, side file, unsafe archive, bundle mismatch), 5 (network after retries, 404), 6 (locked),
 * 130 (aborted through the signal; partial downloads are kept and resumed by the next run).
 * Heavy modules (undici, tar, ora) are imported lazily inside the functions that need them.
 */
export type {
  Arch,
  ArtifactFormat,
  BinarySpec,
  FetchedArtifact,
  FetchSource,
  HashAlgorithm,
  Manifest,
  ManifestArtifact,
  Network,
  PinnedChecksum,
  ResolvedArtifact,
  Runtime,
  Selection,
  SideFile,
  When,
} from "./types";
export { ARCHES, NETWORKS, RUNTIMES } from "./types";
export { loadManifest, parseManifest, MANIFEST_SCHEMA_DOC } from "./manifest";
export { allArtifactsFor, resolveArtifact, selectArtifacts, versionSet, versionSetId } from "./select";
export { applyMirror, mirrorFrom, MIRROR_ENV } from "./mirror";
export { cachedSize, cacheLayout, cleanCache, defaultCacheDir, listCache, type CacheEntry } from "./cache";
export { fetchArtifacts, DEFAULT_CONCURRENCY, type FetchOptions } from "./fetch";
export { HTTP_DEFAULTS, type HttpOptions } from "./http";
export { installBinaries, type InstalledBinary } from "./extract";
export { acquireInstallLock, acquireLock, defaultInstallLockDir, LOCK_DEFAULTS, type LockHandle, type LockOwner } from "./lock";
export {
  extractBundleImages,
  readBundleIndex,
  readBundleManifest,
  writeBundle,
  BUNDLE_INDEX,
  type BundleImage,
  type BundleIndex,
  type BundledImageInput,
} from "./bundle";
export { createFetchProgress, describeFetched, meterProgress, plainProgress, type FetchProgress } from "./progress";
export { formatBytes } from "./format";
export {
  parseVersionSpec,
  resolveKubernetesVersion,
  resolvedManifest,
  supportedMinors,
  type ReleaseSource,
  type ResolvedKubernetes,
  type VersionSpec,
} from "./releases";
export { createHttpClient } from "./http";
