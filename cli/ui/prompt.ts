// Questions, asked only when a person can answer: stdin and stdout are terminals, not CI, no --yes.
// Otherwise every question takes the answer the caller names for unattended runs, and says so in
// one line, so a log shows what was decided. Every question also has a flag (the caller's job).
// Ctrl-C during a question is an interruption (exit 130), never a stack trace.
import { InterruptedError } from "../errors";
import type { Output } from "./output";

export interface Choice<T extends string> {
  value: T;
  name: string;
  description?: string;
  disabled?: string | false;
}

export interface Prompter {
  /** True when questions are really asked. */
  readonly interactive: boolean;
  confirm(message: string, opts: { default: boolean; unattended: boolean }): Promise<boolean>;
  select<T extends string>(message: string, choices: Choice<T>[], opts: { default: T; unattended: T }): Promise<T>;
  input(message: string, opts: { default: string; unattended: string; validate?: (v: string) => true | string }): Promise<string>;
}

export interface PrompterOptions {
  out: Output;
  /** --yes, or the command decided not to ask. */
  yes: boolean;
  stdinIsTTY: boolean;
  signal?: AbortSignal;
}

function isPromptAbort(e: unknown): boolean {
  const name = (e as Error)?.name;
  return name === "ExitPromptError" || name === "AbortPromptError" || name === "CancelPromptError";
}

export function createPrompter(o: PrompterOptions): Prompter {
  const interactive = !o.yes && o.stdinIsTTY && o.out.interactive && !o.out.ci;
  const context = { signal: o.signal, output: process.stderr, clearPromptOnDone: false };
  const unattended = (message: string, answer: string) =>
    o.out.err(`${o.out.errStyle.dim("?")} ${message} ${o.out.errStyle.dim(`-> ${answer} (not asked)`)}`);

  async function ask<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (isPromptAbort(e)) throw new InterruptedError("interrupted at a question; nothing was changed");
      throw e;
    }
  }

  return {
    interactive,
    async confirm(message, opts) {
      if (!interactive) {
        unattended(message, opts.unattended ? "yes" : "no");
        return opts.unattended;
      }
      const { confirm } = await import("@inquirer/prompts");
      return ask(() => confirm({ message, default: opts.default }, context));
    },
    async select(message, choices, opts) {
      if (!interactive) {
        unattended(message, opts.unattended);
        return opts.unattended;
      }
      const { select } = await import("@inquirer/prompts");
      return ask(() =>
        select(
          {
            message,
            default: opts.default,
            choices: choices.map((c) => ({ value: c.value, name: c.name, description: c.description, disabled: c.disabled ?? false })),
          },
          context,
        ),
      );
    },
    async input(message, opts) {
      if (!interactive) {
        unattended(message, opts.unattended);
        return opts.unattended;
      }
      const { input } = await import("@inquirer/prompts");
      return ask(() => input({ message, default: opts.default, validate: opts.validate }, context));
    },
  };
}
