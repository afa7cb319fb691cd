// `rootless-k8s components` (alias `versions`): what would be downloaded and installed, and how each
// file is verified. Reads the manifest and the cache only; the network only for --kubernetes-version.
import { opt, type CommandSpec, type Parsed } from "../args";
import { ExitCode } from "../errors";
import { caFileOption, componentSourceFrom, manifestOption, mirrorOption, selectionOptions, versionOptions } from "../fetch/cli";
import * as fetch from "../fetch/index";
import { selectionFrom } from "../fetch/cli";
import { loadComponents } from "../apply/components";
import { hostArch } from "../self/releases";
import type { Context } from "../context";

export const spec: CommandSpec = {
  name: "components",
  summary: "List the components that would be installed on this host",
  usage: "rootless-k8s components [--arch ARCH] [--runtime NAME] [--network DRIVER] [--manifest FILE | --kubernetes-version V] [--json]",
  description: `Lists, for one architecture, runtime and network driver, every file that install downloads:
component, version, size (when known or cached), its checksum and who vouches for it (a pin compiled
into this binary or written in --manifest, or the checksum file upstream publishes beside the file),
the side files compared with it, and the binaries taken from it. Nothing is downloaded but, with
--kubernetes-version, upstream's channel and checksum files.`,
  options: {
    ...selectionOptions,
    ...manifestOption,
    ...versionOptions,
    mirror: mirrorOption,
    "ca-file": caFileOption,
    json: { type: "boolean", description: "Print the same as JSON" },
  },
  environment: [{ name: "XDG_CACHE_HOME", description: "Where cached sizes are read: $XDG_CACHE_HOME/rootless-k8s" }],
  examples: [
    "rootless-k8s components",
    "rootless-k8s versions --runtime crio --json",
    "rootless-k8s components --manifest ./private.json --arch arm64",
    "rootless-k8s components --kubernetes-version 1.37",
  ],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const sel = selectionFrom(args, () => hostArch());
  const { manifest } = await loadComponents(componentSourceFrom(args, spec.name), sel.arch, ctx.env, ctx.signal);
  const cacheDir = fetch.defaultCacheDir(ctx.env);
  const rows = await Promise.all(
    fetch.selectArtifacts(manifest, sel).map(async (a) => {
      const cached = await fetch.cachedSize(cacheDir, a.checksum);
      return { a, cached, size: cached ?? a.checksum.size ?? null };
    }),
  );
  if (opt.bool(args, "json")) {
    ctx.out.out(
      JSON.stringify(
        {
          selection: sel,
          manifest: {
            name: manifest.name,
            origin: manifest.origin,
            ...(manifest.unavailable ? { unavailable: manifest.unavailable } : {}),
            ...(manifest.choices ? { choices: manifest.choices } : {}),
          },
          versionSet: { id: fetch.versionSetId(manifest, sel.arch), versions: fetch.versionSet(manifest) },
          images: manifest.images ?? [],
          components: rows.map(({ a, cached, size }) => ({
            id: a.id,
            component: a.component,
            version: a.version,
            url: a.url,
            fileName: a.fileName,
            size,
            cached: cached !== null,
            checksum: a.checksum,
            trust: a.checksum.trust ?? "pin",
            sideFiles: a.sideFiles.map((s) => s.url),
            binaries: a.binaries,
          })),
        },
        null,
        2,
      ),
    );
    return ExitCode.Ok;
  }
  const s = ctx.out.style;
  const where = manifest.origin === "built-in" ? "the built-in manifest" : `manifest ${manifest.origin}`;
  ctx.out.out(`${s.bold(manifest.name)} (${where}), version set ${fetch.versionSetId(manifest, sel.arch)}`);
  ctx.out.out(`for ${sel.arch}, runtime ${sel.runtime}, network ${sel.network}`);
  for (const { a, cached, size } of rows) {
    const sizeText = size === null ? "size unknown" : `${fetch.formatBytes(size)}${cached !== null ? ", cached" : ""}`;
    ctx.out.out("");
    ctx.out.out(`${s.bold(a.component)} ${a.version}  ${a.fileName} (${sizeText})`);
    ctx.out.out(`  verified by: ${trustText(a.checksum)}`);
    if (a.sideFiles.length) ctx.out.out(`  compared with: ${a.sideFiles.map((x) => x.url).join(", ")}`);
    ctx.out.out(`  installs: ${a.binaries.map((b) => (b.dir ? `${b.dir}/${b.name}` : b.name)).join(" ")}`);
  }
  for (const [component, why] of Object.entries(manifest.unavailable ?? {})) {
    ctx.out.out("");
    ctx.out.out(`${s.bold(component)}: not in this set: ${why}`);
  }
  return ExitCode.Ok;
}

/** Who vouches for a checksum, in words (the one presenter of a checksum's trust). */
export function trustText(c: fetch.PinnedChecksum): string {
  return c.trust === "upstream" ? `${c.algorithm} from the ${c.source}` : `${c.algorithm} pinned from ${c.source}`;
}
