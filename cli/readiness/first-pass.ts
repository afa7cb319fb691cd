// Waiting for an agent's first pass: the state file it writes after each pass (the NetworkPolicy
// enforcer's, read by `status`) exists. Changes nothing.
import { promises as fsp } from "node:fs";
import { sleep } from "../wait";

/** true once `file` exists, false when it has not appeared within `timeoutMs`. */
export async function waitForStateFile(file: string, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await fsp.stat(file).catch(() => null)) return true;
    if (Date.now() >= until) return false;
    await sleep(250, signal);
  }
}
