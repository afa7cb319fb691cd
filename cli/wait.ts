// Waiting that Ctrl-C can cut short: shared by the download retries (cli/fetch) and the readiness
// poll (cli/apply), so an interrupted wait always ends the same way (InterruptedError, exit 130).
import { InterruptedError } from "./errors";

/** Waits `ms`, or throws InterruptedError as soon as the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new InterruptedError());
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(new InterruptedError());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
