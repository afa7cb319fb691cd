// The tool's name, version and release location. scripts/bundle.mjs replaces __RK8S_VERSION__ at
// build time (from package.json, or RK8S_VERSION for test builds); `npm run dev` shows "0.0.0-dev".
declare const __RK8S_VERSION__: string | undefined;
declare const __RK8S_RELEASE_PUBKEY__: string | undefined;

export const VERSION: string = typeof __RK8S_VERSION__ === "string" ? __RK8S_VERSION__ : "0.0.0-dev";

/** The command's name, as installed and as shown in help. */
export const BIN_NAME = "rootless-k8s";

/**
 * Where releases are published, in the layout of docs/binary.md, "Release layout" (latest.txt,
 * <version>/rootless-k8s-linux-<arch>, <version>/SHA256SUMS, install.sh). Overridden by
 * ROOTLESS_K8S_DOWNLOAD_URL or --base-url. scripts/install.sh holds the same default.
 */
export const DEFAULT_DOWNLOAD_URL = "https://dl.rootless-k8s.dev";

/**
 * The ed25519 public key that signs releases (SHA256SUMS.sig), as base64 of its SPKI DER form.
 * scripts/bundle.mjs compiles it in from the signing key of the build (ROOTLESS_K8S_SIGNING_KEY, or
 * RK8S_RELEASE_PUBKEY); empty in a build without one, which then cannot self-upgrade.
 */
export const RELEASE_PUBLIC_KEY: string = typeof __RK8S_RELEASE_PUBKEY__ === "string" ? __RK8S_RELEASE_PUBKEY__ : "";
