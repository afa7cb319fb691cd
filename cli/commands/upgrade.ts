// `rootless-k8s upgrade [--to VERSION]`: the node to another version set, with automatic rollback.
import { opt, type CommandSpec, type Parsed } from "../args";
import { UsageError } from "../errors";
import { caFileFrom, caFileOption, mirrorOption } from "../fetch/cli";
import { parseVersionSpec } from "../fetch/releases";
import { mirrorFrom } from "../fetch/mirror";
import { unknownCheckIds } from "../doctor/index";
import { upgradeNode } from "../apply/upgrade";
import type { Context } from "../context";
import { timeoutOf } from "./durations";

export const spec: CommandSpec = {
  name: "upgrade",
  summary: "Upgrade the node to another version set, rolling back on failure",
  usage: "rootless-k8s upgrade [--to VERSION|MINOR|stable] [--manifest FILE] [--dry-run] [options]",
  description: `
Moves the installed node to another version set. --to names it: a Kubernetes version (1.37.2), a
minor (1.37: its newest patch) or a channel (stable, latest), resolved through dl.k8s.io's release
files, each binary verified by the checksum file upstream publishes beside it, with the companions
this rootless-k8s pairs with that minor. Without --to, the set built into this rootless-k8s. With
--manifest FILE (or --bundle FILE) the set is that file's, and --to only names the version you
expect it to carry (refused when it does not).

The skew is checked before anything is downloaded: one minor version at a time, never a downgrade,
the kubelet never newer than the API server. The new set is downloaded and verified next to the
old one (versions/<set>), the units are rendered again, the \`current\` link is switched atomically,
and only the units whose binaries or files changed restart, in dependency order (etcd, the API
server, the controllers, the kubelet, kube-proxy). If the node is not Ready on the new versions
within --timeout, the old set is brought back the same way, automatically.

Exit status: 0 upgraded (or nothing to do), 1 failed (rolled back), 3 refused (skew, --to mismatch,
a failing doctor check), 4/5 download verification or network failure (nothing was switched).`,
  options: {
    to: {
      type: "string",
      valueName: "VERSION",
      description: "The Kubernetes version, minor or channel to upgrade to (with --manifest: the version its set must carry)",
    },
    pinned: { type: "boolean", description: "Use only checksums compiled into this rootless-k8s (its built-in set)" },
    manifest: { type: "string", valueName: "FILE", description: "Components manifest of the new version set" },
    mirror: mirrorOption,
    bundle: { type: "string", valueName: "FILE", description: "Upgrade offline from a bundle written by `rootless-k8s bundle`" },
    "trust-bundle": { type: "boolean", description: "Accept a bundle whose checksums differ from the built-in pins" },
    "ca-file": caFileOption,
    "dry-run": { type: "boolean", description: "Show what would change (versions, files, restarts) and change nothing" },
    yes: { type: "boolean", short: "y", description: "Do not ask for confirmation" },
    timeout: {
      type: "string",
      valueName: "DURATION",
      description: "How long to wait for Ready before rolling back: seconds, or 90s, 5m (default 5m)",
    },
    "ignore-check": { type: "string", valueName: "ID", multiple: true, description: "Go ahead although this doctor check fails" },
    prefix: { type: "string", valueName: "DIR", description: "The --prefix the node was installed with" },
  },
  examples: [
    "rootless-k8s upgrade --dry-run",
    "rootless-k8s upgrade --to 1.37",
    "rootless-k8s upgrade --to 1.37.0 --manifest k8s-1.37.0.json",
    "rootless-k8s self-upgrade && rootless-k8s upgrade",
  ],
};

export async function run(ctx: Context, parsed: Parsed): Promise<number> {
  const timeoutSeconds = timeoutOf(parsed, spec.name);
  const to = opt.str(parsed, "to");
  const fromFile = opt.str(parsed, "manifest") !== undefined || opt.str(parsed, "bundle") !== undefined;
  if (to !== undefined && fromFile && !/^v?\d+\.\d+\.\d+$/.test(to))
    throw new UsageError(`--to with --manifest or --bundle must be a Kubernetes version like 1.37.0 (got "${to}")`, spec.name);
  if (to !== undefined && !fromFile) parseVersionSpec(to, "--to", spec.name);
  const ignoreChecks = opt.list(parsed, "ignore-check");
  // A mirror that is no http(s) URL is bad usage (exit 2), refused before the receipt is read.
  mirrorFrom(opt.str(parsed, "mirror"), ctx.env);
  const unknown = unknownCheckIds(ignoreChecks);
  if (unknown.length)
    throw new UsageError(`--ignore-check: no check named ${unknown.join(", ")} (see \`rootless-k8s doctor --json\`)`, spec.name);
  return upgradeNode(ctx, {
    // Without a manifest or bundle, --to chooses the set (resolved online); with one, it is checked.
    to: fromFile ? to : undefined,
    source: {
      ...(to !== undefined && !fromFile ? { kubernetesVersion: to } : {}),
      ...(opt.bool(parsed, "pinned") ? { pinned: true } : {}),
      manifestFile: opt.str(parsed, "manifest"),
      mirror: opt.str(parsed, "mirror"),
      bundle: opt.str(parsed, "bundle"),
      trustBundle: opt.bool(parsed, "trust-bundle"),
      caFile: caFileFrom(parsed, spec.name),
    },
    dryRun: opt.bool(parsed, "dry-run"),
    yes: opt.bool(parsed, "yes"),
    timeoutSeconds,
    prefix: opt.str(parsed, "prefix"),
    ignoreChecks,
  });
}
