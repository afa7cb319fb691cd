// What every command and the layers below it get from main: where to print, the environment, the
// working folder, whether prompts may be shown, and the signal that Ctrl-C aborts. It lives at the
// root of cli/ (below every layer) so that no layer imports it from cli/commands/.
import type { Output } from "./ui/output";

export interface Context {
  out: Output;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** True when stdin is a terminal (prompts are allowed unless --yes or CI). */
  stdinIsTTY: boolean;
  /** Aborted on SIGINT/SIGTERM; long steps pass it down and stop cleanly. */
  signal: AbortSignal;
}
