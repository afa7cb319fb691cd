// Entry point of the rootless-k8s binary. Keeps imports minimal: each subcommand is loaded on demand,
// so `--version` and `--help` start in about the time of `node -e 0`.
import { printable, redactUrls } from "./text";
import { dropPreviousBinary } from "./self/previous-binary";
import { UPDATE_CHECK_ARG, afterCommand, runUpdateCheck } from "./self/update-check";
import { asksForHelp, formatHelp, parseCommandArgs, suggest } from "./args";
import { commands, findCommand } from "./commands/registry";
import type { Context } from "./context";
import { ExitCode, InterruptedError, UsageError, UserError, fileSystemError, messageOf } from "./errors";
import { createOutput, type Output } from "./ui/output";
import { BIN_NAME, VERSION } from "./version";

const BIN = BIN_NAME;

export function topLevelHelp(): string {
  const names = commands.map((c) => (c.aliases?.length ? `${c.name} (${c.aliases.join(", ")})` : c.name));
  const w = Math.max(...names.map((n) => n.length)) + 2;
  return [
    `${BIN} ${VERSION}: run a Kubernetes node as an ordinary user, in the user's systemd.`,
    "",
    `Usage: ${BIN} <command> [options]`,
    `       ${BIN} help <command>`,
    "",
    "Commands:",
    ...commands.map((c, i) => `  ${names[i]!.padEnd(w)}${c.summary}`),
    "",
    "Options:",
    "  -h, --help       Show help (also: <command> --help)",
    "  -V, --version    Print the version",
    "",
    "Environment:",
    "  NO_COLOR=1                      No colours",
    "  CI=true                         Plain output: no spinners, prompts or update check",
    "  ROOTLESS_K8S_NO_UPDATE_CHECK=1  No daily check for a newer release",
    "  ROOTLESS_K8S_DEBUG=1            Show the cause of errors in full",
    "",
    `Start with \`${BIN} doctor\`. Exit codes: 0 ok, 1 failure, 2 bad usage, 3 refused,`,
    "4 verification failed, 5 network failure, 6 locked by another run, 7 stopped (status),",
    "130 interrupted.",
  ].join("\n");
}

export async function main(argv: string[], out: Output = createOutput()): Promise<number> {
  dropPreviousBinary();
  const [first, ...rest] = argv;
  if (first === UPDATE_CHECK_ARG) return runUpdateCheck(process.env);
  if (first === undefined || first === "--help" || first === "-h") {
    out.out(topLevelHelp());
    return first === undefined ? ExitCode.Usage : ExitCode.Ok;
  }
  if (first === "help") return rest[0] ? main([rest[0], "--help"], out) : main(["--help"], out);
  if (first === "--version" || first === "-V" || first === "version") {
    out.out(`${BIN} ${VERSION}`);
    return ExitCode.Ok;
  }
  const entry = findCommand(first);
  if (!entry) {
    const guess = first.startsWith("-")
      ? undefined
      : suggest(
          first,
          commands.flatMap((c) => [c.name, ...(c.aliases ?? [])]),
        );
    out.err(`${out.errStyle.red("error:")} ${safe(first.startsWith("-") ? `unknown option ${first}` : `unknown command "${first}"`)}`);
    out.err(guess ? `Did you mean \`${BIN} ${guess}\`?` : `Run \`${BIN} --help\` for the list of commands.`);
    return ExitCode.Usage;
  }
  const mod = await entry.load();
  if (asksForHelp(rest)) {
    out.out(formatHelp(mod.spec, BIN, entry.aliases));
    return ExitCode.Ok;
  }
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(ExitCode.Interrupted); // second Ctrl-C: stop now
    controller.abort(new Error(`interrupted by ${sig}`));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  let code: number;
  try {
    const parsed = parseCommandArgs(mod.spec, rest);
    const ctx: Context = {
      out,
      env: process.env,
      cwd: process.cwd(),
      stdinIsTTY: process.stdin.isTTY === true,
      signal: controller.signal,
    };
    code = await mod.run(ctx, parsed);
  } catch (e) {
    code = reportError(controller.signal.aborted ? asInterruption(e) : e, out, mod.spec.usage, mod.spec.name);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  if (!controller.signal.aborted) {
    await afterCommand({
      command: entry.name,
      env: process.env,
      onTerminal: process.stderr.isTTY === true,
      version: VERSION,
      notify: (l) => out.err(l),
    });
  }
  return code;
}

/**
 * After Ctrl-C, what a step throws on its way out is the interruption: exit 130. A UserError keeps
 * its own words and fix (they say what was left and how to go on); anything else (a closed socket,
 * a killed child) becomes the plain interruption with the re-run hint, never a bug report.
 */
function asInterruption(e: unknown): UserError {
  if (e instanceof UserError) {
    if (e.exitCode === ExitCode.Interrupted) return e;
    return new UserError(e.message, {
      exitCode: ExitCode.Interrupted,
      fix: e.fix ?? "re-run the same command to continue where it stopped",
      cause: e,
    });
  }
  return new InterruptedError();
}

/**
 * Error text may quote what a server, a manifest, a bundle, a path or a flag said: every control
 * character becomes a visible escape (a newline too: the error and its fix are one line each, so a
 * quoted "\nfix: ..." cannot add a line of its own), and no URL keeps its password. The one rule for
 * every message and fix this presenter prints, whoever built them.
 */
const safe = (t: string) => redactUrls(printable(t));

/** One line for the error, one for the fix; the usage line for bad usage. Never a stack trace. */
export function reportError(e: unknown, out: Output, usage?: string, command?: string): number {
  const s = out.errStyle;
  if (e instanceof UsageError) {
    out.err(`${s.red("error:")} ${safe(e.message)}`);
    if (usage) out.err(`usage: ${usage}`);
    out.err(`Run \`${[BIN, command ?? e.command, "--help"].filter(Boolean).join(" ")}\` for all options.`);
    return ExitCode.Usage;
  }
  if (e instanceof UserError) {
    out.err(`${s.red("error:")} ${safe(e.message)}`);
    if (e.fix) out.err(`${s.bold("fix:")} ${safe(e.fix)}`);
    if (process.env.ROOTLESS_K8S_DEBUG === "1" && e.cause) out.err(String((e.cause as Error).stack ?? e.cause));
    return e.exitCode;
  }
  const fsFailure = fileSystemError(e);
  if (fsFailure) return reportError(fsFailure, out, usage, command);
  out.err(`${s.red("error:")} ${safe(messageOf(e))}`);
  out.err(`This is a bug in ${BIN} ${VERSION}. Re-run with ROOTLESS_K8S_DEBUG=1 for details and report it.`);
  if (process.env.ROOTLESS_K8S_DEBUG === "1") out.err(String((e as Error)?.stack ?? e));
  return ExitCode.Failure;
}
