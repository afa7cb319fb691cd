// `rootless-k8s cache`: the download cache ($XDG_CACHE_HOME/rootless-k8s): fill it ahead of time,
// list it, print where it is, or empty it.
import { opt, type CommandSpec, type Parsed } from "../args";
import { ExitCode, UsageError } from "../errors";
import { downloadEnvironment, downloadOptions, manifestOption, selectionOptions, versionOptions } from "../fetch/cli";
import { loadComponents } from "../apply/components";
import * as fetch from "../fetch/index";
import * as cli from "../fetch/cli";
import { hostArch } from "../self/releases";
import type { Context } from "../context";

const ACTIONS = ["fetch", "list", "path", "clean"] as const;

export const spec: CommandSpec = {
  name: "cache",
  summary: "Manage the download cache (fetch, list, path, clean)",
  usage: "rootless-k8s cache <fetch|list|path|clean> [options]",
  description: `The cache keeps every verified download under its checksum, so a second install downloads
nothing. \`fetch\` fills it for a selection (to go offline, or before a maintenance window; with
--bundle FILE from an offline bundle, verifying every file), \`list\`
shows what is in it, \`path\` prints its folder, \`clean\` empties it (refused while another run uses it).`,
  positionals: [{ name: "action", description: "fetch, list, path or clean", required: true }],
  options: {
    ...selectionOptions,
    ...manifestOption,
    ...versionOptions,
    ...downloadOptions,
    bundle: { type: "string", valueName: "FILE", description: "fetch: take the files from this offline bundle, with no network" },
    "trust-bundle": { type: "boolean", description: "fetch: accept a bundle whose checksums differ from the pinned ones" },
    json: { type: "boolean", description: "list: print JSON" },
  },
  environment: downloadEnvironment,
  examples: ["rootless-k8s cache fetch", "rootless-k8s cache list", "rootless-k8s cache clean"],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const action = args.positionals[0] as (typeof ACTIONS)[number];
  if (!ACTIONS.includes(action)) throw new UsageError(`unknown action "${action}" (use ${ACTIONS.join(", ")})`, spec.name);
  const dir = fetch.defaultCacheDir(ctx.env);
  switch (action) {
    case "path":
      ctx.out.out(dir);
      return ExitCode.Ok;
    case "clean": {
      const lock = await fetch.acquireLock(fetch.cacheLayout(dir).lockDir, { purpose: "rootless-k8s cache clean" });
      try {
        const r = await fetch.cleanCache(dir);
        ctx.out.out(`removed ${r.files} file${r.files === 1 ? "" : "s"} (${fetch.formatBytes(r.bytes)}) from ${dir}`);
      } finally {
        await lock.release();
      }
      return ExitCode.Ok;
    }
    case "list":
      return list(ctx, args, dir);
    case "fetch": {
      const bundle = opt.str(args, "bundle");
      const trust = opt.bool(args, "trust-bundle");
      if (trust && !bundle) throw new UsageError("--trust-bundle needs --bundle FILE", spec.name);
      const sel = cli.selectionFrom(args, () => hostArch());
      const manifest =
        bundle && trust
          ? await fetch.readBundleManifest(bundle, ctx.signal)
          : (await loadComponents(cli.componentSourceFrom(args, spec.name), sel.arch, ctx.env, ctx.signal)).manifest;
      const artifacts = fetch.selectArtifacts(manifest, sel);
      const options = { ...cli.fetchOptionsFrom(args, ctx.env, ctx.signal, spec.name), ...(bundle ? { bundle, trustBundle: trust } : {}) };
      const fetched = await fetch.fetchArtifacts(artifacts, {
        ...options,
        progress: await fetch.createFetchProgress(ctx.out, artifacts.length),
      });
      const downloaded = fetched.filter((f) => f.source === "network");
      const files = `${fetched.length} file${fetched.length === 1 ? "" : "s"}`;
      ctx.out.out(`${files} verified in ${dir} (${downloaded.length} downloaded, ${fetched.length - downloaded.length} already cached)`);
      return ExitCode.Ok;
    }
  }
}

/** Cache entries, named from the manifest when it knows their checksum. */
async function list(ctx: Context, args: Parsed, dir: string): Promise<number> {
  const manifest = cli.manifestFrom(args);
  const names = new Map<string, string>();
  for (const a of manifest.artifacts) {
    for (const [arch, c] of Object.entries(a.checksums)) if (c) names.set(c.value, `${a.component} ${a.version} ${arch} (${a.id})`);
  }
  const entries = await fetch.listCache(dir);
  if (opt.bool(args, "json")) {
    ctx.out.out(JSON.stringify({ dir, entries: entries.map((e) => ({ ...e, name: names.get(e.value) ?? null })) }, null, 2));
    return ExitCode.Ok;
  }
  if (entries.length === 0) {
    ctx.out.out(`${dir} is empty`);
    return ExitCode.Ok;
  }
  for (const e of entries) {
    const what = names.get(e.value) ?? "not in this manifest";
    ctx.out.out(
      `${e.algorithm}:${e.value.slice(0, 12)}  ${fetch.formatBytes(e.size).padStart(9)}  ${e.partial ? "partial download" : e.unpacked ? `unpacked: ${what}` : what}`,
    );
  }
  ctx.out.out(`total ${fetch.formatBytes(entries.reduce((n, e) => n + e.size, 0))} in ${dir}`);
  return ExitCode.Ok;
}
