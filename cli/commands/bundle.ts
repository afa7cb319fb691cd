// `rootless-k8s bundle`: download and verify every component for one architecture and write them,
// with their manifest, into one tar for `install --bundle FILE` on a machine without network.
import { opt, type CommandSpec, type Parsed } from "../args";
import { ExitCode, UsageError } from "../errors";
import { downloadEnvironment, downloadOptions, manifestOption, versionOptions } from "../fetch/cli";
import { loadComponents } from "../apply/components";
import { ARCHES } from "../fetch/types";
import * as fetch from "../fetch/index";
import * as cli from "../fetch/cli";
import { hostArch } from "../self/releases";
import * as path from "node:path";
import * as fs from "node:fs/promises";
import type { Context } from "../context";
import { readImageArchive } from "../fetch/image-archive";
import { addonImageGapNote, addonImageGaps } from "../plan/addons";

export const spec: CommandSpec = {
  name: "bundle",
  summary: "Write an offline bundle of every component for air-gapped installs",
  usage:
    "rootless-k8s bundle -o FILE [--arch ARCH] [--image FILE]... [--manifest FILE | --kubernetes-version V] [--mirror URL] [--ca-file FILE]",
  description: `Downloads (or takes from the cache) every artifact of the version set for one architecture,
all runtimes and network drivers included, verifies each against its pinned checksum, and writes one
tar: the files plus a manifest with their checksums and sizes. On the offline machine,
\`rootless-k8s install --bundle FILE\` verifies every file again and needs no network at all. A bundle
made from another manifest is refused there unless --trust-bundle is given. With
--kubernetes-version V the bundle carries that version's set, each file verified by upstream's
checksum file (and says so); the offline machine takes it with --trust-bundle.

--image FILE adds an image archive (\`docker save\` or OCI layout tar, as \`rootless-k8s image load\`
takes): it is checked before anything is downloaded (named images, one for --arch, every blob),
carried byte for byte with its sha256, and loaded into the node by \`install --bundle\` once the
node is Ready. The add-ons' images (CoreDNS, local-path-provisioner and its helper, metrics-server)
come the same way: for each one the version set names that no --image carries, bundle says which
archive to add, or which --no-<add-on> install flag to use offline; for one it carries under
another digest than the pinned one (its pod names name@digest), how to save the pinned image.`,
  options: {
    output: { type: "string", short: "o", valueName: "FILE", description: "Write the bundle here (required)" },
    arch: {
      type: "string",
      valueName: "ARCH",
      description: "Architecture of the offline machine (default: this machine's)",
      choices: ARCHES,
    },
    image: {
      type: "string",
      valueName: "FILE",
      multiple: true,
      description: "Carry this image archive (docker save or OCI layout tar); install --bundle loads it",
    },
    ...manifestOption,
    ...versionOptions,
    ...downloadOptions,
  },
  environment: downloadEnvironment,
  examples: [
    "rootless-k8s bundle --arch amd64 -o rootless-k8s-amd64.tar",
    "rootless-k8s bundle -o node.tar --image busybox.tar --image app.tar",
    "rootless-k8s install --bundle rootless-k8s-amd64.tar   # on the offline machine",
  ],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const output = opt.str(args, "output");
  if (!output) throw new UsageError("missing -o FILE (where to write the bundle)", spec.name);
  const file = path.resolve(ctx.cwd, output);
  // Checked before downloading anything: the folder must exist and be writable.
  await fs.access(path.dirname(file), fs.constants.W_OK).catch(() => {
    throw new UsageError(`-o ${output}: the folder ${path.dirname(file)} does not exist or is not writable`, spec.name);
  });
  const arch = (opt.str(args, "arch") as "amd64" | "arm64" | undefined) ?? hostArch();
  const { manifest } = await loadComponents(cli.componentSourceFrom(args, spec.name), arch, ctx.env, ctx.signal);
  // Image archives are checked (and hashed) before anything is downloaded.
  const images: fetch.BundledImageInput[] = [];
  const inArchives: { name: string; digest: string | null; file: string }[] = [];
  for (const f of opt.list(args, "image")) {
    const a = await readImageArchive(path.resolve(ctx.cwd, f), { arch, signal: ctx.signal, hash: true });
    images.push({ file: a.file, sha256: a.sha256 as string, size: a.size, names: a.images.map((i) => i.name) });
    inArchives.push(...a.images.map((i) => ({ name: i.name, digest: i.digest, file: f })));
  }
  const artifacts = fetch.allArtifactsFor(manifest, arch);
  const options = cli.fetchOptionsFrom(args, ctx.env, ctx.signal, spec.name);
  const fetched = await fetch.fetchArtifacts(artifacts, {
    ...options,
    progress: await fetch.createFetchProgress(ctx.out, artifacts.length),
  });
  const written = await fetch.writeBundle(fetched, manifest, arch, file, ctx.signal, images);
  const names = images.flatMap((i) => i.names);
  const carried = images.length ? ` and ${images.length} image archive${images.length > 1 ? "s" : ""} (${names.join(", ")})` : "";
  ctx.out.out(
    `wrote ${file} (${fetch.formatBytes(written.size)}): ${fetched.length} files for ${arch}, version set ${fetch.versionSetId(manifest, arch)}${carried}`,
  );
  for (const g of addonImageGaps(manifest.images ?? [], inArchives))
    ctx.out.err(`${ctx.out.errStyle.yellow("note:")} ${addonImageGapNote(g, "bundle")}`);
  ctx.out.out(`use it offline with: rootless-k8s install --bundle ${file}`);
  return ExitCode.Ok;
}
