// os-release(5): KEY=value lines, values optionally quoted with shell-style escapes. Read the way
// systemd reads it: comments and blank lines skipped, CRLF tolerated, the last assignment wins.
import type { DistroFacts, Family } from "../facts";

export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rawLine of text.split(/\r?\n|\r/)) {
    const line = rawLine.trim();
    if (!line || line.startsWith("#")) continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) continue;
    out[m[1]!] = unquote(m[2]!.trim());
  }
  return out;
}

function unquote(v: string): string {
  const q = v[0];
  if ((q === '"' || q === "'") && v.length >= 2 && v.endsWith(q)) {
    const inner = v.slice(1, -1);
    return q === '"' ? inner.replace(/\\(["\\$`])/g, "$1") : inner;
  }
  return v;
}

const RHEL_IDS = new Set(["rhel", "fedora", "centos", "amzn", "ol", "rocky", "almalinux"]);
const ARCH_IDS = new Set(["arch", "manjaro", "manjaro-arm", "steamos"]);

/**
 * The package family a distribution belongs to, from ID and ID_LIKE: it decides which package
 * manager the fixes name. ID_LIKE wins over ID-only guesses (Manjaro/SteamOS without ID_LIKE -> arch).
 */
export function familyOf(id: string, idLike: readonly string[]): Family {
  const ids = [id, ...idLike].map((s) => s.toLowerCase());
  if (ids.some((s) => s === "debian" || s === "ubuntu")) return "debian";
  if (ids.some((s) => RHEL_IDS.has(s))) return "rhel";
  if (ids.some((s) => s.includes("suse") || s === "sles")) return "suse";
  if (ids.some((s) => ARCH_IDS.has(s))) return "arch";
  if (ids.includes("alpine")) return "alpine";
  return "other";
}

export function distroFromOsRelease(text: string | null, source: string | null): DistroFacts {
  const kv = text === null ? {} : parseOsRelease(text);
  const id = kv.ID ?? "linux";
  const idLike = (kv.ID_LIKE ?? "").split(/\s+/).filter(Boolean);
  return {
    id,
    versionId: kv.VERSION_ID ?? null,
    idLike,
    prettyName: kv.PRETTY_NAME ?? kv.NAME ?? null,
    versionCodename: kv.VERSION_CODENAME ?? null,
    family: familyOf(id, idLike),
    source: text === null ? null : source,
  };
}
