// One kind of object kept in step with the API server by list + watch, as client-go's informers do:
// list, then watch from the list's resourceVersion; list again when the watch breaks or expires
// (410 Gone). Every change calls onChange; failures are logged once while they last and tried again.
// The port publisher (Services, pods) and the overlay agent (Nodes) run on it.
import { InterruptedError, messageOf } from "../errors";
import { sleep } from "../wait";
import { type ApiClient, apiMessage, type WatchEvent } from "./kubernetes";

/** How often a loop on informers runs, retries and watches. */
export interface LoopTiming {
  /** Quiet time after an event before a pass (a burst of events makes one pass). */
  debounceMs: number;
  /** A pass at least this often, events or not. */
  resyncMs: number;
  /** Pause before trying a list or watch again after a failure. */
  retryMs: number;
  /** The server ends each watch after this long (timeoutSeconds); it is then resumed. */
  watchSeconds: number;
}

export const DEFAULT_TIMING: LoopTiming = { debounceMs: 250, resyncMs: 10_000, retryMs: 2000, watchSeconds: 300 };

type Meta = { namespace?: string; name: string; resourceVersion?: string };
const nameOf = (m: Meta) => `${m.namespace ?? "default"}/${m.name}`;

/** One resource kept in step with the API server by list + watch. */
export class Informer<T extends { metadata: Meta }> {
  readonly items = new Map<string, T>();
  synced = false;
  private lastError = "";

  constructor(
    private readonly what: string,
    private readonly path: string,
    private readonly query: string,
    private readonly rt: { api: ApiClient; log(line: string): void },
    private readonly timing: LoopTiming,
    private readonly onChange: () => void,
  ) {}

  private problem(line: string): void {
    if (line !== this.lastError) this.rt.log(`${this.what}: ${line}; trying again every ${this.timing.retryMs / 1000} s`);
    this.lastError = line;
  }

  /** List, then watch from the list's resourceVersion; again from the top when the watch breaks or expires. */
  async run(signal: AbortSignal): Promise<void> {
    const sep = this.query ? "&" : "";
    while (!signal.aborted) {
      let rv: string;
      try {
        const r = await this.rt.api.get(this.query ? `${this.path}?${this.query}` : this.path, 30_000);
        if (r.status !== 200) {
          this.problem(`listing refused: HTTP ${r.status} ${apiMessage(r.body)}`);
          await sleep(this.timing.retryMs, signal);
          continue;
        }
        const list = JSON.parse(r.body) as { metadata?: { resourceVersion?: string }; items?: T[] };
        this.items.clear();
        for (const o of list.items ?? []) this.items.set(nameOf(o.metadata), o);
        rv = list.metadata?.resourceVersion ?? "";
        if (this.lastError) this.rt.log(`${this.what}: listed again (${this.items.size})`);
        this.lastError = "";
        this.synced = true;
        this.onChange();
      } catch (e) {
        if (signal.aborted) return;
        this.problem(`no list: ${messageOf(e)}`);
        await sleep(this.timing.retryMs, signal);
        continue;
      }
      // Watch until it expires (410 Gone) or breaks; a watch the server simply ended is resumed.
      for (;;) {
        let gone = false;
        const url = `${this.path}?${this.query}${sep}watch=1&allowWatchBookmarks=true&timeoutSeconds=${this.timing.watchSeconds}&resourceVersion=${encodeURIComponent(rv)}`;
        try {
          const r = await this.rt.api.watch(
            url,
            (e: WatchEvent) => {
              if (e.type === "ERROR") {
                gone = true;
                if (e.object.code !== 410) this.problem(`the watch ended with an error: ${e.object.message ?? JSON.stringify(e.object)}`);
                return;
              }
              rv = e.object.metadata?.resourceVersion ?? rv;
              if (e.type === "BOOKMARK") return;
              const o = e.object as unknown as T;
              if (e.type === "DELETED") this.items.delete(nameOf(o.metadata));
              else this.items.set(nameOf(o.metadata), o);
              this.onChange();
            },
            { signal, idleMs: (this.timing.watchSeconds + 30) * 1000 },
          );
          if (r.status === 410) gone = true;
          else if (r.status !== 200) {
            this.problem(`watch refused: HTTP ${r.status} ${apiMessage(r.body)}`);
            gone = true;
          }
        } catch (e) {
          if (signal.aborted) return;
          this.problem(`the watch broke: ${messageOf(e)}`);
          gone = true;
        }
        if (gone) break; // list anew: what happened meanwhile is not known
      }
      await sleep(Math.min(this.timing.retryMs, 500), signal).catch(() => {});
    }
  }
}

/**
 * The loop both controllers run on their informers: passes one at a time (a change during a pass
 * makes one more), after `debounceMs` of quiet once something changed, and at least every
 * `resyncMs`. `changed` is what the informers call; `run` waits for them until the signal stops
 * them, then for the pass in flight. A failed pass is logged and the next one tries again.
 */
export function passLoop(
  pass: () => Promise<void>,
  o: { signal: AbortSignal; timing: LoopTiming; log(line: string): void; afterPass?: () => void },
): { changed: () => void; run: (informers: Promise<void>[]) => Promise<void> } {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let again = false;
  const reconcile = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await pass();
        } catch (e) {
          if (!o.signal.aborted) o.log(`a pass failed: ${messageOf(e)}`);
        }
        o.afterPass?.();
      } while (again && !o.signal.aborted);
    })().finally(() => (running = null));
  };
  const changed = (): void => {
    if (o.signal.aborted) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      reconcile();
    }, o.timing.debounceMs);
  };
  return {
    changed,
    async run(informers) {
      const resync = setInterval(changed, o.timing.resyncMs);
      try {
        await Promise.all(informers.map((p) => p.catch((e: unknown) => (e instanceof InterruptedError ? undefined : Promise.reject(e)))));
      } finally {
        clearInterval(resync);
        if (timer) clearTimeout(timer);
        await running;
      }
    },
  };
}
