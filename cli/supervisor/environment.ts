// The services' environment, read as systemd reads EnvironmentFile= (systemd.exec(5)): KEY=VALUE
// lines, `#` and `;` comments, values in double quotes (with \-escapes) or single quotes; and the
// words of a command line, where `$NAME` expands to the variable's words as systemd splits them
// (unset or empty: no word). Read again at every start, so env.local takes effect as under systemd.
import { promises as fsp } from "node:fs";
import { UserError } from "../errors";
import type { Word } from "../render/services";

export function parseEnvironmentFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) continue;
    out[m[1]!] = unquote(m[2]!);
  }
  return out;
}

function unquote(v: string): string {
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) return v.slice(1, -1).replace(/\\(["\\$`])/g, "$1");
  if (v.length >= 2 && v.startsWith("'") && v.endsWith("'")) return v.slice(1, -1);
  return v;
}

/** The variables of every file in order (a later file wins); a missing optional file is skipped. */
export async function readEnvironment(files: readonly { path: string; optional: boolean }[]): Promise<Record<string, string>> {
  let env: Record<string, string> = {};
  for (const f of files) {
    const text = await fsp.readFile(f.path, "utf8").catch((e: NodeJS.ErrnoException) => {
      if (f.optional && e.code === "ENOENT") return null;
      throw new UserError(`cannot read the environment file ${f.path}: ${e.code ?? e.message}`, {
        fix: "re-run `rootless-k8s install` to write it again",
      });
    });
    if (text !== null) env = { ...env, ...parseEnvironmentFile(text) };
  }
  return env;
}

/** A command line's words with each `$NAME` replaced by the variable's words. */
export function expandWords(words: readonly Word[], env: Readonly<Record<string, string | undefined>>): string[] {
  return words.flatMap((w) => (typeof w === "string" ? [w] : (env[w.variable] ?? "").split(/\s+/).filter(Boolean)));
}
