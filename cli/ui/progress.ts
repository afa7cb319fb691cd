// Steps of a long command: an ora spinner per step on a terminal, plain lines elsewhere (pipes, CI).
// Each step ends with its duration, so a log shows where time went; a failed step is named.
// Progress goes to stderr; results go to stdout.
import type { Output } from "./output";

export interface StepTiming {
  id: string;
  label: string;
  ms: number;
  ok: boolean;
}

export interface StepHandle {
  /** Replaces the text after the label (spinner) or prints an indented line (plain). */
  update(text: string): void;
}

export interface Progress {
  /** Runs `fn` as one named step. The error passes through unchanged, after the step is marked failed. */
  step<T>(id: string, label: string, fn: (h: StepHandle) => Promise<T>): Promise<T>;
  /** A line between steps (hint, note), never interleaved with a spinner. */
  note(line: string): void;
  readonly timings: StepTiming[];
  /** The id of the step that is running or failed last, for "failed at step X". */
  readonly current: string | null;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

interface Spinner {
  text: string;
  start(): Spinner;
  succeed(text?: string): Spinner;
  fail(text?: string): Spinner;
  stop(): Spinner;
}

export async function createProgress(out: Output, opts: { spinners?: boolean } = {}): Promise<Progress> {
  const useSpinner = (opts.spinners ?? true) && out.interactive && process.stderr.isTTY === true;
  const ora = useSpinner ? (await import("ora")).default : null;
  const s = out.errStyle;
  const timings: StepTiming[] = [];
  let current: string | null = null;
  let active: Spinner | null = null;

  return {
    timings,
    get current() {
      return current;
    },
    note(line) {
      if (active) {
        active.stop();
        out.err(line);
        active.start();
      } else out.err(line);
    },
    async step(id, label, fn) {
      current = id;
      const t0 = Date.now();
      let spinner: Spinner | null = null;
      if (ora) {
        spinner = ora({ text: label, stream: process.stderr, discardStdin: false }).start() as unknown as Spinner;
        active = spinner;
      } else {
        out.err(`${s.cyan("==>")} ${label}`);
      }
      const handle: StepHandle = {
        update(text) {
          if (spinner) spinner.text = `${label}: ${text}`;
          else out.err(`    ${text}`);
        },
      };
      try {
        const result = await fn(handle);
        const ms = Date.now() - t0;
        timings.push({ id, label, ms, ok: true });
        if (spinner) spinner.succeed(`${label} ${s.dim(`(${seconds(ms)})`)}`);
        else out.err(`${s.green("ok")}  ${label} (${seconds(ms)})`);
        return result;
      } catch (e) {
        const ms = Date.now() - t0;
        timings.push({ id, label, ms, ok: false });
        if (spinner) spinner.fail(`${label} ${s.dim(`(failed after ${seconds(ms)})`)}`);
        else out.err(`${s.red("FAILED")}  ${label} (after ${seconds(ms)})`);
        throw e;
      } finally {
        active = null;
      }
    },
  };
}
