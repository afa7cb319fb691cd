// Versions of container tools, read from the plain text they print, old formats included, and
// reduced to the upstream version: no leading "v", no distro packaging suffix
// ("1.6.20~ds1" -> "1.6.20", "1.3.3-0ubuntu1~18.04.4" -> "1.3.3", crun "0.12.1.474-f5a2b5" -> "0.12.1"),
// while real pre-releases and editions stay ("1.2.0-rc.2", "1.0.0-rc92", "17.06.0-ce", "1.1.0+dev").

const KEPT_SUFFIX = /^-(?:rc|alpha|beta|pre|dev|ce|ee)(?:[.-]?[0-9A-Za-z]+)*?(?=$|[-+~])/i;

/** The upstream version inside a printed version string, or null if there is none. */
export function upstreamVersion(raw: string | null | undefined): string | null {
  if (!raw) return null;
  const m = /^v?(\d+(?:\.\d+)*)(.*)$/.exec(raw.trim());
  if (!m) return null;
  const parts = m[1]!.split(".");
  // A fourth numeric part is a git-describe build count (crun "0.12.1.474-f5a2b5"): drop it and the rest.
  if (parts.length > 3) return parts.slice(0, 3).join(".");
  let version = m[1]!;
  let rest = m[2]!;
  const kept = KEPT_SUFFIX.exec(rest);
  if (kept) {
    version += kept[0];
    rest = rest.slice(kept[0].length);
  }
  if (/^\+dev\b/.test(rest)) version += "+dev";
  return version;
}

/** Numeric [major, minor, patch] of an upstream version; null if it has none. */
export function versionTuple(v: string | null): [number, number, number] | null {
  const m = v ? /^(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(v) : null;
  return m ? [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] : null;
}

/** v >= floor on the numeric parts (pre-release tags are not ordered; "1.4.0-rc.1" counts as 1.4.0). */
export function atLeast(v: string | null, floor: string): boolean {
  const a = versionTuple(v);
  const b = versionTuple(floor);
  if (!a || !b) return false;
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! > b[i]!;
  return true;
}

export interface ParsedVersion {
  version: string | null;
  /** The version token exactly as printed. */
  raw: string | null;
}

const NONE: ParsedVersion = { version: null, raw: null };

function firstMatch(text: string, re: RegExp): ParsedVersion {
  const m = re.exec(text);
  return m ? { raw: m[1]!, version: upstreamVersion(m[1]) } : NONE;
}

/**
 * `containerd --version`:
 *   containerd version 0.2.4 commit: 7186...                          (0.2.x)
 *   containerd github.com/containerd/containerd v1.6.21 3dce8eb...     (upstream builds)
 *   containerd containerd.io 1.4.12 7b11cfa...                         (Docker's packages)
 *   containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3   (Debian)
 */
export function parseContainerdVersion(text: string): ParsedVersion {
  const line = text.split("\n").find((l) => /^\s*\S*containerd\s/.test(l));
  if (!line) return NONE;
  const t = line.trim().split(/\s+/);
  const token = t[1] === "version" ? t[2] : t[2];
  return token && /^v?\d/.test(token) ? { raw: token, version: upstreamVersion(token) } : NONE;
}

/** `runc --version`: "runc version 1.1.12" (first line); "runc version spec: 1.0.1-dev" has none. */
export function parseRuncVersion(text: string): ParsedVersion {
  return firstMatch(text, /^\s*\S*runc version (v?\d[^\s]*)/m);
}

/** `crun --version`: "crun version 1.8.1" (git builds: "crun version 0.12.1.474-f5a2b5"). */
export function parseCrunVersion(text: string): ParsedVersion {
  return firstMatch(text, /^\s*crun version (v?\d\S*)/m);
}

/**
 * `crio --version`: "crio version 1.17.1" up to 1.17; from 1.18 a table whose "Version:" row holds
 * it (the first line may be "crio version" alone or repeat the version); WARN lines may come first.
 */
export function parseCrioVersion(text: string): ParsedVersion {
  const row = firstMatch(text, /^\s*Version:\s+(v?\d\S*)/m);
  return row.raw ? row : firstMatch(text, /^\s*crio version (v?\d\S*)/m);
}

/** `rootlesskit --version`: "rootlesskit version 1.1.0". */
export function parseRootlesskitVersion(text: string): ParsedVersion {
  return firstMatch(text, /^\s*rootlesskit version (v?\d\S*)/m);
}

/** `slirp4netns --version`: "slirp4netns version 1.1.8" (+ commit, libslirp lines). */
export function parseSlirp4netnsVersion(text: string): ParsedVersion {
  return firstMatch(text, /^\s*slirp4netns version (v?\d\S*)/m);
}

/**
 * `pasta --version`: "pasta 2024_09_06.6b38f07" ("passt version 2023_05_09.96f8d55-10-gf1e0a67" in
 * some builds; passt versions are dates), kept as printed. Debian 13 builds print their package
 * version, "pasta 0.0~git20250503.587980c-2+deb13u1": read as the upstream date 2025_05_03.587980c.
 * Debian 12's snapshot build prints "pasta unknown version", which has none.
 */
export function parsePastaVersion(text: string): ParsedVersion {
  const m = /^\s*(?:pasta|passt)(?: version)? (\d{4}_\d{2}_\d{2}\S*)/m.exec(text);
  if (m) return { raw: m[1]!, version: m[1]! };
  const deb = /^\s*(?:pasta|passt) (\S*~git(\d{4})(\d{2})(\d{2})\.([0-9a-f]+)\S*)/m.exec(text);
  return deb ? { raw: deb[1]!, version: `${deb[2]}_${deb[3]}_${deb[4]}.${deb[5]}` } : NONE;
}

/** `fuse-overlayfs --version`: "fuse-overlayfs: version 1.10" (other lines may come first). */
export function parseFuseOverlayfsVersion(text: string): ParsedVersion {
  return firstMatch(text, /^\s*fuse-overlayfs: version (v?\d\S*)/m);
}

/** `nsenter --version`: "nsenter from util-linux 2.38.1". */
export function parseUtilLinuxVersion(text: string): ParsedVersion {
  return firstMatch(text, /util-linux (v?\d\S*)/);
}

/** `nft --version`: "nftables v1.0.6 (Lester Gooch #5)". */
export function parseNftVersion(text: string): ParsedVersion {
  return firstMatch(text, /^\s*nftables (v?\d\S*)/m);
}

export interface IptablesVersion extends ParsedVersion {
  backend: "legacy" | "nf_tables" | null;
}

/**
 * `iptables --version`: "iptables v1.8.9 (nf_tables)" / "iptables v1.8.9 (legacy)"; before 1.8 there
 * was only the legacy backend and no suffix ("iptables v1.6.1").
 */
export function parseIptablesVersion(text: string): IptablesVersion {
  const m = /^\s*iptables v(\d[^\s]*)(?:\s+\((legacy|nf_tables)\))?/m.exec(text);
  if (!m) return { ...NONE, backend: null };
  const version = upstreamVersion(m[1]);
  const backend = (m[2] as IptablesVersion["backend"]) ?? (atLeast(version, "1.8.0") ? null : "legacy");
  return { raw: m[1]!, version, backend };
}

/** iptables-nft 1.8.0 to 1.8.3 break kube-proxy's rules (k3s check-config, kubernetes#71305). */
export function isBadIptablesNft(v: IptablesVersion): boolean {
  return v.backend === "nf_tables" && atLeast(v.version, "1.8.0") && !atLeast(v.version, "1.8.4");
}

/** `systemctl --version`: "systemd 252 (252.38-1~deb12u1)" -> 252. */
export function parseSystemdVersion(text: string): number | null {
  const m = /^\s*systemd (\d+)/m.exec(text);
  return m ? Number(m[1]) : null;
}
