// Terminal output: colour only on a TTY, never under NO_COLOR or TERM=dumb; plain text when piped.
// Kept free of dependencies so every command can import it without slowing start-up.

export interface Style {
  readonly enabled: boolean;
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

export function colorEnabled(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "" && env.FORCE_COLOR !== "0") return true;
  if (env.TERM === "dumb") return false;
  return stream.isTTY === true;
}

export function makeStyle(enabled: boolean): Style {
  const wrap = (open: number, close: number) => (s: string) => (enabled ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return {
    enabled,
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
  };
}

/** Where a command writes: stdout for results, stderr for progress and errors. */
export interface Output {
  readonly style: Style;
  readonly errStyle: Style;
  /** True when stdout is an interactive terminal (spinners, prompts, colour). */
  readonly interactive: boolean;
  /** True under CI=true or similar: plain lines, no spinners, no prompts. */
  readonly ci: boolean;
  out(line?: string): void;
  err(line?: string): void;
}

export function createOutput(
  stdout: NodeJS.WriteStream = process.stdout,
  stderr: NodeJS.WriteStream = process.stderr,
  env: NodeJS.ProcessEnv = process.env,
): Output {
  const ci = isCI(env);
  return {
    style: makeStyle(colorEnabled(stdout, env)),
    errStyle: makeStyle(colorEnabled(stderr, env)),
    interactive: stdout.isTTY === true && !ci,
    ci,
    out: (line = "") => void stdout.write(line + "\n"),
    err: (line = "") => void stderr.write(line + "\n"),
  };
}

export function isCI(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env.CI;
  return v !== undefined && v !== "" && v !== "0" && v.toLowerCase() !== "false";
}
