// `--kubernetes-version V`: a version (1.37.2), a minor (1.37) or a channel (stable, latest), resolved
// through upstream's own release files into a version set (a Manifest) whose every checksum comes
// from the checksum file upstream publishes beside the artifact, fetched over HTTPS from the same
// origin (or the --mirror that keeps its paths). The companions of each supported minor are those of
// the compatibility table, assets/releases.json. docs/manifest.md, "Choosing a Kubernetes version".
import table from "../../assets/releases.json";
import { ExitCode, UsageError, UserError } from "../errors";
import { digestFromSideFile } from "./digest";
import { fetchSmallText } from "./fetch";
import type { HttpClient } from "./http";
import { loadManifest } from "./manifest";
import { applyMirror } from "./mirror";
import { expandTemplate, fileNameOf } from "./select";
import { newestPatch, type TagListing } from "./tags";
import type { Arch, HashAlgorithm, Manifest, ManifestArtifact, PinnedChecksum } from "./types";

export type VersionSpec =
  | { kind: "exact"; version: string; minor: string }
  | { kind: "minor"; minor: string }
  | { kind: "channel"; channel: "stable" | "latest" };

interface Companion {
  version?: string;
  source?: string;
  unavailable?: string;
}
interface ReleaseTable {
  kubernetes: {
    channel: string;
    url: string;
    checksum: { url: string; algorithm: HashAlgorithm };
    binaries: string[];
    arch: Partial<Record<Arch, string>>;
  };
  /** Where each companion's newest patch is looked up: its repository's tags. */
  tags: { url: string; source: string; repos: Record<string, Omit<TagListing, "url">> };
  minors: Record<string, { companions: Record<string, Companion>; images?: Record<string, { name: string; source: string }> }>;
}
const RELEASES = table as ReleaseTable;
const SOURCE = "assets/releases.json";

/** The minors the compatibility table supports, oldest first. */
export function supportedMinors(): string[] {
  return Object.keys(RELEASES.minors).sort((a, b) => Number(a.split(".")[1]) - Number(b.split(".")[1]));
}

function supportedRange(): string {
  const m = supportedMinors();
  return m.length > 1 ? `${m[0]} to ${m.at(-1)}` : (m[0] ?? "none");
}

const EXACT = /^v?(\d+)\.(\d+)\.(\d+)$/;
const MINOR = /^v?(\d+)\.(\d+)$/;

/** Parses the flag's value; bad syntax is usage (exit 2). */
export function parseVersionSpec(raw: string, flag = "--kubernetes-version", command?: string): VersionSpec {
  const s = raw.trim();
  if (s === "stable" || s === "latest") return { kind: "channel", channel: s };
  const e = EXACT.exec(s);
  if (e) return { kind: "exact", version: `${Number(e[1])}.${Number(e[2])}.${Number(e[3])}`, minor: `${Number(e[1])}.${Number(e[2])}` };
  const m = MINOR.exec(s);
  if (m) return { kind: "minor", minor: `${Number(m[1])}.${Number(m[2])}` };
  throw new UsageError(`${flag} takes a Kubernetes version (1.37.2), a minor (1.37) or a channel (stable, latest), not "${raw}"`, command);
}

function outsideTable(what: string): UserError {
  const newest = supportedMinors().at(-1);
  return new UserError(`${what} is outside the Kubernetes minors this rootless-k8s supports (${supportedRange()})`, {
    exitCode: ExitCode.Refused,
    fix: `choose one of them (for example --kubernetes-version ${newest}), or a newer rootless-k8s (rootless-k8s self-upgrade)`,
  });
}

/** What the resolution needs of the network: one small text file per URL (mirror applied here). */
export interface ReleaseSource {
  client: HttpClient;
  mirror: string | null;
  signal?: AbortSignal;
}

async function getText(src: ReleaseSource, url: string): Promise<{ text: string; url: string } | { missing: string; url: string }> {
  const where = applyMirror(url, src.mirror);
  const r = await fetchSmallText(src.client, where, src.signal ?? new AbortController().signal);
  if (typeof r === "string") return { text: r, url: where };
  if (/^HTTP 4\d\d$/.test(r.unavailable)) return { missing: r.unavailable, url: where };
  throw new UserError(`cannot read ${where}: ${r.unavailable}`, {
    exitCode: ExitCode.Network,
    fix: "check the network or --mirror and re-run; or install the set built into this rootless-k8s with --pinned",
  });
}

const CHANNEL_TEXT = /^v(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?$/;

/** Reads a channel file (stable.txt, stable-1.37.txt...) and returns the version it names. */
async function readChannel(src: ReleaseSource, channel: string): Promise<{ version: string; minor: string; file: string }> {
  const url = RELEASES.kubernetes.channel.replace("{channel}", channel);
  const r = await getText(src, url);
  if ("missing" in r) {
    throw new UserError(`the release channel ${channel} is not published at ${r.url} (${r.missing})`, {
      exitCode: ExitCode.Usage,
      fix: `name a supported minor (${supportedMinors().join(", ")}) or an exact version such as ${supportedMinors().at(-1)}.0`,
    });
  }
  const line = r.text.trim();
  const m = CHANNEL_TEXT.exec(line);
  if (!m || r.text.length > 64) {
    throw new UserError(`the channel file ${r.url} does not hold a Kubernetes version (it starts "${line.slice(0, 40)}")`, {
      exitCode: ExitCode.Verification,
      fix: "nothing was installed; check the mirror (--mirror) serves dl.k8s.io's release/ files as they are, or name an exact version",
    });
  }
  return { version: `${m[1]}.${m[2]}.${m[3]}${m[4] ?? ""}`, minor: `${m[1]}.${m[2]}`, file: `${channel}.txt` };
}

export interface ResolvedKubernetes {
  version: string;
  minor: string;
  /** How it was chosen, in words: "stable-1.37.txt names v1.37.2". */
  how: string;
}

/** A spec → one exact Kubernetes version of a supported minor, through the channel files. */
export async function resolveKubernetesVersion(spec: VersionSpec, src: ReleaseSource): Promise<ResolvedKubernetes> {
  if (spec.kind === "exact") {
    if (!RELEASES.minors[spec.minor]) throw outsideTable(`Kubernetes ${spec.version}`);
    return { version: spec.version, minor: spec.minor, how: `--kubernetes-version ${spec.version}` };
  }
  if (spec.kind === "minor" && !RELEASES.minors[spec.minor]) throw outsideTable(`Kubernetes ${spec.minor}`);
  const channel = spec.kind === "minor" ? `stable-${spec.minor}` : spec.channel;
  const c = await readChannel(src, channel);
  if (!RELEASES.minors[c.minor]) throw outsideTable(`the channel ${channel} (v${c.version})`);
  return { version: c.version, minor: c.minor, how: `${c.file} names v${c.version}` };
}

/** The checksum an upstream file gives for `fileName`; errors say which file and what to do. */
async function upstreamChecksum(
  src: ReleaseSource,
  url: string,
  fileName: string,
  algorithm: HashAlgorithm,
  label: string,
): Promise<PinnedChecksum | { missing: string; url: string }> {
  const r = await getText(src, url);
  if ("missing" in r) return r;
  const value = digestFromSideFile(r.text, fileName, algorithm);
  if (value === null) {
    throw new UserError(`the checksum file ${r.url} has no ${algorithm} for ${fileName} (${label})`, {
      exitCode: ExitCode.Verification,
      fix: "nothing was installed; check the mirror serves upstream's checksum files as they are, or install the built-in set with --pinned",
    });
  }
  return { algorithm, value, source: `upstream checksum file ${url}`, trust: "upstream" };
}

/**
 * The version set of Kubernetes `k` for `arch`: the six binaries from dl.k8s.io, each verified by
 * its .sha256, and the companions of its minor, each by the checksum file its project publishes
 * (a companion upstream publishes none for keeps the built-in pin of the same file, or is left out).
 * Missing files: the first Kubernetes binary's → exit 2 (no such version); a companion's → that
 * companion is left out of the set, with the reason in `unavailable` (a plan that needs it says so).
 */
export async function resolvedManifest(k: ResolvedKubernetes, arch: Arch, src: ReleaseSource): Promise<Manifest> {
  const builtin = loadManifest();
  const minor = RELEASES.minors[k.minor];
  if (!minor) throw outsideTable(`Kubernetes ${k.version}`);
  const kube = RELEASES.kubernetes;
  const token = kube.arch[arch];
  if (!token) throw outsideTable(`Kubernetes for ${arch}`);
  const artifacts: ManifestArtifact[] = [];
  const unavailable: Record<string, string> = {};
  const choices = [
    `Kubernetes ${k.version}: ${k.how}; its ${kube.binaries.length} binaries one by one from dl.k8s.io, each verified by the .sha256 upstream publishes beside it`,
  ];
  for (const name of kube.binaries) {
    const url = expandTemplate(kube.url.replace("{name}", name), k.version, token);
    const sumUrl = expandTemplate(kube.checksum.url.replace("{name}", name), k.version, token);
    const sum = await upstreamChecksum(src, sumUrl, fileNameOf(url), kube.checksum.algorithm, `${name} ${k.version}`);
    if ("missing" in sum) {
      if (artifacts.length === 0) throw await unknownVersion(k, src, sum);
      throw new UserError(`dl.k8s.io publishes no checksum file for ${name} ${k.version}: ${sum.url} (${sum.missing})`, {
        exitCode: ExitCode.Verification,
        fix: "nothing was installed; choose another patch release, or install the built-in set with --pinned",
      });
    }
    artifacts.push({
      id: name,
      component: "kubernetes",
      version: k.version,
      url: kube.url.replace("{name}", name),
      arch: { [arch]: token },
      format: "binary",
      binaries: [{ name }],
      checksums: { [arch]: sum },
      sideFiles: [],
    });
  }
  // Each companion's tags and checksum files are read side by side; the set keeps the table's order.
  type Outcome = { artifact?: ManifestArtifact; choice?: string; unavailable?: [string, string] };
  const outcomes = await Promise.all(
    Object.entries(minor.companions).map(async ([id, c]): Promise<Outcome> => {
      const base = builtin.artifacts.find((a) => a.id === id);
      if (!base) throw new Error(`${SOURCE}: no built-in artifact "${id}"`);
      if (c.unavailable || !c.version) return { unavailable: [base.component, c.unavailable ?? "not in the compatibility table"] };
      const baseToken = base.arch[arch];
      if (!baseToken) return {};
      const side = (base.sideFiles ?? []).find((s) => s.algorithm === "sha256") ?? base.sideFiles?.[0];
      if (!side) {
        // No checksum file upstream (cri-dockerd): only the signed binary's own pin of that very file.
        const pin = base.checksums[arch];
        if (base.version === c.version && pin)
          return {
            artifact: {
              ...base,
              version: c.version,
              notes: `${c.source ?? ""} (${SOURCE}, Kubernetes ${k.minor})`,
              checksums: { [arch]: pin },
              sideFiles: [],
            },
            choice: `${base.component} ${c.version}: ${c.source ?? SOURCE}; verified by the pin compiled into rootless-k8s (${pin.source})`,
          };
        return {
          unavailable: [base.component, `${base.component} ${c.version} has no checksum file upstream and no pin in this rootless-k8s`],
        };
      }
      const checksumOf = (v: string) =>
        upstreamChecksum(
          src,
          expandTemplate(side.url, v, baseToken),
          fileNameOf(expandTemplate(base.url, v, baseToken)),
          side.algorithm,
          `${id} ${v}`,
        );
      const newest = await newerPatch(id, c.version, src, checksumOf);
      const version = newest?.use ? newest.use.version : c.version;
      const source = `${c.source ?? SOURCE}${newest ? `; ${newest.words}` : ""}`;
      const sum = newest?.use ? newest.use.sum : await checksumOf(c.version);
      if ("missing" in sum) return { unavailable: [base.component, `its checksum file ${sum.url} is not published (${sum.missing})`] };
      return {
        artifact: {
          ...base,
          version,
          notes: `${source} (${SOURCE}, Kubernetes ${k.minor})`,
          arch: { [arch]: baseToken },
          checksums: { [arch]: sum },
          sideFiles: [],
        },
        choice: `${base.component} ${version}: ${source}; verified by ${nameOf(sum.source)}, upstream's checksum file`,
      };
    }),
  );
  for (const o of outcomes) {
    if (o.artifact) artifacts.push(o.artifact);
    if (o.choice) choices.push(o.choice);
    if (o.unavailable) unavailable[o.unavailable[0]] = o.unavailable[1];
  }
  for (const [component, why] of Object.entries(unavailable)) choices.push(`${component}: not in this set: ${why}`);
  // Add-on images: the table's for this minor (else the built-in set's names), by tag: the registry,
  // over HTTPS, is their upstream word.
  const images = (builtin.images ?? []).map((i) => {
    const t = minor.images?.[i.id];
    const name = t?.name ?? i.name;
    choices.push(`image ${name}, by tag: ${t?.source ?? "the built-in set's"}`);
    return { ...i, name, digest: null, source: `by tag (${SOURCE}, Kubernetes ${k.minor}): ${t?.source ?? "the built-in set's"}` };
  });
  return {
    schema: 1,
    name: `Kubernetes ${k.version} (${k.how}), verified by upstream's checksum files`,
    artifacts,
    images,
    origin: `--kubernetes-version (${k.how})`,
    choices,
    ...(Object.keys(unavailable).length ? { unavailable } : {}),
  };
}

/**
 * A companion's newest patch among its project's tags (cli/fetch/tags.ts), when newer than the
 * table's and its checksum file is read; `words` says what was found either way, for the plan.
 */
async function newerPatch(
  id: string,
  tableVersion: string,
  src: ReleaseSource,
  checksumOf: (v: string) => ReturnType<typeof upstreamChecksum>,
): Promise<{ use?: { version: string; sum: PinnedChecksum }; words: string } | null> {
  const repo = RELEASES.tags.repos[id];
  if (!repo) return null;
  const minor = tableVersion.split(".").slice(0, 2).join(".");
  const n = await newestPatch({ url: RELEASES.tags.url, ...repo }, tableVersion, src);
  if ("unread" in n) return { words: `the table's ${tableVersion}: its tags could not be read (${n.url}: ${n.unread})` };
  if (n.version === tableVersion)
    return {
      words: n.tags
        ? `no newer ${minor} patch among ${repo.repo}'s ${n.tags} ${minor} tags`
        : `the table's ${tableVersion}: ${repo.repo} has no ${minor}.Z tag`,
    };
  let sum: Awaited<ReturnType<typeof upstreamChecksum>>;
  try {
    sum = await checksumOf(n.version);
  } catch (e) {
    if (!(e instanceof UserError)) throw e;
    return { words: `the table's ${tableVersion}: ${n.version}, the newest tag, could not be verified (${e.message})` };
  }
  if ("missing" in sum)
    return { words: `the table's ${tableVersion}: ${n.version}, the newest tag, has no checksum file yet (${sum.url}: ${sum.missing})` };
  return {
    use: { version: n.version, sum },
    words: `${n.version} is the newest ${minor} patch among ${repo.repo}'s tags (the table names ${tableVersion})`,
  };
}

/** The file name at the end of "upstream checksum file URL". */
function nameOf(source: string): string {
  return source.split("/").at(-1) ?? source;
}

/** The first binary of a version has no checksum file: no such release. Names what the channel offers. */
async function unknownVersion(k: ResolvedKubernetes, src: ReleaseSource, miss: { missing: string; url: string }): Promise<UserError> {
  let offer = "";
  try {
    const c = await readChannel(src, `stable-${k.minor}`);
    offer = `; stable-${k.minor} is ${c.version}`;
  } catch {
    offer = "";
  }
  return new UserError(`Kubernetes ${k.version} is not published (${miss.url}: ${miss.missing})${offer}`, {
    exitCode: ExitCode.Usage,
    fix: `name a published patch release, or the minor alone (--kubernetes-version ${k.minor}) for its newest`,
  });
}
