// systemd unit files as text: sections of key=value lines, with command lines quoted the way
// systemd.service(5) ("Command lines") and systemd.unit(5) ("Specifiers") require.

export type UnitSection = [key: string, value: string | number | boolean | null | undefined][];

export interface UnitFile {
  /** A comment block at the top (without the leading "# "). */
  header: string[];
  sections: [name: string, entries: UnitSection][];
}

/**
 * One word of a command line: `%` escaped (specifiers), `$` escaped in arguments (environment
 * variables; systemd does not expand them in the executable's path), quoted when it has spaces
 * or quotes.
 */
export function quoteArg(arg: string, executable = false): string {
  const escaped = executable ? arg.replace(/%/g, "%%") : arg.replace(/%/g, "%%").replace(/\$/g, "$$$$");
  if (escaped !== "" && !/[\s"'\\;]/.test(escaped)) return escaped;
  return `"${escaped.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** A path in a directive that is not a command line (EnvironmentFile=, StandardOutput=append:). */
export function escapePath(p: string): string {
  return p.replace(/%/g, "%%");
}

/** A variable systemd expands into words at run time: `$NAME` (unset or empty → no argument). */
export interface VariableArg {
  variable: string;
}

/**
 * A command line, one argument per continuation line after the first two (binary and first flag),
 * so a reviewer reads flags one by one.
 */
export function commandLine(args: (string | VariableArg)[]): string {
  const words = args.map((a, i) => (typeof a === "string" ? quoteArg(a, i === 0) : `$${a.variable}`));
  if (words.length <= 3) return words.join(" ");
  const [first, ...rest] = words;
  return [first, ...rest].join(" \\\n  ");
}

export function renderUnit(unit: UnitFile): string {
  const lines: string[] = unit.header.map((h) => (h ? `# ${h}` : "#"));
  for (const [name, entries] of unit.sections) {
    if (lines.length) lines.push("");
    lines.push(`[${name}]`);
    for (const [key, value] of entries) {
      if (value === null || value === undefined) continue;
      lines.push(`${key}=${typeof value === "boolean" ? (value ? "yes" : "no") : value}`);
    }
  }
  return lines.join("\n") + "\n";
}
