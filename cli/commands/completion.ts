// `rootless-k8s completion bash|zsh|fish`: print the shell completion script (cli/completion.ts),
// generated from every command's spec.
import type { CommandSpec, Parsed } from "../args";
import { ExitCode } from "../errors";
import { BIN_NAME } from "../version";
import { completionScript } from "../completion";
import type { Context } from "../context";
import { commands } from "./registry";

export const spec: CommandSpec = {
  name: "completion",
  summary: "Print shell completions (bash, zsh or fish)",
  usage: "rootless-k8s completion <shell>",
  description: "Prints a completion script for the shell; load it from the shell's start-up file.",
  options: {},
  positionals: [{ name: "shell", description: "The shell to complete for", required: true, choices: ["bash", "zsh", "fish"] }],
  examples: [
    `source <(${BIN_NAME} completion bash)        # in ~/.bashrc`,
    `source <(${BIN_NAME} completion zsh)         # in ~/.zshrc, after compinit`,
    `${BIN_NAME} completion fish > ~/.config/fish/completions/${BIN_NAME}.fish`,
  ],
};

export async function run(ctx: Context, args: Parsed): Promise<number> {
  const modules = await Promise.all(commands.map((c) => c.load()));
  const cmds = commands.map((c, i) => ({ name: c.name, aliases: c.aliases ?? [], summary: c.summary, spec: modules[i]!.spec }));
  ctx.out.out(completionScript(args.positionals[0] as "bash" | "zsh" | "fish", BIN_NAME, cmds).trimEnd());
  return ExitCode.Ok;
}
