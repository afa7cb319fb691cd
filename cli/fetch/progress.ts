// Download progress: on a terminal, one ora line with bytes, speed and ETA over all downloads;
// off a terminal or under CI, one plain line per artifact when it is done.
import type { Output } from "../ui/output";
import { formatBytes, formatDuration } from "./format";
import type { FetchedArtifact, ResolvedArtifact } from "./types";

/** What fetchArtifacts reports. Every method is optional to implement. */
export interface FetchProgress {
  /** A transfer starts: total size when known, bytes already there (resumed). */
  start?(a: ResolvedArtifact, total: number | undefined, resumedFrom: number): void;
  bytes?(a: ResolvedArtifact, n: number): void;
  done?(f: FetchedArtifact): void;
  /** All artifacts are done (or the fetch failed): stop any spinner. */
  end?(ok: boolean): void;
}

/** The progress display for `out`: ora when interactive, plain lines otherwise. */
export async function createFetchProgress(out: Output, count: number): Promise<FetchProgress> {
  // A terminal that reports no width (some ptys) would make ora redraw without end: plain lines there.
  if (!out.interactive || !process.stderr.isTTY || !(process.stderr.columns > 0)) return plainProgress(out);
  const { default: ora } = await import("ora");
  const spinner = ora({ text: "Checking the download cache", stream: process.stderr, discardStdin: false });
  if (!spinner.isEnabled) return plainProgress(out); // ora's own judgement (TERM=dumb, CI set but empty, ...)
  spinner.start();
  const meter = meterProgress((text) => (spinner.text = text), count);
  return {
    ...meter,
    end: (ok) => {
      meter.end?.(ok);
      if (ok) spinner.succeed(meter.summary());
      else spinner.stop();
    },
  };
}

/**
 * The meter (bytes, speed and ETA over all downloads) fed to `show` five times a second, for a
 * spinner owned by someone else (install's fetch step) or by createFetchProgress.
 */
export function meterProgress(show: (text: string) => void, count: number): FetchProgress & { summary(): string } {
  const meter = new Meter(count);
  const timer = setInterval(() => show(meter.line()), 200);
  timer.unref();
  return {
    start: (a, total, from) => meter.start(a.id, total, from),
    bytes: (_a, n) => meter.add(n),
    done: (f) => {
      meter.finish(f.artifact.id);
      show(meter.line());
    },
    end: () => clearInterval(timer),
    summary: () => meter.summary(),
  };
}

export function plainProgress(out: Output): FetchProgress {
  return {
    done: (f) => out.err(describeFetched(f)),
  };
}

export function describeFetched(f: FetchedArtifact): string {
  const how = f.source === "cache" ? "from the cache" : f.source === "bundle" ? "from the bundle" : "downloaded";
  return `${f.artifact.label}: ${formatBytes(f.size)} ${how}, ${f.verification}`;
}

/** Bytes, speed (moving average) and ETA over all transfers. */
export class Meter {
  private readonly totals = new Map<string, number | undefined>();
  private readonly finished = new Set<string>();
  private received = 0;
  private resumed = 0;
  private rate = 0;
  private lastAt = Date.now();
  private lastBytes = 0;

  constructor(
    private readonly count: number,
    private readonly now: () => number = Date.now,
  ) {
    this.lastAt = now();
  }

  start(id: string, total: number | undefined, resumedFrom: number): void {
    this.totals.set(id, total);
    this.resumed += resumedFrom;
  }
  add(n: number): void {
    this.received += n;
  }
  finish(id: string): void {
    this.finished.add(id);
  }

  line(): string {
    const t = this.now();
    const dt = (t - this.lastAt) / 1000;
    if (dt >= 0.2) {
      const inst = (this.received - this.lastBytes) / dt;
      this.rate = this.rate === 0 ? inst : 0.7 * this.rate + 0.3 * inst;
      this.lastAt = t;
      this.lastBytes = this.received;
    }
    const known = [...this.totals.values()].every((v) => v !== undefined);
    const total = [...this.totals.values()].reduce<number>((s, v) => s + (v ?? 0), 0);
    const have = this.received + this.resumed;
    const parts = [
      `Downloading ${this.finished.size}/${this.count}`,
      known && total > 0 ? `${formatBytes(have)} of ${formatBytes(total)}` : formatBytes(have),
    ];
    if (this.rate > 0) parts.push(`${formatBytes(this.rate)}/s`);
    if (known && this.rate > 0 && total > have) parts.push(`ETA ${formatDuration((total - have) / this.rate)}`);
    return parts.join(" · ");
  }

  summary(): string {
    return `${this.count} component file${this.count === 1 ? "" : "s"} verified${this.received ? ` (${formatBytes(this.received)} downloaded)` : ", nothing downloaded"}`;
  }
}
