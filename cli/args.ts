// Command-line parsing on top of node:util parseArgs, plus the help text built from the same spec,
// so a flag cannot exist without its documentation.
import { parseArgs } from "node:util";
import { UsageError } from "./errors";

export interface OptionSpec {
  type: "boolean" | "string";
  short?: string;
  multiple?: boolean;
  /** One line for --help. */
  description: string;
  /**
   * Placeholder shown in --help, e.g. "DIR" for --root DIR. Shell completion offers folders for a
   * name ending in DIR and files for one ending in FILE or PATH.
   */
  valueName?: string;
  /** For completion: fixed choices of a string option. */
  choices?: readonly string[];
}

export interface CommandSpec {
  name: string;
  /** One line, shown in `rootless-k8s --help`. */
  summary: string;
  /** e.g. "rootless-k8s doctor [options]" */
  usage: string;
  /** Paragraphs shown under the usage line in `<command> --help`. */
  description?: string;
  options: Record<string, OptionSpec>;
  /** Names of positional arguments, for help; "..." suffix = variadic. */
  positionals?: PositionalSpec[];
  /** Environment variables the command reads, for --help. */
  environment?: { name: string; description: string }[];
  /** Examples for --help. */
  examples?: string[];
}

export interface PositionalSpec {
  name: string;
  description: string;
  required?: boolean;
  /** Fixed choices, checked when parsing and offered by shell completion. */
  choices?: readonly string[];
}

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  help: boolean;
}

/**
 * True when -h/--help appears before a "--": help wins over every other flag, even a bad one,
 * as in git and the GNU tools.
 */
export function asksForHelp(argv: readonly string[]): boolean {
  for (const a of argv) {
    if (a === "--") return false;
    if (a === "--help" || a === "-h") return true;
  }
  return false;
}

/** The closest of `candidates` to a mistyped `word` (edit distance ≤ 2, or a unique prefix). */
export function suggest(word: string, candidates: readonly string[]): string | undefined {
  const prefixed = candidates.filter((c) => c.startsWith(word));
  if (word.length >= 2 && prefixed.length === 1) return prefixed[0];
  let best: { c: string; d: number } | undefined;
  for (const c of candidates) {
    const d = editDistance(word, c);
    if (d <= 2 && (!best || d < best.d)) best = { c, d };
  }
  return best?.c;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

export function parseCommandArgs(spec: CommandSpec, argv: string[]): Parsed {
  const options: Record<string, { type: "boolean" | "string"; short?: string; multiple?: boolean }> = {
    help: { type: "boolean", short: "h" },
  };
  for (const [name, o] of Object.entries(spec.options)) {
    options[name] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: true });
  } catch (e) {
    throw new UsageError(describeParseError(e), spec.name);
  }
  const values = parsed.values as Parsed["values"];
  const help = values.help === true;
  delete values.help;
  if (!help) {
    for (const [name, o] of Object.entries(spec.options)) {
      const v = values[name];
      if (o.choices && typeof v === "string" && !o.choices.includes(v)) {
        throw new UsageError(`--${name} must be one of ${o.choices.join(", ")} (got "${v}")`, spec.name);
      }
    }
    const maxPos = spec.positionals?.some((p) => p.name.endsWith("...")) ? Infinity : (spec.positionals?.length ?? 0);
    if (parsed.positionals.length > maxPos) {
      throw new UsageError(`unexpected argument "${parsed.positionals[maxPos]}"`, spec.name);
    }
    const required = spec.positionals?.filter((p) => p.required).length ?? 0;
    if (parsed.positionals.length < required) {
      const missing = spec.positionals?.[parsed.positionals.length]?.name ?? "argument";
      throw new UsageError(`missing ${missing.replace(/\.\.\.$/, "")}`, spec.name);
    }
    spec.positionals?.forEach((p, i) => {
      const v = parsed.positionals[i];
      if (p.choices && v !== undefined && !p.choices.includes(v)) {
        throw new UsageError(`${p.name} must be one of ${p.choices.join(", ")} (got "${v}")`, spec.name);
      }
    });
  }
  return { values, positionals: parsed.positionals, help };
}

function describeParseError(e: unknown): string {
  const err = e as { code?: string; message?: string };
  const msg = String(err.message ?? e);
  switch (err.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION": {
      const m = /Unknown option '([^']+)'/.exec(msg);
      return `unknown option ${m ? m[1] : ""}`.trim();
    }
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE": {
      const m = /Option '([^']+)'/.exec(msg);
      if (/argument missing/.test(msg) && m?.[1]) return `option ${m[1].replace(/ <value>$/, "")} needs a value`;
      if (/does not take an argument/.test(msg) && m) return `option ${m[1]} does not take a value`;
      return msg.split("\n")[0] ?? msg;
    }
    default:
      return msg.split("\n")[0] ?? msg;
  }
}

/** Typed accessors, so commands do not cast. */
export const opt = {
  str(p: Parsed, name: string): string | undefined {
    const v = p.values[name];
    return typeof v === "string" ? v : undefined;
  },
  bool(p: Parsed, name: string): boolean {
    return p.values[name] === true;
  },
  list(p: Parsed, name: string): string[] {
    const v = p.values[name];
    return Array.isArray(v) ? v : typeof v === "string" ? [v] : [];
  },
  /** An integer option within [min, max]; a bad value is a UsageError naming the flag. */
  int(p: Parsed, name: string, min: number, max: number, command?: string): number | undefined {
    const v = p.values[name];
    if (v === undefined) return undefined;
    const s = String(v);
    if (!/^\d+$/.test(s) || Number(s) < min || Number(s) > max) {
      throw new UsageError(`--${name} must be a whole number from ${min} to ${max} (got "${s}")`, command);
    }
    return Number(s);
  },
};

/** `<command> --help`: usage, summary, description, arguments, options, environment, examples. */
export function formatHelp(spec: CommandSpec, bin = "rootless-k8s", aliases: readonly string[] = []): string {
  const lines: string[] = [];
  lines.push(`Usage: ${spec.usage.replace(/^rootless-k8s/, bin)}`, "", spec.summary);
  if (aliases.length) lines.push(`Also: ${aliases.map((a) => `${bin} ${a}`).join(", ")}`);
  if (spec.description) lines.push("", spec.description.trim());
  if (spec.positionals?.length) {
    lines.push("", "Arguments:");
    for (const p of spec.positionals) {
      const extra = p.choices ? ` (${p.choices.join("|")})` : "";
      lines.push(`  ${p.name.padEnd(24)} ${p.description}${extra}`);
    }
  }
  const rows: [string, string][] = [];
  for (const [name, o] of Object.entries(spec.options)) {
    const flag = `${o.short ? `-${o.short}, ` : "    "}--${name}${o.type === "string" ? ` ${o.valueName ?? "VALUE"}` : ""}`;
    const extra = o.choices ? ` (${o.choices.join("|")})` : "";
    rows.push([flag, o.description + extra + (o.multiple ? " (repeatable)" : "")]);
  }
  rows.push(["-h, --help", "Show this help"]);
  lines.push("", "Options:");
  const w = Math.min(34, Math.max(...rows.map((r) => r[0].length)) + 2);
  for (const [f, d] of rows) lines.push(`  ${f.padEnd(w)}${d}`);
  if (spec.environment?.length) {
    lines.push("", "Environment:");
    const ew = Math.max(...spec.environment.map((e) => e.name.length)) + 2;
    for (const e of spec.environment) lines.push(`  ${e.name.padEnd(ew)}${e.description}`);
  }
  if (spec.examples?.length) {
    lines.push("", "Examples:");
    for (const ex of spec.examples) lines.push(`  ${ex}`);
  }
  return lines.join("\n");
}
