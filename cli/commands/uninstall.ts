// `rootless-k8s uninstall [--purge]`: stop and remove the node; data and PKI stay unless --purge.
import { opt, type CommandSpec, type Parsed } from "../args";
import type { Context } from "../context";
import { uninstallNode } from "../apply/uninstall";

export const spec: CommandSpec = {
  name: "uninstall",
  summary: "Stop and remove the node (--purge also removes its data)",
  usage: "rootless-k8s uninstall [--purge] [--yes] [--prefix DIR]",
  description: `
Stops and disables rootless-k8s.target and every unit of the node, removes the unit files (then
daemon-reload and reset-failed), the binaries, the configuration, the helper scripts, the logs and
the runtime state that the install receipt lists, and the admin context it added to ~/.kube/config.
The data (etcd, images, volumes) and the PKI are kept, so a later install finds them again.

--purge removes those too, and the download cache: nothing of the node is left. Files that
containers created belong to your subordinate ids; they are removed from inside a user namespace
mapped with your /etc/subuid ranges, as \`rootlesskit rm -rf\` would.

It asks first (--yes answers for you; without a terminal --yes is required). It only removes paths
the receipt lists or that lie below the tool's own folders, works after a partial or failed install,
and running it twice is harmless.`,
  options: {
    purge: { type: "boolean", description: "Also remove the data, the PKI and the download cache" },
    yes: { type: "boolean", short: "y", description: "Do not ask for confirmation" },
    prefix: { type: "string", valueName: "DIR", description: "The --prefix the node was installed with" },
  },
  examples: ["rootless-k8s uninstall", "rootless-k8s uninstall --purge --yes"],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  return uninstallNode(ctx, { purge: opt.bool(parsed, "purge"), yes: opt.bool(parsed, "yes"), prefix: opt.str(parsed, "prefix") });
}
