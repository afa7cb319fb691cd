// An agent's config file (ports.json, overlay.json, netpol.json: what install renders for `ports run`,
// `overlay run` and `netpol run`): read as JSON, each fault refused in one line with the fix (exit 3).
import { promises as fsp } from "node:fs";
import { ExitCode, UserError } from "../errors";

/** The file's JSON, not yet checked field by field (see refuseBadFields). */
export async function readConfigFile<T>(file: string, what: string, fix: string): Promise<Partial<T>> {
  const text = await fsp.readFile(file, "utf8").catch((e: NodeJS.ErrnoException) => {
    throw new UserError(`cannot read the ${what} config ${file}: ${e.code ?? e.message}`, { exitCode: ExitCode.Refused, fix });
  });
  try {
    return JSON.parse(text) as Partial<T>;
  } catch {
    throw new UserError(`the ${what} config ${file} is not JSON`, { exitCode: ExitCode.Refused, fix });
  }
}

/** Refuses the config when `bad` names fields it lacks or has wrong. */
export function refuseBadFields(file: string, what: string, bad: readonly string[], fix: string): void {
  if (bad.length)
    throw new UserError(`the ${what} config ${file} lacks or has a bad ${bad.join(", ")}`, { exitCode: ExitCode.Refused, fix });
}
