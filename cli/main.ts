// Entry point of the rootless-k8s binary. Keeps imports minimal: each subcommand is loaded on demand.
import { formatHelp, parseCommandArgs } from "./args";
import { commands, findCommand, type Context } from "./commands/registry";
import { ExitCode, UsageError, UserError, messageOf } from "./errors";
import { createOutput, type Output } from "./ui/output";
import { VERSION } from "./version";

const BIN = "rootless-k8s";

export function topLevelHelp(): string {
  const w = Math.max(...commands.map((c) => c.name.length)) + 2;
  return [
    `${BIN} ${VERSION}: run a Kubernetes node as an ordinary user, in the user's systemd.`,
    "",
    `Usage: ${BIN} <command> [options]`,
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.name.padEnd(w)}${c.summary}`),
    "",
    "Global options:",
    "  -h, --help       Show help (also: <command> --help)",
    "  -V, --version    Print the version",
    "",
    `Start with \`${BIN} doctor\`. Exit codes: 0 ok, 1 failure, 2 bad usage, 3 refused,`,
    "4 verification failed, 5 network failure, 6 locked by another run, 130 interrupted.",
  ].join("\n");
}

export async function main(argv: string[], out: Output = createOutput()): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    if (first === "help" && rest[0]) return main([rest[0], "--help"], out);
    out.out(topLevelHelp());
    return first === undefined ? ExitCode.Usage : ExitCode.Ok;
  }
  if (first === "--version" || first === "-V" || first === "version") {
    out.out(`${BIN} ${VERSION}`);
    return ExitCode.Ok;
  }
  const entry = findCommand(first);
  if (!entry) {
    out.err(`error: unknown command "${first}"`);
    out.err(`Run \`${BIN} --help\` for the list of commands.`);
    return ExitCode.Usage;
  }
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(ExitCode.Interrupted); // second Ctrl-C: stop now
    controller.abort(new Error(`interrupted by ${sig}`));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const mod = await entry.load();
  try {
    const parsed = parseCommandArgs(mod.spec, rest);
    if (parsed.help) {
      out.out(formatHelp(mod.spec, BIN));
      return ExitCode.Ok;
    }
    const ctx: Context = {
      out,
      env: process.env,
      cwd: process.cwd(),
      stdinIsTTY: process.stdin.isTTY === true,
      signal: controller.signal,
    };
    return await mod.run(ctx, parsed);
  } catch (e) {
    return reportError(e, out, mod.spec.usage);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** One line for the error, one for the fix; the usage line for bad usage. Never a stack trace. */
export function reportError(e: unknown, out: Output, usage?: string): number {
  const s = out.errStyle;
  if (e instanceof UsageError) {
    out.err(`${s.red("error:")} ${e.message}`);
    if (usage) out.err(`usage: ${usage}  (see --help)`);
    return ExitCode.Usage;
  }
  if (e instanceof UserError) {
    out.err(`${s.red("error:")} ${e.message}`);
    if (e.fix) out.err(`${s.bold("fix:")} ${e.fix}`);
    if (process.env.ROOTLESS_K8S_DEBUG === "1" && e.cause) out.err(String((e.cause as Error).stack ?? e.cause));
    return e.exitCode;
  }
  out.err(`${s.red("error:")} ${messageOf(e)}`);
  out.err(`This is a bug in ${BIN} ${VERSION}. Re-run with ROOTLESS_K8S_DEBUG=1 for details and report it.`);
  if (process.env.ROOTLESS_K8S_DEBUG === "1") out.err(String((e as Error)?.stack ?? e));
  return ExitCode.Failure;
}
