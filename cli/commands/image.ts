// `rootless-k8s image load FILE...`: loads `docker save` or OCI image archives into the installed
// node's runtime, for nodes without a registry. Every archive is validated before any is loaded.
import { opt, type CommandSpec, type Parsed } from "../args";
import { ExitCode, UsageError } from "../errors";
import { installedPlan, loadImages } from "../apply/images";
import { addonImageGapNote, addonImageGaps, addonImagePins } from "../plan/addons";
import { readImageArchive, type ImageArchive } from "../fetch/image-archive";
import * as path from "node:path";
import type { Context } from "../context";

const ACTIONS = ["load"] as const;

export const spec: CommandSpec = {
  name: "image",
  summary: "Load image archives (docker save, OCI) into the node's runtime, without a registry",
  usage: "rootless-k8s image load FILE... [--prefix DIR]",
  description: `
Loads images from files into the installed node's runtime, so that pods can use them with no
registry. Each FILE is a \`docker save\` archive (manifest.json) or an OCI image layout in a tar
(oci-layout, index.json), gzip-compressed or not, whose images are named with full references
(\`io.containerd.image.name\` or \`org.opencontainers.image.ref.name\`, e.g.
docker.io/library/busybox:1.36.1). Every archive is read and checked before anything is loaded:
a readable tar, one of the two layouts, every image named, an image for the node's platform and
every blob present. Then each is loaded and the runtime's CRI must list every name. An add-on's
image held under another digest than the version set pins gets a note: its pod names name@digest
and cannot start from that copy offline; the note says how to save the pinned image.

  containerd  ctr images import into namespace k8s.io, for the node's platform, unpacked into the
              node's snapshotter
  docker      docker load on your rootless dockerd; its classic image store keeps no registry
              digest, so add-on images pinned by digest need its containerd image store
  crio        refused: it needs skopeo, which rootless-k8s does not install

Exit status: 0 loaded, 1 the runtime failed to load, 2 a bad archive or usage, 3 no node
installed or the runtime not running.`,
  options: {
    prefix: { type: "string", valueName: "DIR", description: "The --prefix the node was installed with" },
  },
  positionals: [
    { name: "action", description: "load", required: true, choices: ACTIONS },
    { name: "FILE...", description: "Image archives to load (docker save or OCI layout tar)", required: true },
  ],
  examples: ["docker save busybox:1.36.1 -o busybox.tar && rootless-k8s image load busybox.tar", "rootless-k8s image load images/*.tar"],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  const [action, ...files] = parsed.positionals;
  if (action !== "load") throw new UsageError(`unknown action "${action}" (use ${ACTIONS.join(", ")})`, spec.name);
  if (files.length === 0) throw new UsageError("missing FILE (an image archive to load)", spec.name);
  const plan = await installedPlan(ctx.env, opt.str(parsed, "prefix"));
  const archives: ImageArchive[] = [];
  for (const f of files) archives.push(await readImageArchive(path.resolve(ctx.cwd, f), { arch: plan.arch, signal: ctx.signal }));
  let unverified = false;
  await loadImages(plan, archives, {
    env: ctx.env,
    signal: ctx.signal,
    onLoaded: (images) => {
      for (const i of images) {
        ctx.out.out(`loaded ${i.name}  ${i.criId ?? i.id}`);
        if (i.criId === null) unverified = true;
      }
    },
  });
  // A loaded add-on image its pod cannot use: the pod names the pinned digest, the archive another
  // (or none: Docker's classic image store keeps no registry digest for a loaded image; its
  // containerd store keeps the archive's, as containerd does).
  const classicDocker = plan.runtime.name === "docker" && plan.runtime.docker?.imageStore !== "containerd";
  const loaded = archives.flatMap((a, n) =>
    a.images.map((i) => ({ name: i.name, digest: classicDocker ? null : i.digest, file: files[n] as string })),
  );
  for (const g of addonImageGaps(addonImagePins(plan.addons), loaded).filter((g) => g.kind === "other-digest"))
    ctx.out.err(`note: ${addonImageGapNote(g, classicDocker ? "docker" : "node")}`);
  if (unverified)
    ctx.out.err(
      `note: the runtime's CRI (${plan.runtime.criSocket}) did not answer, so the names were not checked against what the kubelet sees`,
    );
  return ExitCode.Ok;
}
