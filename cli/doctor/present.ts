// The one way a check's outcome is shown, wherever it is shown (doctor, doctor --node, install,
// the dry run, upgrade): a badge, the check's name in a column, the summary, details dimmed under
// it, and the fix with root's commands apart from the user's. A fix of several lines (a heredoc)
// keeps every line under the first, so it can be copied as it is.
import type { Style } from "../ui/output";
import type { Fix, Status } from "./check";

export interface Shown {
  id: string;
  label: string;
  status: Status;
  summary: string;
  fix: Fix | null;
  details?: string[];
}

export interface ShowOptions {
  /** The name in the second column: the label (doctor), or the id (where --ignore-check ID is the way out). */
  name?: "label" | "id";
  /** Width of the name column; default: the longest name shown. */
  width?: number;
}

export function badge(status: Status, s: Style): string {
  switch (status) {
    case "ok":
      return s.green("  ok");
    case "warn":
      return s.yellow("warn");
    case "fail":
      return s.red("FAIL");
    case "skip":
      return s.dim("skip");
  }
}

/** The fix of a warning or failure, root's first, each command's later lines aligned under its first. */
export function fixLines(o: Pick<Shown, "status" | "fix">, s: Style, indent: string): string[] {
  if (!o.fix || o.status === "ok" || o.status === "skip") return [];
  const out: string[] = [];
  const block = (who: string, cmds: string[]) => {
    cmds.forEach((c, i) => {
      const [first, ...rest] = c.split("\n");
      out.push(`${indent}${i === 0 ? s.bold(who) : " ".repeat(who.length)} ${first}`);
      for (const r of rest) out.push(`${indent}${" ".repeat(who.length)} ${r}`);
    });
  };
  block("fix (root):", o.fix.root);
  block("fix (you): ", o.fix.user);
  return out;
}

/** The lines of each outcome: `  FAIL  name  summary`, its details, then its fix. */
export function showOutcomes(outcomes: readonly Shown[], s: Style, opts: ShowOptions = {}): string[] {
  const name = (o: Shown) => (opts.name === "id" ? o.id : o.label);
  const width = opts.width ?? Math.max(0, ...outcomes.map((o) => name(o).length));
  const indent = " ".repeat(10 + width);
  return outcomes.flatMap((o) => [
    `  ${badge(o.status, s)}  ${name(o).padEnd(width)}  ${o.summary}`,
    ...(o.details ?? []).map((d) => `${indent}${s.dim(d)}`),
    ...fixLines(o, s, indent),
  ]);
}
