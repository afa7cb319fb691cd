// A companion's newest patch release (issue 32): the tags of its project's repository that start with
// the table's X.Y (GitHub's "List matching references", git/matching-refs/tags/vX.Y.), the newest
// X.Y.Z of them. Only a hint: the caller uses that patch once the checksum file its project publishes
// for it is read, and otherwise keeps the table's version, saying why. Anything that cannot be read
// (no network, GitHub's rate limit of 60 requests an hour without a token, a --mirror that serves no
// tags) is a reason to keep the table's version, never an error.
import { fetchSmallText } from "./fetch";
import type { HttpClient } from "./http";
import { applyMirror } from "./mirror";

export interface TagListing {
  /** "https://api.github.com/repos/{repo}/git/matching-refs/tags/{prefix}" */
  url: string;
  repo: string;
  /** What the tag has before the version: "v" for v2.3.7. */
  prefix: string;
}

export type NewestPatch = { version: string; url: string; tags: number } | { unread: string; url: string };

const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/;

/** "2.3.7" → [2, 3, 7]; null for anything else (a release candidate, a two-part version). */
function parts(v: string): [number, number, number] | null {
  const m = SEMVER.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/** The newest X.Y.Z among `refs` whose X.Y is `version`'s, and never older than `version`. */
export function newestOfMinor(refs: string[], prefix: string, version: string): { version: string; tags: number } {
  const want = parts(version);
  let best = version;
  let tags = 0;
  if (!want) return { version, tags };
  for (const ref of refs) {
    if (!ref.startsWith(`refs/tags/${prefix}`)) continue;
    const p = parts(ref.slice(`refs/tags/${prefix}`.length));
    if (!p || p[0] !== want[0] || p[1] !== want[1]) continue;
    tags++;
    const b = parts(best) as [number, number, number];
    if (p[2] > b[2]) best = p.join(".");
  }
  return { version: best, tags };
}

export async function newestPatch(
  listing: TagListing,
  version: string,
  src: { client: HttpClient; mirror: string | null; signal?: AbortSignal },
): Promise<NewestPatch> {
  const p = parts(version);
  const minor = p ? `${p[0]}.${p[1]}.` : `${version}.`;
  const url = applyMirror(listing.url.replace("{repo}", listing.repo).replace("{prefix}", `${listing.prefix}${minor}`), src.mirror);
  let r: string | { unavailable: string };
  try {
    r = await fetchSmallText(src.client, url, src.signal ?? new AbortController().signal);
  } catch (e) {
    if (src.signal?.aborted) throw e;
    return { unread: (e as Error).message.split("\n")[0] ?? "error", url };
  }
  if (typeof r !== "string") return { unread: r.unavailable, url };
  let refs: string[];
  try {
    const data: unknown = JSON.parse(r);
    if (!Array.isArray(data)) return { unread: "not a list of references", url };
    refs = data.map((x) =>
      x && typeof x === "object" && typeof (x as { ref?: unknown }).ref === "string" ? (x as { ref: string }).ref : "",
    );
  } catch {
    return { unread: "not JSON", url };
  }
  return { ...newestOfMinor(refs, listing.prefix, version), url };
}
