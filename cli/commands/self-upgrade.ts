// `rootless-k8s self-upgrade`: replace this binary with a newer verified release (cli/self/self-upgrade.ts).
import { opt, type CommandSpec, type Parsed } from "../args";
import { ExitCode, UsageError, UserError } from "../errors";
import { caFileFrom, caFileOption, networkEnvironment } from "../fetch/cli";
import { BIN_NAME, DEFAULT_DOWNLOAD_URL, RELEASE_PUBLIC_KEY, VERSION } from "../version";
import { isSea } from "node:sea";
import { realpathSync } from "node:fs";
import { selfUpgrade } from "../self/self-upgrade";
import { hostArch, normalizeVersion, resolveBaseUrl } from "../self/releases";
import type { Context } from "../context";

export const spec: CommandSpec = {
  name: "self-upgrade",
  summary: "Replace this binary with a newer verified release",
  usage: "rootless-k8s self-upgrade [--to VERSION] [--dry-run] [options]",
  description: `Downloads the release's SHA256SUMS and checks its ed25519 signature with the release key
built into this binary, downloads the binary and checks its SHA-256, runs the new binary's
--version, then renames it over this one in the same folder. SHA256SUMS names its version under
the signature, so a base cannot pass one release off as another; an older version is installed
only with --to VERSION --allow-downgrade. A plain-http base is refused
unless --insecure-http. The old binary stays beside it as
<binary>.previous until the new one has run once. Nothing changes when any step fails.
This upgrades the tool only; \`${BIN_NAME} upgrade\` upgrades the node.`,
  options: {
    to: {
      type: "string",
      valueName: "VERSION",
      description: "Install this version instead of the latest (an older one only with --allow-downgrade)",
    },
    "allow-downgrade": { type: "boolean", description: "Let --to install a version older than this one" },
    "dry-run": {
      type: "boolean",
      description: "Download and verify the new binary (signature, SHA-256), but neither run it nor replace this one",
    },
    "insecure-http": { type: "boolean", description: "Accept a plain http:// release base (the signature is still checked)" },
    force: { type: "boolean", description: "Reinstall even when this version is already running" },
    "base-url": { type: "string", valueName: "URL", description: `Release base to download from (default ${DEFAULT_DOWNLOAD_URL})` },
    "ca-file": caFileOption,
  },
  environment: [
    { name: "ROOTLESS_K8S_DOWNLOAD_URL", description: "Release base, when --base-url is not given (mirrors)" },
    ...networkEnvironment,
  ],
  examples: [`${BIN_NAME} self-upgrade`, `${BIN_NAME} self-upgrade --dry-run`, `${BIN_NAME} self-upgrade --to 0.2.0 --allow-downgrade`],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const toFlag = opt.str(args, "to");
  const to = toFlag === undefined ? undefined : normalizeVersion(toFlag);
  if (toFlag !== undefined && !to) throw new UsageError(`--to must be a release version like 0.2.0 (got "${toFlag}")`, spec.name);
  const base = resolveBaseUrl(opt.str(args, "base-url"), ctx.env, { insecureHttp: opt.bool(args, "insecure-http") });
  const caFile = caFileFrom(args, spec.name);
  if (!isSea()) {
    throw new UserError(`self-upgrade replaces the ${BIN_NAME} binary, but this is the JavaScript bundle running under node`, {
      exitCode: ExitCode.Refused,
      fix: `run the installed binary (e.g. ~/.local/bin/${BIN_NAME} self-upgrade); a source checkout updates with git pull && make build`,
    });
  }
  const dryRun = opt.bool(args, "dry-run");
  const outcome = await selfUpgrade({
    binary: realpathSync(process.execPath),
    current: VERSION,
    ...(to ? { to } : {}),
    base,
    ...(caFile ? { caFile } : {}),
    arch: hostArch(),
    publicKey: RELEASE_PUBLIC_KEY,
    dryRun,
    force: opt.bool(args, "force"),
    allowDowngrade: opt.bool(args, "allow-downgrade"),
    signal: ctx.signal,
    progress: (line) => ctx.out.err(line),
  });
  const s = ctx.out.style;
  switch (outcome.kind) {
    case "current":
      ctx.out.out(`${BIN_NAME} ${outcome.version} is up to date (latest release: ${outcome.latest})`);
      break;
    case "ahead":
      ctx.out.out(
        `${BIN_NAME} ${outcome.version} is newer than the release base's latest.txt (${outcome.latest}): nothing to do. A base whose latest goes back is stale or hostile; nothing older is installed unless asked (--to VERSION --allow-downgrade)`,
      );
      break;
    case "checked":
      ctx.out.out(`dry run: ${outcome.from} → ${outcome.to} verified (signature and SHA-256); nothing was run or replaced`);
      break;
    case "upgraded":
      ctx.out.out(`${s.green("upgraded")} ${BIN_NAME} ${outcome.from} → ${outcome.to}`);
      ctx.out.out(`the previous binary is kept as ${outcome.previous} until the new one has run once`);
      break;
  }
  return ExitCode.Ok;
}
